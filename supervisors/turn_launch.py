"""Turning a ``chat.send`` into a running turn: the ticket, the scheduler, the ``turns`` supervisor.

The agent hub's TurnScheduler (:mod:`actors.agent.turn_scheduler`) decides when a turn may run; the
:class:`TurnLauncher` builds it and is what it calls back:

- **chat_send** checks the session, answers a resent v2 ``turnId`` with its stored end
  (:func:`actors.agent.end_delivery.replay_outcome`), and submits a ticket (``chat.queued`` if it
  waits);
- **launch** starts the turn as a temporary task child of the ``turns`` supervisor
  (:func:`actors.agent.turn.run_turn`, which sends the turn's one end);
- **end_queued** ends a turn that never started (cancelled, or its connection lost);
- **notify_queued** tells the panel the turn's new place in the queue.

One instance per daemon, owned by the hub (:class:`supervisors.agent.AgentHub`), which keeps the
scheduler and the ``turns`` supervisor in its own tree.
"""

from __future__ import annotations

import asyncio
import collections
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from actors.agent.agent_config import AgentSettings
from actors.agent.end_delivery import replay_outcome
from actors.agent.session_router import RouteTable
from actors.agent.turn import TurnHost, TurnRequest, run_turn
from actors.agent.turn_scheduler import (
    CancelReason,
    Queued,
    Refused,
    SubmitTurn,
    TurnScheduler,
    TurnTicket,
)
from actors.runtime.errors import ActorError
from messages.errors import ErrorCode
from messages.wire_inbound import ChatSend
from messages.wire_outbound import ChatDone, ChatQueued, EventActivity
from supervisors.children import ChildSpec, TaskChild
from supervisors.policy import RestartType, Strategy
from supervisors.supervisor import Supervisor

if TYPE_CHECKING:
    from actors.agent.connection import Connection

__all__ = ["TurnLauncher"]


class TurnLauncher:
    def __init__(
        self,
        *,
        host: TurnHost,
        table: RouteTable,
        connections: dict[int, Connection],
        settings: Callable[[], AgentSettings],
        submit: Callable[[SubmitTurn], Awaitable[Any]],
    ) -> None:
        self._host = host  # what each turn runs against (the hub)
        self._table = table
        self._connections = connections
        self._settings = settings
        self._submit = submit  # asks the running scheduler once, never again after a crash
        self.scheduler: TurnScheduler | None = None
        self.turns: Supervisor | None = None
        self._texts: dict[str, TurnRequest] = {}
        # Turns ended while still queued (recent ones): a failed submit must not end them twice.
        self._ended_queued: collections.deque[str] = collections.deque(maxlen=1024)

    def new_scheduler(self) -> TurnScheduler:
        limit = self._settings().turn_concurrency
        self.scheduler = TurnScheduler(
            launch=self._launch,
            end_queued=self._end_queued,
            notify_queued=self._notify_queued,
            limit=limit,
            same_session=self._settings().same_session,
        )
        return self.scheduler

    async def new_turns_supervisor(self) -> Supervisor:
        turns = Supervisor("turns", [], strategy=Strategy.ONE_FOR_ONE)
        self.turns = turns
        return await turns.start()

    def is_running(self, session_id: str) -> bool:
        """Has *session_id* a turn running or waiting?"""
        return self.scheduler is not None and any(
            t.session_id == session_id
            for t in self.scheduler.queue.running() + self.scheduler.queue.waiting()
        )

    def cancel_reason(self, turn_id: str) -> CancelReason | None:
        if self.scheduler is None:
            return None
        return self.scheduler.cancel_reasons.get(turn_id)

    async def chat_send(self, conn: Connection, send: ChatSend) -> None:
        sid = send.session_id
        entry = self._table.lookup(sid)
        if entry is None or entry.link.link_id != conn.info.link_id:
            await conn.end_turn_with_error(
                sid,
                ErrorCode.UNKNOWN_SESSION,
                f"session {sid} is not registered on this connection",
            )
            return
        turn_id = send.turn_id or f"t-{secrets.token_hex(8)}"
        if send.turn_id:
            stored = self._host.store.chat(entry.scope, sid).find_turn(send.turn_id)
            if stored is not None and stored.ended:
                await replay_outcome(conn, sid, stored)
                return
            if stored is not None or send.turn_id in self._texts:
                return  # the same turn is still in flight: its one end will come
            if self.scheduler is not None and any(
                t.turn_id == send.turn_id for t in self.scheduler.queue.running()
            ):
                return
        ticket = TurnTicket(
            turn_id=turn_id, session_id=sid, link_id=conn.info.link_id, protocol=conn.info.protocol
        )
        self._texts[turn_id] = TurnRequest(ticket=ticket, text=send.text, scope=entry.scope)
        try:
            # Never re-submitted: a submit that met a crash may already have been queued (and
            # ended by the crashed scheduler), so it is ended here only if nobody ended it.
            decision = await self._submit(SubmitTurn(ticket=ticket))
        except (ActorError, LookupError, TimeoutError):
            self._texts.pop(turn_id, None)
            if turn_id not in self._ended_queued:
                await conn.end_turn_with_error(
                    sid,
                    ErrorCode.INTERNAL,
                    "The host could not start this turn; try again.",
                    send.turn_id,
                )
            return
        if isinstance(decision, Refused):
            self._texts.pop(turn_id, None)
            await conn.end_turn_with_error(
                sid, decision.code, "This chat already has a turn in progress.", send.turn_id
            )
        elif isinstance(decision, Queued) and conn.info.protocol >= 2:
            await conn.send(ChatQueued(session_id=sid, turn_id=turn_id, position=decision.position))

    async def _launch(self, ticket: TurnTicket) -> asyncio.Task[None]:
        """Start a turn as a temporary task child of the turns supervisor."""
        req = self._texts.pop(ticket.turn_id)
        assert self.turns is not None
        child = await self.turns.start_child(
            ChildSpec(
                f"turn:{ticket.turn_id}",
                task=lambda: run_turn(self._host, req),
                restart=RestartType.TEMPORARY,
                shutdown_timeout=5.0,
            )
        )
        assert isinstance(child, TaskChild)
        task: asyncio.Task[None] = child.task  # type: ignore[assignment]
        return task

    async def _end_queued(self, ticket: TurnTicket, code: ErrorCode) -> None:
        self._texts.pop(ticket.turn_id, None)
        self._ended_queued.append(ticket.turn_id)
        conn = self._connections.get(ticket.link_id)
        if conn is None:
            return
        if code is ErrorCode.CANCELLED and conn.info.protocol >= 2:
            await conn.end_turn_with_error(
                ticket.session_id, code, "Cancelled before it started.", ticket.turn_id
            )
        elif code is ErrorCode.CANCELLED:
            # v1: a cancel shows as a quiet end, not a failure.
            await conn.send(ChatDone(session_id=ticket.session_id, text=""))
            await conn.send(EventActivity(session_id=ticket.session_id, event="status.idle"))
        else:
            await conn.end_turn_with_error(
                ticket.session_id, code, "The connection was lost.", ticket.turn_id
            )

    async def _notify_queued(self, ticket: TurnTicket, position: int) -> None:
        await self._host.emit(
            ticket.session_id,
            ChatQueued(session_id=ticket.session_id, turn_id=ticket.turn_id, position=position),
        )
