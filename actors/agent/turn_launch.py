"""Turning a ``chat.send`` into a running turn: the ticket, the scheduler, the ``turns`` supervisor.

The TurnScheduler (:mod:`actors.agent.turn_scheduler`) decides when a turn may run; the
:class:`TurnLauncher` builds the ticket and is what the scheduler calls back:

- **chat_send** checks the session, answers a resent v2 ``turnId`` with its stored end
  (:func:`actors.agent.end_delivery.replay_outcome`), and submits a ticket (``chat.queued`` if it
  waits); **chat_cancel** asks the scheduler to stop the session's turn;
- **launch** starts the turn as a temporary task child of the ``turns`` supervisor
  (:func:`actors.agent.turn.run_turn`, which sends the turn's one end) — through ``start_turn``,
  handed in at construction by whoever builds the tree (:mod:`supervisors.trees`);
- **end_queued** ends a turn that never started (cancelled, or its connection lost);
- **notify_queued** tells the panel the turn's new place in the queue.

One instance per daemon (:func:`actors.agent.agent.build_agent`).
"""

from __future__ import annotations

import asyncio
import collections
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from actors.agent.agent_config import AgentSettings
from actors.agent.end_delivery import replay_outcome
from actors.agent.links import LinkHandle, Links, Outbox
from actors.agent.route_table import RouteTable
from actors.agent.turn import run_turn
from actors.agent.turn_parts import ToolRequest, TurnDeps, TurnRequest
from actors.agent.turn_queue import CancelReason, Queued, Refused, TurnTicket
from actors.agent.turn_scheduler import (
    CancelTurns,
    SchedulerMsg,
    SubmitTurn,
    TurnBoard,
    TurnScheduler,
)
from actors.runtime.errors import ActorError
from actors.runtime.live_ref import LiveRef
from actors.store.chat_store import ChatStore
from messages.errors import ErrorCode
from messages.wire_inbound import ChatSend, ToolCall
from messages.wire_outbound import ChatDone, ChatQueued, ChatReplaced, EventActivity

#: Starts ``run`` as a temporary task child named ``name``; returns its task.
StartTurn = Callable[
    [str, Callable[[], Coroutine[Any, Any, None]]], Awaitable["asyncio.Task[None]"]
]
#: How long a submit waits for the scheduler's decision.
SUBMIT_TIMEOUT_S = 5.0

__all__ = ["StartTurn", "TurnLauncher"]


