"""Links and sessions as the agent sees them: who is connected, and which session is where.

- **link_opened** / **link_closed**: a connection came or went. One that went fails its browser
  calls, ends its turns (the TurnScheduler) and drops its sessions (the SessionRouter).
- **session_start** registers a session with the SessionRouter and answers: a conflict (the
  session belongs to another browser profile), a move (the old v2 connection is told it was
  replaced), else ``session.ready``, the initial push and the settlement of a cut turn
  (:meth:`actors.agent.end_delivery.EndDelivery.settle_cut_turn`). A local client's session is bound
  to the most recently active browser connection, when the config allows it (protocol.md section 6).
- **session_end**: the panel closed — its turns are cancelled, and what only it used is forgotten.

One instance per daemon (:func:`actors.agent.agent.build_agent`); it reaches the router, the
scheduler and the tool worker through their live refs (:class:`~actors.runtime.live_ref.LiveRef`),
so it follows them through a restart.
"""

from __future__ import annotations

from collections.abc import Callable

from actors.agent.agent_config import AgentConfig
from actors.agent.asking import UserAsking
from actors.agent.clients import Clients
from actors.agent.end_delivery import EndDelivery
from actors.agent.images import ImageStore
from actors.agent.links import LinkHandle, Links
from actors.agent.model_side import ModelSide
from actors.agent.prompts import PromptBroker
from actors.agent.route_table import (
    LinkFacts,
    RegisterOutcome,
    RegisterResult,
    RouteTable,
    SessionEntry,
)
from actors.agent.session_router import DropLink, Register, RouterMsg, Unregister
from actors.agent.turn_browsers import TurnBrowsers
from actors.agent.turn_queue import CancelReason
from actors.agent.turn_scheduler import CancelTurns, DropLinkTurns, SchedulerMsg
from actors.browser.tool_worker import ForgetSession, WorkerMsg
from actors.runtime.live_ref import LiveRef
from messages.errors import ErrorCode
from messages.wire_inbound import ClientHandTab, ClientStop, ClientTakeTab, SessionStart
from messages.wire_outbound import ChatError, ErrorMessage, EventActivity, SessionReady

#: How long a registration waits for the router.
ROUTER_TIMEOUT_S = 5.0
#: How long a local client's call waits for a browser to connect (a relay coming back after a
#: daemon restart reconnects within its backoff).
BROWSER_WAIT_S = 10.0

__all__ = ["Sessions"]


