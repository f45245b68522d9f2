"""TurnQueue: the scheduling rules of turns, pure (no asyncio), tested step by step.

The rules (protocol.md sections 3b and 4, architecture.md section 2):

- **One turn per session at a time.** A second ``chat.send`` on a session that has a turn
  running or waiting is refused with ``BUSY`` (v1 ``aborted``), or — v2, when the config says
  ``queue`` — waits behind it.
- **Across sessions: FIFO under a concurrency limit** (default 4; 1 gives "one turn at a time,
  others wait in line"). A waiting turn starts when a slot is free *and* its session has no turn
  running; it keeps its place otherwise.
- **Waiting for the user gives the slot up.** A turn blocked on an approval or ``ask_user``
  ``yield_slot``s; when answered it ``reclaim``s at once (it may run over the limit for a moment
  rather than make the user wait twice).
- **Cancel** removes a queued turn; a running one is reported for its task to be cancelled.
- **A connection drops:** its sessions' queued turns are dropped and their running turns reported.

The :class:`~actors.agent.turn_scheduler.TurnScheduler` actor applies the decisions.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from messages.errors import ErrorCode

__all__ = [
    "CancelReason",
    "Decision",
    "Queued",
    "Refused",
    "Start",
    "TurnQueue",
    "TurnTicket",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTicket:
    turn_id: str
    session_id: str
    link_id: int
    protocol: int = 1


@dataclass(frozen=True, slots=True)
class Start:
    ticket: TurnTicket


@dataclass(frozen=True, slots=True)
class Queued:
    ticket: TurnTicket
    position: int  # 1-based place in line


@dataclass(frozen=True, slots=True)
class Refused:
    ticket: TurnTicket
    code: ErrorCode


Decision = Start | Queued | Refused


class CancelReason(enum.Enum):
    USER = "user"  # chat.cancel / session.end: chat.done with the partial text
    CONNECTION_LOST = "connection_lost"
    SHUTDOWN = "shutdown"


class TurnQueue:
    """The pure queue. ``same_session``: ``"refuse"`` or ``"queue"`` (v2 only; v1 refuses)."""

    def __init__(self, limit: int = 4, *, same_session: str = "queue") -> None:
        if limit < 1:
            raise ValueError("the concurrency limit must be at least 1")
        self.limit = limit
        self.same_session = same_session
        self._waiting: list[TurnTicket] = []
        self._running: dict[str, TurnTicket] = {}
        self._yielded: set[str] = set()

    # -- queries ----------------------------------------------------------------------------------

    def running(self) -> list[TurnTicket]:
        return list(self._running.values())

    def waiting(self) -> list[TurnTicket]:
        return list(self._waiting)

    def positions(self) -> dict[str, int]:
        return {t.turn_id: i + 1 for i, t in enumerate(self._waiting)}

    def _busy_sessions(self) -> set[str]:
        return {t.session_id for t in self._running.values()}

    def _slots_used(self) -> int:
        return sum(1 for tid in self._running if tid not in self._yielded)

    # -- changes ----------------------------------------------------------------------------------

    def submit(self, ticket: TurnTicket) -> Decision:
        has_turn = ticket.session_id in self._busy_sessions() or any(
            t.session_id == ticket.session_id for t in self._waiting
        )
        if has_turn and (ticket.protocol < 2 or self.same_session != "queue"):
            return Refused(ticket, ErrorCode.BUSY)
        self._waiting.append(ticket)
        started = self._fill()
        if ticket in started:
            return Start(ticket)
        return Queued(ticket, self._waiting.index(ticket) + 1)

    def _fill(self) -> list[TurnTicket]:
        started: list[TurnTicket] = []
        busy = self._busy_sessions()
        i = 0
        while i < len(self._waiting) and self._slots_used() < self.limit:
            ticket = self._waiting[i]
            if ticket.session_id in busy:
                i += 1
                continue
            del self._waiting[i]
            self._running[ticket.turn_id] = ticket
            busy.add(ticket.session_id)
            started.append(ticket)
        return started

    def set_limit(self, limit: int) -> list[TurnTicket]:
        """Change the concurrency limit; returns the waiting turns that may start now."""
        self.limit = limit
        return self._fill()

    def finish(self, turn_id: str) -> list[TurnTicket]:
        """A running turn ended; returns the turns that start now."""
        self._running.pop(turn_id, None)
        self._yielded.discard(turn_id)
        return self._fill()

    def yield_slot(self, turn_id: str) -> list[TurnTicket]:
        if turn_id in self._running:
            self._yielded.add(turn_id)
        return self._fill()

    def reclaim(self, turn_id: str) -> None:
        self._yielded.discard(turn_id)

    def cancel(
        self, session_id: str, turn_id: str | None = None
    ) -> tuple[list[TurnTicket], list[TurnTicket]]:
        """Returns (queued turns removed, running turns to cancel) of *session_id*."""

        def matches(t: TurnTicket) -> bool:
            return t.session_id == session_id and (turn_id is None or t.turn_id == turn_id)

        removed = [t for t in self._waiting if matches(t)]
        self._waiting = [t for t in self._waiting if not matches(t)]
        running = [t for t in self._running.values() if matches(t)]
        return removed, running

    def drop_link(self, link_id: int) -> tuple[list[TurnTicket], list[TurnTicket]]:
        removed = [t for t in self._waiting if t.link_id == link_id]
        self._waiting = [t for t in self._waiting if t.link_id != link_id]
        running = [t for t in self._running.values() if t.link_id == link_id]
        return removed, running


# -- the actor ------------------------------------------------------------------------------------
