"""AgentHub: the daemon's agent side — sessions, turns, model, journal and tools, wired together.

Connections hand it what the extension sent (already parsed at the edge); it answers through the
session's *current* connection, looked up in the SessionRouter's table at every send, so output
never goes to a connection where the session is not registered (protocol.md section 3b).

It owns:

- the :class:`actors.session_router.SessionRouter` and :class:`actors.turn_scheduler.TurnScheduler`
  actors (the turn tasks are launched by the scheduler and end themselves: :mod:`actors.turn`);
- the model gateway (built lazily from config; a missing model is an ``AUTH`` problem reported in
  ``auth.status`` and in the turn's ``chat.error``, never in ``sdk.ready``);
- the chat store (journals) and the tool runner.

Cut turns: when a session registers whose journal shows a turn without an end (a link drop or a
daemon crash), the hub sends that turn's definite end (``chat.error`` + ``status.error``) unless
the relay already ended it (``turns_ended`` link control, or the mark a relay that died left on
disk: :mod:`actors.relay_marks`), and journals it as interrupted.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from actors.asking import UserAsking
from actors.browser_tools import (
    AskUserArgs,
    ToolResultView,
    ToolRunner,
    TurnBrowser,
)
from actors.model_gateway import ChatModel, ModelSettings
from actors.model_side import ModelSide
from actors.prompts import PromptBroker
from actors.relay_marks import RelayMarks
from actors.runtime import ActorError, Ref
from actors.session_router import (
    DropLink,
    LinkFacts,
    Register,
    RegisterOutcome,
    RegisterResult,
    RouteTable,
    SessionRouter,
    Unregister,
)
from actors.store import ChatStore, TurnOutcome
from actors.tools.registry import ApprovalMode, ApprovalRequestInfo
from actors.turn import TurnRequest, run_turn
from actors.turn_scheduler import (
    CancelReason,
    CancelTurns,
    DropLinkTurns,
    Queued,
    Reclaim,
    Refused,
    SubmitTurn,
    TurnEnded,
    TurnScheduler,
    TurnTicket,
    YieldSlot,
)
from messages.errors import ErrorCode, v1_chat_error_code
from messages.wire_inbound import ApprovalResponse, ChatSend, SessionStart, UserAnswer
from messages.wire_outbound import (
    AuthStatus,
    ChatDone,
    ChatError,
    ChatQueued,
    ChatToolResult,
    ControlRelease,
    ErrorMessage,
    EventActivity,
    ModelInfo,
    ModelsCurrent,
    ModelsList,
    OutboundModel,
    SdkReady,
    SessionReady,
)
from supervisors.policy import RestartIntensity, RestartType, Strategy
from supervisors.supervisor import ChildSpec, Supervisor, TaskChild

if TYPE_CHECKING:
    from actors.connection import Connection

__all__ = ["AgentHub", "AgentSettings", "HostServices"]

log = logging.getLogger(__name__)


class HostServices(Protocol):
    """What the options page reaches through the daemon (v2 ``config.*``, ``doctor.run``).

    Implemented by the process layer (:mod:`nativehost.settings`), which knows the config file;
    ``set`` raises ``ValueError`` with a message naming the field and writes nothing then.
    """

    def get(self) -> tuple[dict[str, Any], dict[str, Any]]: ...

    def set(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]: ...

    async def doctor(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    home: Path
    model: ModelSettings | None
    turn_concurrency: int = 4
    same_session: str = "queue"
    max_iterations: int = 25
    allow_host_code: bool = False
    approval_mode: str = "page-changing"
    v1_approval_mode: str = "never"
    approval_timeout_s: float = 300.0
    #: May local clients (``browy run``/``chat``, MCP) drive a connected browser? (section 6)
    allow_local_clients: bool = False
    #: Tools the host's config disables for every session (on top of the panels' toggles).
    disabled_tools: frozenset[str] = frozenset()
    version: str = "0.1.0"


class AgentHub:
    def __init__(
        self,
        settings: AgentSettings,
        *,
        store: ChatStore | None = None,
        services: HostServices | None = None,
        reload_settings: Callable[[], AgentSettings] | None = None,
    ) -> None:
        self.settings = settings
        self.services = services
        self._reload_settings = reload_settings
        self.store = store or ChatStore(settings.home / "sessions")
        self.max_iterations = settings.max_iterations
        self.connections: dict[int, Connection] = {}
        self._table = RouteTable()
        self._scheduler_actor: TurnScheduler | None = None
        self._sup: Supervisor | None = None
        self._turns: Supervisor | None = None
        self._turn_tasks: set[asyncio.Task[None]] = set()
        self._texts: dict[str, TurnRequest] = {}
        self.models = ModelSide(settings.model, own=self._own)
        self._ended_by_relay: set[str] = set()
        # The same word, left on disk by a relay that may have died before it could say it.
        self.relay_marks = RelayMarks.for_home(settings.home)
        self._undelivered: dict[str, tuple[str, list[OutboundModel]]] = {}
        # Turns ended while still queued (recent ones): a failed submit must not end them twice.
        self._ended_queued: collections.deque[str] = collections.deque(maxlen=1024)
        self.tools = ToolRunner(
            home=settings.home,
            allow_host_code=settings.allow_host_code,
            approval_mode=_mode(settings.approval_mode),
            v1_approval_mode=_mode(settings.v1_approval_mode),
        )
        self.prompts = PromptBroker(settings.home / "data" / "approvals.json")
        self.asking = UserAsking(
            prompts=self.prompts,
            tools=self.tools,
            table=self._table,
            connections=self.connections,
            emit=self.emit,
            yield_slot=lambda t: self._tell("turn-scheduler", YieldSlot(turn_id=t.turn_id)),
            reclaim=lambda t: self._tell("turn-scheduler", Reclaim(turn_id=t.turn_id)),
            timeout_s=lambda: self.settings.approval_timeout_s,
        )
        # One lock per (link, tab) while someone holds it: weak values, so the locks of closed
        # tabs and gone links do not pile up in a long-running daemon.
        self._tab_locks: weakref.WeakValueDictionary[tuple[int, int], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the agent's supervision tree (one_for_one): the SessionRouter, the
        TurnScheduler, and — added as they start — each turn as a temporary task child."""
        self._sup = Supervisor(
            "agent",
            [
                ChildSpec("session-router", start=lambda: SessionRouter(self._table)),
                ChildSpec("turn-scheduler", start=self._new_scheduler),
                # The turns' own supervisor: started last, so stopped first (every turn ends
                # while the router and the scheduler still run). A separate control task, so
                # the scheduler launching a turn never waits on the supervisor that may be
                # stopping the scheduler itself (a deadlock with one supervisor for both).
                ChildSpec("turns", start=self._new_turns_supervisor),
            ],
            strategy=Strategy.ONE_FOR_ONE,
            intensity=RestartIntensity(5, 10.0),
        )
        await self._sup.start()
        self.models.open()
        self._own(self._check_auth(), "auth-check")

    def _own(self, coro: Any, name: str) -> None:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._turn_tasks.add(task)  # owned: cancelled and awaited on stop
        task.add_done_callback(self._turn_tasks.discard)

    async def _check_auth(self) -> None:
        """Ask the provider once at start; broadcast the answer (``auth.status`` is a broadcast)."""
        try:
            status = await self.refresh_auth()
        except Exception:  # reported as unknown, never raised into the daemon
            log.exception("the provider check failed")
            return
        for conn in list(self.connections.values()):
            if conn.info.role == "relay" or self.table.sessions_of(conn.info.link_id):
                await conn.send(status)

    def apply_settings(self, settings: AgentSettings) -> None:
        """The config changed (options page): new turns use the new model and policies."""
        self.settings = settings
        self.tools.approval_mode = _mode(settings.approval_mode)
        self.tools.v1_approval_mode = _mode(settings.v1_approval_mode)
        self.tools.allow_host_code = settings.allow_host_code
        if self._scheduler_actor is not None:
            self._scheduler_actor.queue.limit = settings.turn_concurrency
        if self.models.reconfigure(settings.model):
            self._own(self._check_auth(), "auth-check")

    async def config_get(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if self.services is None:
            return {}, {}
        return self.services.get()

    async def config_set(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Validate and save (raises ValueError naming the field), then apply."""
        if self.services is None:
            raise ValueError("this host has no settings")
        result = self.services.set(values)
        if self._reload_settings is not None:
            self.apply_settings(self._reload_settings())
        return result

    async def doctor(self) -> list[dict[str, Any]]:
        return await self.services.doctor() if self.services is not None else []

    def _new_scheduler(self) -> TurnScheduler:
        limit = self.settings.turn_concurrency
        self._scheduler_actor = TurnScheduler(
            launch=self._launch,
            end_queued=self._end_queued,
            notify_queued=self._notify_queued,
            limit=limit,
            same_session=self.settings.same_session,
        )
        return self._scheduler_actor

    async def wait_stopped(self) -> None:
        """Return (or raise the escalation) when the agent's supervision tree has stopped."""
        assert self._sup is not None
        await self._sup.wait_stopped()

    def actor_refs(self) -> dict[str, Ref[Any]]:
        """The running incarnation of each agent actor, by name (for the fault harness); an
        actor in the middle of a restart is left out."""
        refs: dict[str, Ref[Any]] = {}
        if self._sup is None:
            return refs
        for name in ("session-router", "turn-scheduler"):
            try:
                refs[name] = self._sup.ref(name)
            except LookupError:
                continue
        return refs

    async def _current(self, name: str) -> Ref[Any]:
        """The running incarnation of child *name*, waiting through a restart (bounded)."""
        assert self._sup is not None
        try:
            return self._sup.ref(name)
        except LookupError:
            await self._sup.wait_child(name, timeout=5.0)
            return self._sup.ref(name)

    async def _tell(self, name: str, msg: Any) -> None:
        """Tell an agent actor; a message that meets a restart goes to the next incarnation.

        Only for messages that are safe to deliver again (cancel, drop, slot bookkeeping).
        """
        try:
            await (await self._current(name)).tell(msg)
        except ActorError:
            await (await self._current(name)).tell(msg)

    async def _ask(self, name: str, msg: Any, *, retry: bool = True) -> Any:
        try:
            return await (await self._current(name)).ask(msg, timeout=5.0)
        except ActorError:
            if not retry:
                raise
            return await (await self._current(name)).ask(msg, timeout=5.0)

    async def stop(self) -> None:
        """Stop the tree: turns first (each ends definitely), then the scheduler and router."""
        if self._sup is not None:
            await self._sup.stop(timeout=5.0)
        for task in list(self._turn_tasks):
            task.cancel()
        if self._turn_tasks:
            await asyncio.wait(self._turn_tasks, timeout=5.0)
        await self.models.aclose()
        await self.store.close()

    @property
    def table(self) -> RouteTable:
        return self._table

    # -- output -----------------------------------------------------------------------------------

    async def emit(self, session_id: str, msg: OutboundModel) -> bool:
        """Send session-scoped output to the session's current connection, if any.

        Returns False when it could not be delivered (the session is registered nowhere, or its
        connection is gone): the journal still has it.
        """
        entry = self.table.lookup(session_id)
        if entry is None:
            return False
        conn = self.connections.get(entry.link.link_id)
        if conn is None:
            return False
        return await conn.send(msg)

    async def lost_end(self, ticket: TurnTicket, end: list[OutboundModel]) -> bool:
        """The end of a turn whose connection was lost (protocol.md section 6).

        The relay that survived the drop ended the turn itself and said so (``turns_ended``):
        then nothing more is sent. If the session is already back on another connection that
        did not see the turn (a new relay after a service-worker restart), it gets the end now;
        if it is registered nowhere yet, the end waits for its ``session.start``.
        Returns True when the panel has had (or, through the relay, has) the end.
        """
        sid = ticket.session_id
        if sid in self._ended_by_relay:
            # The relay ended the turn: never a second end, but the panel still learns what
            # became of an interrupted tool call (its card would otherwise stay pending).
            self._ended_by_relay.discard(sid)
            end = [m for m in end if isinstance(m, ChatToolResult)]
            if not end:
                return True
        entry = self.table.lookup(sid)
        conn = self.connections.get(entry.link.link_id) if entry is not None else None
        if conn is not None and conn.info.link_id != ticket.link_id:
            for msg in end:
                await conn.send(_for_protocol(msg, conn.info.protocol))
            return True
        self.undelivered_end(sid, end, ticket.turn_id)
        return False

    def undelivered_end(self, session_id: str, end: list[OutboundModel], turn_id: str) -> None:
        """A turn's end could not reach its panel: send it when the session registers again."""
        self._undelivered[session_id] = (turn_id, end)

    # -- links ------------------------------------------------------------------------------------

    def link_opened(self, conn: Connection) -> None:
        self.connections[conn.info.link_id] = conn

    async def link_closed(self, conn: Connection) -> None:
        """A connection went: fail its browser calls, end its turns, drop its sessions."""
        link_id = conn.info.link_id
        self.connections.pop(link_id, None)
        conn.proxy.connection_lost()
        await self._tell("turn-scheduler", DropLinkTurns(link_id=link_id))
        await self._ask("session-router", DropLink(link_id=link_id))

    def turns_ended_by_relay(self, sessions: list[str]) -> None:
        self._ended_by_relay.update(sessions)
        self.relay_marks.discard(sessions)  # said after all: the marks on disk are spent

    # -- sessions ---------------------------------------------------------------------------------

    def _facts(self, conn: Connection) -> LinkFacts:
        return LinkFacts(
            link_id=conn.info.link_id,
            origin=conn.info.origin,
            protocol=conn.info.protocol,
            install_id=conn.info.install_id,
        )

    def _browser_link_for_client(self, conn: Connection) -> int | None:
        """The browser a local client's session drives: the most recently active browser
        connection, when the config allows local clients at all (protocol.md section 6)."""
        if conn.info.role == "relay" or not self.settings.allow_local_clients:
            return None
        browsers = [c for c in self.connections.values() if c.info.role == "relay"]
        if not browsers:
            return None
        return max(browsers, key=lambda c: c.last_active).info.link_id

    async def session_start(self, conn: Connection, start: SessionStart) -> None:
        capabilities = start.capabilities
        browser_link = self._browser_link_for_client(conn)
        if conn.info.role != "relay" and browser_link is None:
            capabilities = tuple(c for c in capabilities if c != "cdp.activeTab")
        result: RegisterResult = await self._ask(
            "session-router",
            Register(
                link=self._facts(conn),
                session_id=start.session_id,
                browser_link_id=browser_link,
                capabilities=capabilities,
                model=start.model,
                inspected_tab_id=start.inspected_tab_id,
                window_id=start.window_id,
                disabled_tools=start.disabled_tools,
                enabled_host_tools=start.enabled_host_tools,
            ),
        )
        if result.outcome is RegisterOutcome.CONFLICT:
            message = f"session {start.session_id} belongs to another browser profile"
            if conn.info.protocol >= 2:
                await conn.send(
                    ErrorMessage(
                        code=ErrorCode.SESSION_CONFLICT,
                        message=message,
                        session_id=start.session_id,
                        request_type="session.start",
                    )
                )
            else:
                await conn.send(
                    ChatError(session_id=start.session_id, message=message, code="internal")
                )
            return
        if result.outcome is RegisterOutcome.MOVED and result.previous_link is not None:
            old = self.connections.get(result.previous_link)
            if old is not None and old.info.protocol >= 2:
                await old.send(
                    ErrorMessage(
                        code=ErrorCode.CONNECTION_REPLACED,
                        message="this session continues on a newer connection",
                        session_id=start.session_id,
                    )
                )
        await conn.send(
            SessionReady(
                session_id=start.session_id,
                model=self.models.model_id,
                capabilities=capabilities,
            )
        )
        await self._initial_push(conn)
        await self._settle_cut_turn(conn, result)

    async def _initial_push(self, conn: Connection) -> None:
        # Section 3b: sdk.ready is ok whenever the daemon is up; the provider's state goes in
        # auth.status only, and session.ready never waits for the provider.
        await conn.send(SdkReady(ok=True))
        await conn.send(self.models.auth)
        await conn.send(ModelsCurrent(id=self.models.model_id))
        await conn.send(ModelsList(models=self.models.known()))

    async def _settle_cut_turn(self, conn: Connection, result: RegisterResult) -> None:
        """A session (re-)registered: give it the definite end of any turn it has not seen end.

        Two sources: an end this daemon kept because it found no panel (``_undelivered``), and
        a turn the journal shows cut by a crash of an earlier daemon (``cut_turn``). If the relay
        already ended that turn (``turns_ended``), only interrupted tool results are sent, never
        a second end. The relay's mark is for one turn: it is used here, or kept for the turn of
        this session that is still winding down, and otherwise dropped so it cannot swallow the
        end of a later turn.
        """
        sid = entry_sid = result.entry.session_id
        if self.relay_marks.take(sid):
            # A relay ended this session's cut turn, then died before it could tell a daemon.
            self._ended_by_relay.add(sid)
        marked = sid in self._ended_by_relay
        used = False
        chat = self.store.chat(result.entry.scope, entry_sid)
        kept = self._undelivered.pop(sid, None)
        if kept is not None:
            turn_id, undelivered = kept
            if marked:
                used = True
                undelivered = [m for m in undelivered if isinstance(m, ChatToolResult)]
            for msg in undelivered:
                await conn.send(_for_protocol(msg, conn.info.protocol))
            chat.mark_delivered(turn_id)
        elif not self.is_running(sid):
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
        if marked and (used or not self.is_running(sid)):
            self._ended_by_relay.discard(sid)

    async def session_end(self, conn: Connection, session_id: str) -> None:
        entry = self.table.lookup(session_id)
        if entry is None or entry.link.link_id != conn.info.link_id:
            return
        await self._tell(
            "turn-scheduler", CancelTurns(session_id=session_id, reason=CancelReason.USER)
        )
        await self._ask(
            "session-router", Unregister(link_id=conn.info.link_id, session_id=session_id)
        )
        # The panel closed: what only this session used goes with it.
        self.tools.forget(session_id)
        self.prompts.forget_session(session_id)

    # -- turns ------------------------------------------------------------------------------------

    def is_running(self, session_id: str) -> bool:
        """Has *session_id* a turn running or waiting?"""
        return self._scheduler_actor is not None and any(
            t.session_id == session_id
            for t in self._scheduler_actor.queue.running() + self._scheduler_actor.queue.waiting()
        )

    async def chat_send(self, conn: Connection, send: ChatSend) -> None:
        sid = send.session_id
        entry = self.table.lookup(sid)
        if entry is None or entry.link.link_id != conn.info.link_id:
            await conn.end_turn_with_error(
                sid,
                ErrorCode.UNKNOWN_SESSION,
                f"session {sid} is not registered on this connection",
            )
            return
        turn_id = send.turn_id or f"t-{secrets.token_hex(8)}"
        if send.turn_id:
            stored = self.store.chat(entry.scope, sid).find_turn(send.turn_id)
            if stored is not None and stored.ended:
                await self._replay_outcome(conn, sid, stored)
                return
            if stored is not None or send.turn_id in self._texts:
                return  # the same turn is still in flight: its one end will come
            if self._scheduler_actor is not None and any(
                t.turn_id == send.turn_id for t in self._scheduler_actor.queue.running()
            ):
                return
        ticket = TurnTicket(
            turn_id=turn_id, session_id=sid, link_id=conn.info.link_id, protocol=conn.info.protocol
        )
        self._texts[turn_id] = TurnRequest(ticket=ticket, text=send.text, scope=entry.scope)
        try:
            # Never re-submitted: a submit that met a crash may already have been queued (and
            # ended by the crashed scheduler), so it is ended here only if nobody ended it.
            decision = await self._ask("turn-scheduler", SubmitTurn(ticket=ticket), retry=False)
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

    async def _replay_outcome(self, conn: Connection, sid: str, stored: TurnOutcome) -> None:
        """A resent v2 turnId: answer with the stored outcome instead of a second turn."""
        if stored.outcome in ("done", "cancelled"):
            await conn.send(
                ChatDone(session_id=sid, text=stored.text or "", turn_id=stored.turn_id)
            )
            await conn.send(EventActivity(session_id=sid, event="status.idle"))
            return
        try:
            code = ErrorCode(stored.code or ErrorCode.INTERNAL.value)
        except ValueError:
            code = ErrorCode.INTERNAL
        await conn.end_turn_with_error(
            sid, code, stored.message or "This turn already ended with an error.", stored.turn_id
        )

    async def _new_turns_supervisor(self) -> Supervisor:
        turns = Supervisor("turns", [], strategy=Strategy.ONE_FOR_ONE)
        self._turns = turns
        return await turns.start()

    async def _launch(self, ticket: TurnTicket) -> asyncio.Task[None]:
        """Start a turn as a temporary task child of the turns supervisor."""
        req = self._texts.pop(ticket.turn_id)
        assert self._turns is not None
        child = await self._turns.start_child(
            ChildSpec(
                f"turn:{ticket.turn_id}",
                task=lambda: run_turn(self, req),
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
        conn = self.connections.get(ticket.link_id)
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
        await self.emit(
            ticket.session_id,
            ChatQueued(session_id=ticket.session_id, turn_id=ticket.turn_id, position=position),
        )

    def cancel_reason(self, turn_id: str) -> CancelReason | None:
        if self._scheduler_actor is None:
            return None
        return self._scheduler_actor.cancel_reasons.get(turn_id)

    async def chat_cancel(self, conn: Connection, session_id: str, turn_id: str | None) -> None:
        entry = self.table.lookup(session_id)
        if entry is None or entry.link.link_id != conn.info.link_id:
            return
        await self._tell(
            "turn-scheduler",
            CancelTurns(session_id=session_id, turn_id=turn_id, reason=CancelReason.USER),
        )

    async def turn_finished(self, ticket: TurnTicket) -> None:
        if self._sup is not None:
            try:
                await self._tell("turn-scheduler", TurnEnded(turn_id=ticket.turn_id))
            except Exception:  # the scheduler is stopping: nothing to start next
                log.debug("scheduler gone at the end of turn %s", ticket.turn_id)

    async def release_control(self, ticket: TurnTicket) -> None:
        """v2 ``control.release`` to the browser connection the turn drove (section 4)."""
        entry = self.table.lookup(ticket.session_id)
        link = (entry.browser_link_id if entry else None) or ticket.link_id
        conn = self.connections.get(link)
        if conn is not None and conn.info.protocol >= 2:
            await conn.send(ControlRelease(owner_id=ticket.turn_id))

    # -- model: actors.model_side.ModelSide ---------------------------------------------------

    def model(self) -> ChatModel:
        return self.models.model()

    async def refresh_auth(self) -> AuthStatus:
        return await self.models.refresh_auth()

    async def list_models(self) -> list[ModelInfo]:
        return await self.models.list_models()

    def set_model(self, model_id: str) -> None:
        self.models.set_model(model_id)

    @property
    def model_id(self) -> str:
        return self.models.model_id

    # -- browser and tools ------------------------------------------------------------------------

    async def browser_for(self, ticket: TurnTicket) -> TurnBrowser | None:
        """Pin the (connection, tab) this turn works on, or None if it may not drive tabs."""
        entry = self.table.lookup(ticket.session_id)
        if entry is None or not entry.can_drive_tabs:
            return None
        conn = self.connections.get(entry.browser_link_id or ticket.link_id)
        if conn is None:
            return None
        browser = await TurnBrowser.pin(
            proxy=conn.proxy,
            session_id=ticket.session_id,
            owner_id=ticket.turn_id,
            inspected_tab_id=entry.inspected_tab_id,
            window_id=entry.window_id,
            allow_file=False,
        )
        if entry.browser_link_id is not None and browser.tab_id is not None:
            await self.asking.take_control(entry.link.link_id, conn, browser.tab_id)
        return browser

    def tool_definitions(self, session_id: str, browser: bool) -> list[dict[str, Any]]:
        entry = self.table.lookup(session_id)
        disabled = (entry.disabled_tools if entry else frozenset()) | self.settings.disabled_tools
        host = entry.enabled_host_tools if entry else frozenset()
        protocol = entry.link.protocol if entry else 1
        return self.tools.definitions(
            browser=browser, disabled=disabled, enabled_host=host, protocol=protocol
        )

    def is_page_changing(self, name: str) -> bool:
        return self.tools.is_page_changing(name)

    def bad_arguments(self, name: str, problem: str) -> ToolResultView:
        return self.tools.bad_arguments(name, problem)

    def tab_lock(self, link_id: int, tab_id: int) -> asyncio.Lock:
        """The lock that serializes page actions on one tab (the caller keeps it while in use)."""
        lock = self._tab_locks.get((link_id, tab_id))
        if lock is None:
            lock = self._tab_locks[(link_id, tab_id)] = asyncio.Lock()
        return lock

    async def run_tool(
        self,
        ticket: TurnTicket,
        browser: TurnBrowser | None,
        name: str,
        args: dict[str, Any],
        call_id: str | None = None,
    ) -> ToolResultView:
        entry = self.table.lookup(ticket.session_id)
        disabled = (entry.disabled_tools if entry else frozenset()) | self.settings.disabled_tools
        host = entry.enabled_host_tools if entry else frozenset()
        browser_link = (entry.browser_link_id if entry else None) or ticket.link_id
        lock: Callable[[int], asyncio.Lock] = lambda tab: self.tab_lock(browser_link, tab)  # noqa: E731

        async def approve(info: ApprovalRequestInfo) -> bool:
            return await self.asking.approve(ticket, browser, info)

        async def ask(args: AskUserArgs) -> tuple[Any, bool]:
            return await self.asking.ask_user(ticket, args)

        return await self.tools.run(
            name,
            args,
            browser=browser,
            disabled=disabled,
            enabled_host=host,
            tab_lock=lock,
            session_id=ticket.session_id,
            protocol=ticket.protocol,
            call_id=call_id,
            approve=approve,
            ask_user=ask if ticket.protocol >= 2 else None,
        )

    # -- asking the user (v2): actors.asking.UserAsking -----------------------------------------

    def approval_response(self, conn: Connection, msg: ApprovalResponse) -> None:
        self.asking.approval_response(msg)

    def user_answer(self, conn: Connection, msg: UserAnswer) -> None:
        self.asking.user_answer(msg)


def _mode(value: str) -> ApprovalMode:
    if value == "always":
        return "always"
    if value == "page-changing":
        return "page-changing"
    return "never"


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
