"""Exactly one end per turn, across link drops and daemon restarts (protocol.md sections 3b, 6).

A turn sends its own end (:mod:`actors.agent.turn`); this is what the agent does when that end
cannot simply go out on the turn's connection:

- **lost_end**: the turn's connection went. The relay that survived the drop may have ended the
  turn itself (``turns_ended``); otherwise the end goes to the session's new connection, or waits.
- **undelivered_end** keeps an end that found no panel, for when the session registers again.
- **settle_cut_turn**: a session (re-)registered. It gets the end kept for it, an end an earlier
  daemon journaled but never delivered, and the definite end of a turn the journal shows cut by
  a crash — unless the relay already ended it (``turns_ended``, or the mark a relay that died
  left on disk: :mod:`actors.relay.relay_marks`).
- **replay_outcome**: a v2 ``chat.send`` sent again with the same ``turnId`` gets the stored end,
  never a second turn.

One instance per daemon (:func:`actors.agent.agent.build_agent`).
"""

from __future__ import annotations

from typing import Literal

from actors.agent.links import LinkHandle, Links
from actors.agent.route_table import RegisterResult, RouteTable
from actors.agent.turn_queue import TurnTicket
from actors.agent.turn_scheduler import TurnBoard
from actors.relay.relay_marks import RelayMarks
from actors.store.chat_store import ChatStore
from actors.store.chat_turns import TurnOutcome
from messages.errors import ErrorCode, v1_chat_error_code
from messages.wire_base import OutboundModel
from messages.wire_outbound import ChatDone, ChatError, ChatToolResult, EventActivity

__all__ = ["EndDelivery", "replay_outcome"]


class EndDelivery:
    """The ends that could not be delivered yet, and the sessions whose cut turn the relay ended."""

    def __init__(
        self,
        *,
        table: RouteTable,
        links: Links,
        store: ChatStore,
        relay_marks: RelayMarks,
        board: TurnBoard,
    ) -> None:
        self._table = table
        self._links = links
        self._store = store
        self._relay_marks = relay_marks
        self._is_running = board.is_running  # has the session a turn running or waiting?
        self.ended_by_relay: set[str] = set()
        self.undelivered: dict[str, tuple[str, list[OutboundModel]]] = {}

    async def lost_end(self, ticket: TurnTicket, end: list[OutboundModel]) -> bool:
        """The end of a turn whose connection was lost (protocol.md section 6).

        The relay that survived the drop ended the turn itself and said so (``turns_ended``):
        then nothing more is sent. If the session is already back on another connection that
        did not see the turn (a new relay after a service-worker restart), it gets the end now;
        if it is registered nowhere yet, the end waits for its ``session.start``.
        Returns True when the panel has had (or, through the relay, has) the end.
        """
        sid = ticket.session_id
        if sid in self.ended_by_relay:
            # The relay ended the turn: never a second end, but the panel still learns what
            # became of an interrupted tool call (its card would otherwise stay pending).
            self.ended_by_relay.discard(sid)
            end = [m for m in end if isinstance(m, ChatToolResult)]
            if not end:
                return True
        entry = self._table.lookup(sid)
        conn = self._links.get(entry.link.link_id) if entry is not None else None
        if conn is not None and conn.info.link_id != ticket.link_id:
            for msg in end:
                await conn.send(_for_protocol(msg, conn.info.protocol))
            return True
        self.undelivered_end(sid, end, ticket.turn_id)
        return False

    def undelivered_end(self, session_id: str, end: list[OutboundModel], turn_id: str) -> None:
        """A turn's end could not reach its panel: send it when the session registers again."""
        self.undelivered[session_id] = (turn_id, end)

    def turns_ended_by_relay(self, sessions: list[str]) -> None:
        self.ended_by_relay.update(sessions)
        self._relay_marks.discard(sessions)  # said after all: the marks on disk are spent

    async def settle_cut_turn(self, conn: LinkHandle, result: RegisterResult) -> None:
        """A session (re-)registered: give it the definite end of any turn it has not seen end.

        Two sources: an end this daemon kept because it found no panel (``undelivered``), and
        a turn the journal shows cut by a crash of an earlier daemon (``cut_turn``). If the relay
        already ended that turn (``turns_ended``), only interrupted tool results are sent, never
        a second end. The relay's mark is for one turn: it is used here, or kept for the turn of
        this session that is still winding down, and otherwise dropped so it cannot swallow the
        end of a later turn.
        """
        sid = entry_sid = result.entry.session_id
        if self._relay_marks.take(sid):
            # A relay ended this session's cut turn, then died before it could tell a daemon.
            self.ended_by_relay.add(sid)
        marked = sid in self.ended_by_relay
        used = False
        chat = self._store.chat(result.entry.scope, entry_sid)
        kept = self.undelivered.pop(sid, None)
        if kept is not None:
            turn_id, undelivered = kept
            if marked:
                used = True
                undelivered = [m for m in undelivered if isinstance(m, ChatToolResult)]
            for msg in undelivered:
                await conn.send(_for_protocol(msg, conn.info.protocol))
            chat.mark_delivered(turn_id)
        elif not self._is_running(sid):
            # An end a previous daemon journaled but died before it reached the panel.
            pending = chat.undelivered_end()
            if pending is not None:
                if marked:
                    used = True
                else:
                    for msg in _end_of(pending, sid, conn.info.protocol):
                        await conn.send(msg)
                chat.mark_delivered(pending.turn_id)
        cut = chat.cut_turn()  # never a turn this daemon started: those end themselves
        if cut is not None:
            message = "This turn was interrupted (the connection or the daemon went away)."
            v2 = conn.info.protocol >= 2
            for call in cut.pending_calls:
                # Sent, never answered before the crash: unknown, never sent again (section 5).
                outcome: Literal["unknown", "error"] = "unknown" if call.page_changing else "error"
                await conn.send(
                    ChatToolResult(
                        session_id=sid,
                        call_id=call.call_id,
                        ok=False,
                        summary="interrupted: outcome unknown — not repeated",
                        outcome=outcome if v2 else None,
                    )
                )
            chat.mark_ended(cut.turn_id, "interrupted", ErrorCode.CONNECTION_LOST.value, message)
            if marked and not used:
                used = True
            else:
                code = ErrorCode.CONNECTION_LOST
                wire = code if v2 else v1_chat_error_code(code)
                await conn.send(
                    ChatError(
                        session_id=sid,
                        message=message,
                        code=wire,
                        turn_id=cut.turn_id if v2 else None,
                    )
                )
                await conn.send(EventActivity(session_id=sid, event="status.error"))
            chat.mark_delivered(cut.turn_id)
        if marked and (used or not self._is_running(sid)):
            self.ended_by_relay.discard(sid)


