"""AgentHub: the daemon's agent side — sessions, turns, model, journal and tools, wired together.

Connections hand it what the extension sent (already parsed at the edge); it answers through the
session's *current* connection, looked up in the SessionRouter's table at every send, so output
never goes to a connection where the session is not registered (protocol.md section 3b).

It owns:

- the :class:`actors.agent.session_router.SessionRouter` and
:class:`actors.agent.turn_scheduler.TurnScheduler`
  actors (the turn tasks are launched by the scheduler and end themselves:
  :mod:`actors.agent.turn`);
- the model gateway (built lazily from config; a missing model is an ``AUTH`` problem reported in
  ``auth.status`` and in the turn's ``chat.error``, never in ``sdk.ready``);
- the chat store (journals) and the tool runner.

Cut turns: when a session registers whose journal shows a turn without an end (a link drop or a
daemon crash), the hub sends that turn's definite end (``chat.error`` + ``status.error``) unless
the relay already ended it (``turns_ended`` link control, or the mark a relay that died left on
disk: :mod:`actors.relay.relay_marks`), and journals it as interrupted.

Its parts, each in its own module:

- :mod:`actors.agent.sessions` (:class:`AgentSessions`): links opened and closed, and
  ``session.start`` / ``session.end`` — registering with the router, conflicts and moves;
- :mod:`supervisors.turn_launch` (:class:`TurnLauncher`): ``chat.send`` to a turn ticket, and what
  the scheduler calls back — each turn a temporary task child of the ``turns`` supervisor;
- :mod:`actors.agent.end_delivery` (:class:`EndDelivery`): the cut turns above, and every other case
of
  a turn's one end that could not simply go out on the turn's connection;
- :mod:`actors.agent.agent_config` (:class:`AgentConfig`, :class:`AgentSettings`,
  :class:`HostServices`): the settings, and the requests that only read or write them
  (``config.*``, ``doctor.run``, the ``auth.status`` broadcast, a ready session's initial push);
- :mod:`actors.agent.turn_tools` (:class:`TurnTools`): a turn's pinned tab, its tool definitions and
  runs, the per-tab locks, ``control.release``.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from actors.agent.agent_config import AgentConfig, AgentSettings, HostServices, approval_mode
from actors.agent.asking import UserAsking
from actors.agent.end_delivery import EndDelivery
from actors.agent.model_side import ModelSide
from actors.agent.prompts import PromptBroker
from actors.agent.session_router import RouteTable, SessionRouter
from actors.agent.sessions import AgentSessions
from actors.agent.turn_scheduler import (
    CancelReason,
    CancelTurns,
    Reclaim,
    TurnEnded,
    TurnTicket,
    YieldSlot,
)
from actors.agent.turn_tools import TurnTools
from actors.browser.tool_runner import ToolResultView, ToolRunner, TurnBrowser
from actors.model.openai_gateway import ChatModel
from actors.relay.relay_marks import RelayMarks
from actors.runtime.errors import ActorError
from actors.runtime.ref import Ref
from actors.store.chat_store import ChatStore
from messages.wire_inbound import ApprovalResponse, ChatSend, SessionStart, UserAnswer
from messages.wire_outbound import AuthStatus, ModelInfo, OutboundModel
from supervisors.children import ChildSpec
from supervisors.introspection import SupervisionEvent
from supervisors.policy import RestartIntensity, Strategy
from supervisors.supervisor import Supervisor
from supervisors.turn_launch import TurnLauncher

if TYPE_CHECKING:
    from actors.agent.connection import Connection

__all__ = ["AgentHub", "AgentSettings", "HostServices"]

log = logging.getLogger(__name__)


class AgentHub:
    def __init__(
        self,
        settings: AgentSettings,
        *,
        store: ChatStore | None = None,
        services: HostServices | None = None,
        reload_settings: Callable[[], AgentSettings] | None = None,
    ) -> None:
        self.store = store or ChatStore(settings.home / "sessions")
        self.max_iterations = settings.max_iterations
        self.connections: dict[int, Connection] = {}
        self._table = RouteTable()
        self._sup: Supervisor | None = None
        #: What the agent's supervisor did lately (exits, restarts, an escalation): the fault
        #: harness checks them against the restart intensity.
        self.supervision: collections.deque[SupervisionEvent] = collections.deque(maxlen=1024)
        self._turn_tasks: set[asyncio.Task[None]] = set()
        self.models = ModelSide(settings.model, own=self._own)
        # The same word, left on disk by a relay that may have died before it could say it.
        self.relay_marks = RelayMarks.for_home(settings.home)
        self.ends = EndDelivery(
            table=self._table,
            connections=self.connections,
            store=self.store,
            relay_marks=self.relay_marks,
            is_running=self.is_running,
        )
        self.launcher = TurnLauncher(
            host=self,
            table=self._table,
            connections=self.connections,
            settings=lambda: self.settings,
            submit=lambda msg: self._ask("turn-scheduler", msg, retry=False),
        )
        self.tools = ToolRunner(
            home=settings.home,
            allow_host_code=settings.allow_host_code,
            approval_mode=approval_mode(settings.approval_mode),
            v1_approval_mode=approval_mode(settings.v1_approval_mode),
        )
        self.config = AgentConfig(
            settings,
            services=services,
            reload_settings=reload_settings,
            tools=self.tools,
            models=self.models,
            table=self._table,
            connections=self.connections,
            scheduler=lambda: self.launcher.scheduler,
            own=self._own,
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
        self.sessions = AgentSessions(
            table=self._table,
            connections=self.connections,
            ask=self._ask,
            tell=self._tell,
            config=self.config,
            models=self.models,
            ends=self.ends,
            tools=self.tools,
            prompts=self.prompts,
        )
        self.turn_tools = TurnTools(
            table=self._table,
            connections=self.connections,
            tools=self.tools,
            asking=self.asking,
            disabled=lambda: self.settings.disabled_tools,
        )

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the agent's supervision tree (one_for_one): the SessionRouter, the
        TurnScheduler, and — added as they start — each turn as a temporary task child."""
        self._sup = Supervisor(
            "agent",
            [
                ChildSpec("session-router", start=lambda: SessionRouter(self._table)),
                ChildSpec("turn-scheduler", start=self.launcher.new_scheduler),
                # The turns' own supervisor: started last, so stopped first (every turn ends
                # while the router and the scheduler still run). A separate control task, so
                # the scheduler launching a turn never waits on the supervisor that may be
                # stopping the scheduler itself (a deadlock with one supervisor for both).
                ChildSpec("turns", start=self.launcher.new_turns_supervisor),
            ],
            strategy=Strategy.ONE_FOR_ONE,
            intensity=RestartIntensity(5, 10.0),
            observer=self.supervision.append,
        )
        await self._sup.start()
        self.models.open()
        self._own(self.config.check_auth(), "auth-check")

    def _own(self, coro: Any, name: str) -> None:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._turn_tasks.add(task)  # owned: cancelled and awaited on stop
        task.add_done_callback(self._turn_tasks.discard)

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

    # -- settings: actors.agent.agent_config.AgentConfig ---------------------------------------

    @property
    def settings(self) -> AgentSettings:
        return self.config.settings

    @property
    def services(self) -> HostServices | None:
        return self.config.services

    @services.setter
    def services(self, services: HostServices | None) -> None:
        self.config.services = services

    def apply_settings(self, settings: AgentSettings) -> None:
        """The config changed (options page): new turns use the new model and policies."""
        self.config.apply(settings)

    async def config_get(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return await self.config.get()

    async def config_set(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Validate and save (raises ValueError naming the field), then apply."""
        return await self.config.set(values)

    async def doctor(self) -> list[dict[str, Any]]:
        return await self.config.doctor()

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

    # -- one end per turn: actors.agent.end_delivery.EndDelivery
    # ------------------------------------

    async def lost_end(self, ticket: TurnTicket, end: list[OutboundModel]) -> bool:
        return await self.ends.lost_end(ticket, end)

    def undelivered_end(self, session_id: str, end: list[OutboundModel], turn_id: str) -> None:
        self.ends.undelivered_end(session_id, end, turn_id)

    def turns_ended_by_relay(self, sessions: list[str]) -> None:
        self.ends.turns_ended_by_relay(sessions)

    @property
    def _undelivered(self) -> dict[str, tuple[str, list[OutboundModel]]]:
        return self.ends.undelivered

    # -- links and sessions: actors.agent.sessions.AgentSessions ------------------------

    def link_opened(self, conn: Connection) -> None:
        self.sessions.link_opened(conn)

    async def link_closed(self, conn: Connection) -> None:
        await self.sessions.link_closed(conn)

    async def session_start(self, conn: Connection, start: SessionStart) -> None:
        await self.sessions.session_start(conn, start)

    async def session_end(self, conn: Connection, session_id: str) -> None:
        await self.sessions.session_end(conn, session_id)

    # -- turns: supervisors.turn_launch.TurnLauncher -----------------------------------------

    def is_running(self, session_id: str) -> bool:
        """Has *session_id* a turn running or waiting?"""
        return self.launcher.is_running(session_id)

    async def chat_send(self, conn: Connection, send: ChatSend) -> None:
        await self.launcher.chat_send(conn, send)

    def cancel_reason(self, turn_id: str) -> CancelReason | None:
        return self.launcher.cancel_reason(turn_id)

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

    # -- model: actors.agent.model_side.ModelSide
    # ---------------------------------------------------

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

    # -- browser and tools: actors.agent.turn_tools.TurnTools
    # ----------------------------------------

    async def browser_for(self, ticket: TurnTicket) -> TurnBrowser | None:
        """Pin the (connection, tab) this turn works on, or None if it may not drive tabs."""
        return await self.turn_tools.browser_for(ticket)

    async def release_control(self, ticket: TurnTicket) -> None:
        """v2 ``control.release`` to the browser connection the turn drove (section 4)."""
        await self.turn_tools.release_control(ticket)

    def tool_definitions(self, session_id: str, browser: bool) -> list[dict[str, Any]]:
        return self.turn_tools.tool_definitions(session_id, browser)

    def is_page_changing(self, name: str) -> bool:
        return self.tools.is_page_changing(name)

    def bad_arguments(self, name: str, problem: str) -> ToolResultView:
        return self.tools.bad_arguments(name, problem)

    def tab_lock(self, link_id: int, tab_id: int) -> asyncio.Lock:
        """The lock that serializes page actions on one tab (the caller keeps it while in use)."""
        return self.turn_tools.tab_lock(link_id, tab_id)

    @property
    def _tab_locks(self) -> weakref.WeakValueDictionary[tuple[int, int], asyncio.Lock]:
        return self.turn_tools.tab_locks

    async def run_tool(
        self,
        ticket: TurnTicket,
        browser: TurnBrowser | None,
        name: str,
        args: dict[str, Any],
        call_id: str | None = None,
    ) -> ToolResultView:
        return await self.turn_tools.run_tool(ticket, browser, name, args, call_id)

    # -- asking the user (v2): actors.agent.asking.UserAsking
    # -----------------------------------------

    def approval_response(self, conn: Connection, msg: ApprovalResponse) -> None:
        self.asking.approval_response(msg)

    def user_answer(self, conn: Connection, msg: UserAnswer) -> None:
        self.asking.user_answer(msg)
