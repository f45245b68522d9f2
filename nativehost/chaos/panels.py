"""The panels of ``browy chaos``'s fake extension: what each panel sent and saw end.

:class:`Recorder` is shared by every peer of a run (in-process
:class:`nativehost.chaos.peer.ChaosPeer` and process-mode
:class:`nativehost.chaos.relay_peer.ProcessPeer`); :func:`to_panels` does what the extension's
panels do with a host message. The invariants (:mod:`nativehost.chaos.checks`) are checked over
its records; the harness is described in :mod:`nativehost.chaos.harness`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PanelSide", "Recorder", "TurnRecord", "to_panels"]


@dataclass(slots=True)
class TurnRecord:
    """One ``chat.send`` as the panel saw it."""

    session_id: str
    turn_id: str
    number: int
    sent_at: float
    ended_at: float | None = None
    end_type: str | None = None
    code: str | None = None
    ends: int = 0


class Recorder:
    """What the panels saw, shared by every peer of a run.

    It keeps a few small fields per turn (a one-hour soak runs ~100k turns in the same process as
    the daemon it measures for flat memory): the end, and each tool call's outcome. Words that
    repeat (end types, codes, outcomes) are interned and a turn's id is kept once, so a turn
    costs about as much as its record.
    """

    def __init__(self) -> None:
        self.ended_turn_ids: set[str] = set()
        self.second_ends_dropped = 0
        self.turns: list[TurnRecord] = []
        self.open: dict[str, TurnRecord] = {}
        self.extra_ends: list[tuple[str, str, float]] = []
        self.tool_outcomes: dict[str, str] = {}  # callId -> outcome shown in the panel
        self._waiting: dict[str, asyncio.Event] = {}  # turnId -> set at its first end

    def sent(self, session_id: str, turn_id: str, number: int) -> TurnRecord:
        rec = TurnRecord(session_id, turn_id, number, time.monotonic())
        self.turns.append(rec)
        self.open[session_id] = rec
        self._waiting[turn_id] = asyncio.Event()
        return rec

    async def wait_end(self, rec: TurnRecord, deadline: float) -> bool:
        """Wait up to *deadline* seconds for *rec*'s first end; False if none came."""
        event = self._waiting.get(rec.turn_id)
        if event is not None:
            try:
                async with asyncio.timeout(deadline):
                    await event.wait()
            except TimeoutError:
                pass
            finally:
                self._waiting.pop(rec.turn_id, None)
        return rec.ends > 0

    def tool_result(self, msg: dict[str, Any]) -> None:
        outcome = msg.get("outcome")
        if isinstance(outcome, str):
            self.tool_outcomes[str(msg.get("callId"))] = sys.intern(outcome)

    def ended(
        self, session_id: str, end_type: str, code: str | None, turn_id: str | None = None
    ) -> None:
        # The extension's worker drops a second end of a turn it already saw end (v2 ends carry
        # the turnId; extension/lib/background.js isSecondEnd): so does this stand-in.
        end_type, code = sys.intern(end_type), None if code is None else sys.intern(code)
        if turn_id is not None:
            if turn_id in self.ended_turn_ids:
                self.second_ends_dropped += 1
                return
            current = self.open.get(session_id)
            if current is not None and current.turn_id == turn_id:
                turn_id = current.turn_id  # the record's own string: the id is kept once
            self.ended_turn_ids.add(turn_id)
            if current is not None and current.turn_id != turn_id:
                # An end for another turn than the one open: never let it close this one.
                self.extra_ends.append((session_id, end_type, time.monotonic()))
                return
        rec = self.open.pop(session_id, None)
        if rec is None:
            self.extra_ends.append((session_id, end_type, time.monotonic()))
            return
        rec.ends += 1
        rec.end_type = end_type
        rec.code = code
        rec.ended_at = time.monotonic()
        event = self._waiting.get(rec.turn_id)
        if event is not None:
            event.set()


def to_panels(
    msg: dict[str, Any],
    recorder: Recorder,
    ready: Mapping[str, asyncio.Event],
    send: Callable[[dict[str, Any]], object],
) -> None:
    """Do what the extension's panels do with a host message (a peer handles browser calls and
    its port's own messages itself, and passes the rest here); other messages are ignored.

    Tool results and the ends of a known session (one in *ready*) are recorded, a known
    session's ``session.ready`` sets its event, approvals are allowed and questions cancelled
    through *send* (what the extension sends: the peer's way to the daemon).
    """
    kind = msg.get("type")
    sid: Any = msg.get("sessionId")
    if kind in ("chat.done", "chat.error") and sid in ready:
        turn = msg.get("turnId")
        recorder.ended(sid, kind, msg.get("code"), turn if isinstance(turn, str) else None)
    elif kind == "chat.tool_result":
        recorder.tool_result(msg)
    elif kind == "session.ready" and sid in ready:
        ready[sid].set()
    elif kind == "approval.request":
        # The panel allows guarded actions (the harness tests the host, not the user).
        send(
            {
                "type": "approval.response",
                "sessionId": sid,
                "approvalId": msg.get("approvalId"),
                "decision": "allow",
            }
        )
    elif kind == "user.ask":
        send(
            {"type": "user.answer", "sessionId": sid, "askId": msg.get("askId"), "cancelled": True}
        )


class PanelSide:
    """What both fake extensions (in-process and process mode) do as the panels: wait for a
    session's ``session.ready``, send a ``chat.send`` and record it, own their background tasks.
    A subclass sets ``recorder``, ``ready`` and ``_tasks`` and says how a message goes out."""

    recorder: Recorder
    ready: dict[str, asyncio.Event]
    _tasks: set[asyncio.Task[None]]

    def _post(self, msg: dict[str, Any]) -> None:
        raise NotImplementedError

    async def wait_ready(self, session_id: str, timeout: float) -> bool:
        try:
            async with asyncio.timeout(timeout):
                await self.ready[session_id].wait()
        except TimeoutError:
            return False
        return True

    def send_chat(self, session_id: str, number: int, text: str) -> TurnRecord:
        turn_id = f"{session_id}-t{number:04d}"
        rec = self.recorder.sent(session_id, turn_id, number)
        self._post({"type": "chat.send", "sessionId": session_id, "text": text, "turnId": turn_id})
        return rec

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