class TurnLauncher:
    def __init__(
        self,
        *,
        table: RouteTable,
        links: Links,
        outbox: Outbox,
        store: ChatStore,
        board: TurnBoard,
        scheduler: LiveRef[SchedulerMsg],
        settings: Callable[[], AgentSettings],
        start_turn: StartTurn,
        deps: Callable[[], TurnDeps],
    ) -> None:
        self._table = table
        self._links = links
        self._outbox = outbox
        self._store = store
        self._board = board
        self._scheduler = scheduler
        self._settings = settings
        self._start_turn = start_turn
        self._deps = deps  # what each turn runs with (built once the agent is)
        self._texts: dict[str, TurnRequest] = {}
        # Turns ended while still queued (recent ones): a failed submit must not end them twice.
        self._ended_queued: collections.deque[str] = collections.deque(maxlen=1024)

    def new_scheduler(self) -> TurnScheduler:
        """A TurnScheduler incarnation (the tree's factory for ``turn-scheduler``)."""
        settings = self._settings()
        return TurnScheduler(
            board=self._board,
            launch=self._launch,
            end_queued=self._end_queued,
            notify_queued=self._notify_queued,
            limit=settings.turn_concurrency,
            same_session=settings.same_session,
        )

    async def chat_send(self, conn: LinkHandle, send: ChatSend) -> None:
        replaces = send.replaces if conn.info.protocol >= 2 else None
        await self._submit(conn, send.session_id, send.turn_id, send.text, None, replaces)

    async def tool_call(self, conn: LinkHandle, call: ToolCall) -> None:
        """``tool.call`` (a local client): one tool, as a turn without the model."""
        await self._submit(
            conn,
            call.session_id,
            call.turn_id,
            f"{call.tool} (tool call)",
            ToolRequest(name=call.tool, args=dict(call.args)),
        )

    async def _submit(
        self,
        conn: LinkHandle,
        sid: str,
        client_turn_id: str | None,
        text: str,
        tool: ToolRequest | None,
        replaces: str | None = None,
    ) -> None:
        entry = self._table.lookup(sid)
        if entry is None or entry.link.link_id != conn.info.link_id:
            await conn.writer.end_turn_with_error(
                sid,
                ErrorCode.UNKNOWN_SESSION,
                f"session {sid} is not registered on this connection",
            )
            return
        turn_id = client_turn_id or f"t-{secrets.token_hex(8)}"
        if client_turn_id:
            stored = self._store.chat(entry.scope, sid).find_turn(client_turn_id)
            if stored is not None and stored.ended:
                await replay_outcome(conn, sid, stored)
                return
            if stored is not None or client_turn_id in self._texts:
                return  # the same turn is still in flight: its one end will come
            if self._board.in_flight(client_turn_id):
                return
        if replaces is not None and not await self._replace(conn, entry.scope, sid, replaces):
            await conn.writer.end_turn_with_error(
                sid,
                ErrorCode.INVALID_MESSAGE,
                "Only the chat's last answer, once it has ended, can be regenerated or edited.",
                client_turn_id,
            )
            return
        ticket = TurnTicket(
            turn_id=turn_id, session_id=sid, link_id=conn.info.link_id, protocol=conn.info.protocol
        )
        self._texts[turn_id] = TurnRequest(ticket=ticket, text=text, scope=entry.scope, tool=tool)
        try:
            # Never re-submitted: a submit that met a crash may already have been queued (and
            # ended by the crashed scheduler), so it is ended here only if nobody ended it.
            decision = await self._scheduler.ask(
                SubmitTurn(ticket=ticket), timeout=SUBMIT_TIMEOUT_S
            )
        except (ActorError, LookupError, TimeoutError):
            self._texts.pop(turn_id, None)
            if turn_id not in self._ended_queued:
                await conn.writer.end_turn_with_error(
                    sid,
                    ErrorCode.INTERNAL,
                    "The host could not start this turn; try again.",
                    client_turn_id,
                )
            return
        if isinstance(decision, Refused):
            self._texts.pop(turn_id, None)
            await conn.writer.end_turn_with_error(
                sid, decision.code, "This chat already has a turn in progress.", client_turn_id
            )
        elif isinstance(decision, Queued) and conn.info.protocol >= 2:
            await conn.send(ChatQueued(session_id=sid, turn_id=turn_id, position=decision.position))

    async def _replace(self, conn: LinkHandle, scope: str, sid: str, turn_id: str) -> bool:
        """Regenerate or edit: drop the chat's last turn from its history and the model's
        context, and tell the panel whether that turn had changed a page (it is not undone:
        nothing is ever replayed or reversed on a page)."""
        dropped = self._store.chat(scope, sid).drop_turn(turn_id)
        if dropped is None:
            return False
        await conn.send(
            ChatReplaced(session_id=sid, turn_id=turn_id, page_changed=dropped.changed_the_page)
        )
        return True

    async def chat_cancel(self, conn: LinkHandle, session_id: str, turn_id: str | None) -> None:
        entry = self._table.lookup(session_id)
        if entry is None or entry.link.link_id != conn.link_id:
            return
        await self._scheduler.tell_again(
            CancelTurns(session_id=session_id, turn_id=turn_id, reason=CancelReason.USER)
        )

    async def _launch(self, ticket: TurnTicket) -> asyncio.Task[None]:
        """Start a turn as a temporary task child of the turns supervisor."""
        req = self._texts.pop(ticket.turn_id)
        deps = self._deps()
        return await self._start_turn(f"turn:{ticket.turn_id}", lambda: run_turn(deps, req))

    async def _end_queued(self, ticket: TurnTicket, code: ErrorCode) -> None:
        self._texts.pop(ticket.turn_id, None)
        self._ended_queued.append(ticket.turn_id)
        conn = self._links.get(ticket.link_id)
        if conn is None:
            return
        if code is ErrorCode.CANCELLED and conn.info.protocol >= 2:
            await conn.writer.end_turn_with_error(
                ticket.session_id, code, "Cancelled before it started.", ticket.turn_id
            )
        elif code is ErrorCode.CANCELLED:
            # v1: a cancel shows as a quiet end, not a failure.
            await conn.send(ChatDone(session_id=ticket.session_id, text=""))
            await conn.send(EventActivity(session_id=ticket.session_id, event="status.idle"))
        else:
            await conn.writer.end_turn_with_error(
                ticket.session_id, code, "The connection was lost.", ticket.turn_id
            )

    async def _notify_queued(self, ticket: TurnTicket, position: int) -> None:
        await self._outbox.emit(
            ticket.session_id,
            ChatQueued(session_id=ticket.session_id, turn_id=ticket.turn_id, position=position),
        )
