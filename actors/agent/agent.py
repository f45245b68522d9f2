"""The agent, built: every part of the daemon's agent side, each handed its collaborators.

:func:`build_agent` makes the parts once per daemon and wires them explicitly — no part reaches
back for another at run time:

==================  ==========================================================================
part                what it is
==================  ==========================================================================
``table``           the route table (sessions -> connections), pure; changed by the SessionRouter
``board``           what the TurnScheduler shows of itself (its line, why a turn was cancelled)
``links``           the live links; ``outbox`` sends a session's output to its current link
``ends``            exactly one end per turn across drops and restarts
``models``          the model provider (gateway, ``auth.status``, model list)
``asking``          approvals, ``ask_user``, ``take_control``
``browsers``        the tab each turn drives; ``tools`` its tool calls (run by the ToolWorker)
``launcher``        ``chat.send`` to a running turn; ``sessions``; ``chats``; ``config``
==================  ==========================================================================

The three agent actors — SessionRouter, TurnScheduler, ToolWorker — are made by the
``new_router`` / ``new_scheduler`` / ``new_worker`` factories, which the supervision tree calls for
each incarnation (:mod:`supervisors.trees`); the parts reach them through
:class:`~actors.runtime.live_ref.LiveRef` objects that the tree binds. The plain data each actor
keeps across a restart (the route table, the turn board, the tool ledgers) is made here, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from actors.agent.agent_config import AgentConfig, AgentSettings, HostServices
from actors.agent.asking import UserAsking
from actors.agent.chats import Chats
from actors.agent.clients import Clients
from actors.agent.connection import AgentFront
from actors.agent.end_delivery import EndDelivery
from actors.agent.images import ImageStore
from actors.agent.links import Links, Outbox
from actors.agent.model_side import ModelSide
from actors.agent.prompts import PromptBroker
from actors.agent.route_table import RouteTable
from actors.agent.session_router import RouterMsg, SessionRouter
from actors.agent.sessions import Sessions
from actors.agent.tool_calls import ToolCalls
from actors.agent.turn_browsers import TurnBrowsers
from actors.agent.turn_launch import StartTurn, TurnLauncher
from actors.agent.turn_parts import TurnDeps
from actors.agent.turn_scheduler import SchedulerMsg, TurnBoard, TurnScheduler
from actors.browser.tool_worker import SessionScratch, ToolWorker, WorkerMsg
from actors.relay.relay_marks import RelayMarks
from actors.runtime.live_ref import LiveRef
from actors.store.chat_store import ChatStore
from actors.tools.catalog import ToolCatalog, build_registry

__all__ = ["Agent", "build_agent"]


class Agent:
    """The agent's parts (see the module docstring). Holds no logic of its own beyond owning the
    background tasks its parts start and closing what they opened."""

    def __init__(
        self,
        settings: AgentSettings,
        *,
        store: ChatStore,
        start_turn: StartTurn,
        services: HostServices | None = None,
        reload_settings: Callable[[], AgentSettings] | None = None,
    ) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        home = settings.home
        self.store = store
        self.table = RouteTable()
        self.board = TurnBoard()
        self.links = Links()
        self.outbox = Outbox(self.table, self.links)
        self.router: LiveRef[RouterMsg] = LiveRef("session-router")
        self.scheduler: LiveRef[SchedulerMsg] = LiveRef("turn-scheduler")
        self.worker: LiveRef[WorkerMsg] = LiveRef("tool-worker")
        self.relay_marks = RelayMarks.for_home(home)
        self.models = ModelSide(settings.model, own=self.own)
        self.config = AgentConfig(
            settings,
            services=services,
            reload_settings=reload_settings,
            models=self.models,
            table=self.table,
            links=self.links,
            scheduler=self.scheduler,
            own=self.own,
        )
        self.catalog = ToolCatalog(build_registry(home), lambda: self.config.tools)
        self.scratch = SessionScratch()
        self.prompts = PromptBroker(home / "data" / "approvals.json")
        self.ends = EndDelivery(
            table=self.table,
            links=self.links,
            store=store,
            relay_marks=self.relay_marks,
            board=self.board,
        )
        self.asking = UserAsking(
            prompts=self.prompts,
            catalog=self.catalog,
            table=self.table,
            links=self.links,
            outbox=self.outbox,
            scheduler=self.scheduler,
            timeout_s=lambda: self.config.settings.approval_timeout_s,
            elicit_clients=lambda: self.config.settings.mcp_elicit_clients,
        )
        self.clients = Clients(table=self.table, links=self.links, asking=self.asking)
        self.images = ImageStore()
        self.browsers = TurnBrowsers(
            table=self.table, links=self.links, asking=self.asking, clients=self.clients
        )
        self.tools = ToolCalls(
            table=self.table,
            catalog=self.catalog,
            worker=self.worker,
            asking=self.asking,
            browsers=self.browsers,
        )
        self.sessions = Sessions(
            table=self.table,
            links=self.links,
            router=self.router,
            scheduler=self.scheduler,
            worker=self.worker,
            config=self.config,
            models=self.models,
            ends=self.ends,
            prompts=self.prompts,
            asking=self.asking,
            browsers=self.browsers,
            clients=self.clients,
            images=self.images,
            allow_local_clients=lambda: self.config.settings.allow_local_clients,
        )
        self.turn_deps = TurnDeps(
            store=store,
            outbox=self.outbox,
            ends=self.ends,
            board=self.board,
            scheduler=self.scheduler,
            browsers=self.browsers,
            tools=self.tools,
            models=self.models,
            max_iterations=lambda: self.config.settings.max_iterations,
            grant_browser=self.sessions.grant_browser,
            host_tools=lambda: self.config.settings.mcp_host_tools,
            clients=self.clients,
            images=self.images,
        )
        self.launcher = TurnLauncher(
            table=self.table,
            links=self.links,
            outbox=self.outbox,
            store=store,
            board=self.board,
            scheduler=self.scheduler,
            settings=lambda: self.config.settings,
            start_turn=start_turn,
            deps=lambda: self.turn_deps,
        )
        self.chats = Chats(store=store, table=self.table, board=self.board)
        self.front = AgentFront(
            sessions=self.sessions,
            turns=self.launcher,
            chats=self.chats,
            models=self.models,
            config=self.config,
            asking=self.asking,
            tools=self.tools,
            images=self.images,
        )

    # -- the actors' factories (one call per incarnation) -----------------------------------------

    def new_router(self) -> SessionRouter:
        return SessionRouter(self.table)

    def new_scheduler(self) -> TurnScheduler:
        return self.launcher.new_scheduler()

    def new_worker(self) -> ToolWorker:
        return ToolWorker(
            catalog=self.catalog, home=self.config.settings.home, scratch=self.scratch
        )

    # -- life -------------------------------------------------------------------------------------

    @property
    def settings(self) -> AgentSettings:
        return self.config.settings

    def own(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        """Run ``coro`` as a task this agent owns: cancelled and awaited on :meth:`close`."""
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def open(self) -> None:
        """The tree is up: build the provider's gateway and check it once (``auth.status``)."""
        self.models.open()
        self.own(self.config.check_auth(), "auth-check")

    async def close(self) -> None:
        """After the tree stopped: end the background tasks, close the provider and the store."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5.0)
        await self.models.aclose()
        await self.store.close()


def build_agent(
    settings: AgentSettings,
    *,
    store: ChatStore,
    start_turn: StartTurn,
    services: HostServices | None = None,
    reload_settings: Callable[[], AgentSettings] | None = None,
) -> Agent:
    """Make the agent's parts for one daemon (see the module docstring)."""
    return Agent(
        settings,
        store=store,
        start_turn=start_turn,
        services=services,
        reload_settings=reload_settings,
    )