async def replay_outcome(conn: LinkHandle, sid: str, stored: TurnOutcome) -> None:
    """A resent v2 turnId: answer with the stored outcome instead of a second turn."""
    if stored.outcome in ("done", "cancelled"):
        await conn.send(ChatDone(session_id=sid, text=stored.text or "", turn_id=stored.turn_id))
        await conn.send(EventActivity(session_id=sid, event="status.idle"))
        return
    try:
        code = ErrorCode(stored.code or ErrorCode.INTERNAL.value)
    except ValueError:
        code = ErrorCode.INTERNAL
    await conn.writer.end_turn_with_error(
        sid, code, stored.message or "This turn already ended with an error.", stored.turn_id
    )


def _end_of(stored: TurnOutcome, session_id: str, protocol: int) -> list[OutboundModel]:
    """A journaled turn end as the panel gets it (section 3b: an end, then the status)."""
    turn_id = stored.turn_id if protocol >= 2 else None
    if stored.outcome in ("done", "cancelled"):
        return [
            ChatDone(session_id=session_id, text=stored.text, turn_id=turn_id),
            EventActivity(session_id=session_id, event="status.idle"),
        ]
    try:
        code = ErrorCode(stored.code or ErrorCode.INTERNAL.value)
    except ValueError:
        code = ErrorCode.INTERNAL
    message = stored.message or "This turn ended with an error."
    wire = code if protocol >= 2 else v1_chat_error_code(code)
    return [
        ChatError(session_id=session_id, message=message, code=wire, turn_id=turn_id),
        EventActivity(session_id=session_id, event="status.error"),
    ]


def _for_protocol(msg: OutboundModel, protocol: int) -> OutboundModel:
    """A stored turn end re-addressed to a connection of *protocol* (v1 gets the v1 word)."""
    if protocol < 2 and isinstance(msg, ChatDone | ChatError):
        msg = msg.model_copy(update={"turn_id": None})  # v2-only field
    if protocol < 2 and isinstance(msg, ChatError) and msg.code is not None:
        try:
            return msg.model_copy(update={"code": v1_chat_error_code(ErrorCode(msg.code))})
        except ValueError:
            return msg
    return msg