class Sessions:
    def __init__(
        self,
        *,
        table: RouteTable,
        links: Links,
        router: LiveRef[RouterMsg],
        scheduler: LiveRef[SchedulerMsg],
        worker: LiveRef[WorkerMsg],
        config: AgentConfig,
        models: ModelSide,
        ends: EndDelivery,
        prompts: PromptBroker,
        asking: UserAsking,
        browsers: TurnBrowsers,
        clients: Clients,
        images: ImageStore,
        allow_local_clients: Callable[[], bool],
    ) -> None:
        self._table = table
        self._links = links
        self._router = router
        self._scheduler = scheduler
        self._worker = worker
        self._config = config
        self._models = models
        self._ends = ends
        self._prompts = prompts
        self._asking = asking
        self._browsers = browsers
        self._clients = clients
        self._images = images
        #: The browser a local client asked for (``session.start.browser``), by session.
        self._wanted_browser: dict[str, str] = {}
        self._allow_local_clients = allow_local_clients

    # -- links ------------------------------------------------------------------------------------

    def link_opened(self, link: LinkHandle) -> None:
        self._links.add(link)

    async def link_closed(self, link: LinkHandle) -> None:
        """A connection went: end its turns, drop its sessions (its CDPProxy already failed its
        browser calls: the Connection told it first)."""
        link_id = link.link_id
        self._links.remove(link_id)
        for entry in self._table.sessions_of(link_id):
            self._browsers.forget(entry.session_id)
            self._wanted_browser.pop(entry.session_id, None)
        for session_id in self._clients.of_link(link_id):
            await self._clients.gone(session_id)
        await self._scheduler.tell_again(DropLinkTurns(link_id=link_id))
        await self._router.ask_again(DropLink(link_id=link_id), timeout=ROUTER_TIMEOUT_S)

    def _facts(self, conn: LinkHandle) -> LinkFacts:
        return LinkFacts(
            link_id=conn.info.link_id,
            origin=conn.info.origin,
            protocol=conn.info.protocol,
            install_id=conn.info.install_id,
        )

    def _browser_link_for_client(self, conn: LinkHandle) -> int | None:
        """The browser a local client's session drives: the most recently active browser
        connection, when the config allows local clients at all (protocol.md section 6)."""
        if conn.is_browser or not self._allow_local_clients():
            return None
        browser = self._links.most_recent_browser()
        return None if browser is None else browser.link_id

    def _mcp_allowed(self, conn: LinkHandle) -> bool:
        settings = self._config.settings
        return settings.allow_local_clients or conn.info.client in settings.mcp_clients

    async def grant_browser(self, session_id: str) -> tuple[ErrorCode, str] | None:
        """An MCP client's session wants a tab: bind it to the most recently active browser,
        asking that browser's user the first time (protocol.md section 6). Returns None when the
        session may drive tabs now, else why not (a code and words for the client)."""
        entry = self._table.lookup(session_id)
        if entry is None:
            return ErrorCode.UNKNOWN_SESSION, f"session {session_id} is not registered"
        if entry.can_drive_tabs:
            return None
        conn = self._links.get(entry.link.link_id)
        if conn is None or conn.info.role != "mcp":
            return ErrorCode.NO_CAPABILITY, "this session may not drive tabs"
        wanted = self._wanted_browser.get(session_id)  # browy mcp --browser NAME
        browser = self._links.most_recent_browser(wanted)
        if browser is None:
            await conn.send(
                EventActivity(
                    session_id=session_id,
                    event="status.thinking",
                    text=f"waiting for {wanted or 'a browser'} to connect to Browy",
                )
            )
            browser = await self._links.wait_browser(BROWSER_WAIT_S, wanted)
        if browser is None:
            if wanted is not None:
                connected = ", ".join(n or "unnamed" for n in self._links.browser_names())
                return ErrorCode.NO_CAPABILITY, (
                    f"{wanted} is not connected to Browy (connected: {connected or 'none'}): "
                    f"open the Browy side panel in {wanted}."
                )
            return ErrorCode.NO_CAPABILITY, (
                "No browser is connected to Browy: open the Browy side panel in your browser."
            )
        if not self._mcp_allowed(conn):
            if not self._asking.client_allowed(conn):
                name = conn.info.client or "this MCP client"
                await conn.send(
                    EventActivity(
                        session_id=session_id,
                        event="status.thinking",
                        text=f"waiting for the browser's user to allow {name} in the Browy "
                        "side panel",
                    )
                )
            problem = await self._asking.client_consent(
                conn, browser, always=self._config.remember_mcp_client
            )
            if problem is not None:
                return ErrorCode.APPROVAL_DENIED, problem
        await self._rebind(entry, browser.link_id)
        await self._clients.bound(session_id, conn.info.client, conn.link_id, browser.link_id)
        resumed = self._browsers.kept_tab(session_id)  # it came back (a daemon restart)
        if resumed is not None:
            await self._clients.add_tab(session_id, resumed)
        return None

    async def _rebind(self, entry: SessionEntry, browser_link_id: int | None) -> None:
        """Register a local client's session again, bound to *browser_link_id* (or to none)."""
        capabilities = {c for c in entry.capabilities if c != "cdp.activeTab"}
        if browser_link_id is not None:
            capabilities.add("cdp.activeTab")
        await self._router.ask_again(
            Register(
                link=entry.link,
                session_id=entry.session_id,
                browser_link_id=browser_link_id,
                capabilities=tuple(sorted(capabilities)),
                model=entry.model,
                inspected_tab_id=entry.inspected_tab_id,
                window_id=entry.window_id,
                disabled_tools=tuple(sorted(entry.disabled_tools)),
                enabled_host_tools=tuple(sorted(entry.enabled_host_tools)),
            ),
            timeout=ROUTER_TIMEOUT_S,
        )

    # -- what a panel may do about an MCP client (protocol.md section 4, ``clients``) ---------

    async def client_stop(self, panel: LinkHandle, msg: ClientStop) -> None:
        """The user stopped a client driving this browser: its running call is cancelled
        (``unknown`` if it was changing the page; never repeated) and it must be allowed again."""
        record = self._clients.get(msg.client_id)
        entry = self._table.lookup(msg.client_id)
        if record is None or entry is None or record.browser_link_id != panel.link_id:
            return
        await self._scheduler.tell_again(
            CancelTurns(session_id=msg.client_id, reason=CancelReason.USER)
        )
        client = self._links.get(record.link_id)
        if client is not None:
            self._asking.revoke_client(client)
            await client.send(
                EventActivity(
                    session_id=msg.client_id,
                    event="status.error",
                    text="stopped by the browser's user",
                )
            )
        await self._rebind(entry, None)
        self._browsers.forget(msg.client_id)
        await self._clients.gone(msg.client_id)

    async def take_tab(self, panel: LinkHandle, msg: ClientTakeTab) -> None:
        """The user takes a tab back from a client: its call running there is cancelled
        (``unknown`` if it was changing the page; never repeated), and it works there no more."""
        record = self._clients.get(msg.client_id)
        if record is None or record.browser_link_id != panel.link_id:
            return
        if not await self._clients.take_tab(msg.client_id, msg.tab_id):
            return
        if self._browsers.kept_tab(msg.client_id) == msg.tab_id:
            self._browsers.forget(msg.client_id)
            if record.busy:
                await self._scheduler.tell_again(
                    CancelTurns(session_id=msg.client_id, reason=CancelReason.USER)
                )

    async def hand_tab(self, panel: LinkHandle, msg: ClientHandTab) -> None:
        """The user handed a tab to a client driving this browser: it works there next."""
        record = self._clients.get(msg.client_id)
        if record is None or record.browser_link_id != panel.link_id:
            return
        self._browsers.hand(msg.client_id, msg.tab_id)
        await self._clients.add_tab(msg.client_id, msg.tab_id)

    async def session_start(self, conn: LinkHandle, start: SessionStart) -> None:
        capabilities = start.capabilities
        resumed_tab: int | None = None
        if conn.info.role == "mcp":
            # Bound to a browser now only if the config allows this client; else the first
            # call that needs a tab asks the browser's user (grant_browser).
            if start.browser:
                self._wanted_browser[start.session_id] = start.browser
            browser = self._links.most_recent_browser(start.browser or None)
            allowed = browser is not None and self._mcp_allowed(conn)
            browser_link = browser.link_id if allowed and browser is not None else None
            if start.inspected_tab_id is not None:
                # The tab it worked in before it reconnected (a daemon restart): its next
                # call starts there if that tab is still open.
                resumed_tab = start.inspected_tab_id
                self._browsers.resume(start.session_id, resumed_tab)
                start = start.model_copy(update={"inspected_tab_id": None})
        else:
            browser_link = self._browser_link_for_client(conn)
        if conn.info.role != "relay" and browser_link is None:
            capabilities = tuple(c for c in capabilities if c != "cdp.activeTab")
        result: RegisterResult = await self._router.ask_again(
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
            timeout=ROUTER_TIMEOUT_S,
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
            old = self._links.get(result.previous_link)
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
                model=self._models.model_id,
                capabilities=capabilities,
            )
        )
        await self._config.initial_push(conn)
        await self._ends.settle_cut_turn(conn, result)
        if conn.is_browser:
            await self._clients.show_to(conn, start.session_id)
        elif conn.info.role == "mcp" and browser_link is not None:
            await self._clients.bound(
                start.session_id, conn.info.client, conn.link_id, browser_link
            )
            if resumed_tab is not None:
                await self._clients.add_tab(start.session_id, resumed_tab)

    async def session_end(self, conn: LinkHandle, session_id: str) -> None:
        entry = self._table.lookup(session_id)
        if entry is None or entry.link.link_id != conn.info.link_id:
            return
        await self._scheduler.tell_again(
            CancelTurns(session_id=session_id, reason=CancelReason.USER)
        )
        await self._router.ask_again(
            Unregister(link_id=conn.info.link_id, session_id=session_id),
            timeout=ROUTER_TIMEOUT_S,
        )
        # The panel closed: what only this session used goes with it.
        await self._worker.tell_again(ForgetSession(session_id=session_id))
        self._prompts.forget_session(session_id)
        self._browsers.forget(session_id)
        self._wanted_browser.pop(session_id, None)
        self._images.forget_session(session_id)
        await self._clients.gone(session_id)
