"""Links and sessions as the agent hub sees them: who is connected, and which session is where.

- **link_opened** / **link_closed**: a connection came or went. One that went fails its browser
  calls, ends its turns (the TurnScheduler) and drops its sessions (the SessionRouter).
- **session_start** registers a session with the SessionRouter and answers: a conflict (the
  session belongs to another browser profile), a move (the old v2 connection is told it was
  replaced), else ``session.ready``, the initial push and the settlement of a cut turn
  (:meth:`actors.agent.end_delivery.EndDelivery.settle_cut_turn`). A local client's session is bound
  to the most recently active browser connection, when the config allows it (protocol.md section 6).
- **session_end**: the panel closed — its turns are cancelled, and what only it used is forgotten.

One instance per daemon, owned by the hub (:class:`supervisors.agent.AgentHub`), which hands it
its way to the router and the scheduler (``ask`` and ``tell``, through their restarts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from actors.agent.agent_config import AgentConfig
from actors.agent.end_delivery import EndDelivery
from actors.agent.model_side import ModelSide
from actors.agent.prompts import PromptBroker
from actors.agent.session_router import (
    DropLink,
    LinkFacts,
    Register,
    RegisterOutcome,
    RegisterResult,
    RouteTable,
    Unregister,
)
from actors.agent.turn_scheduler import CancelReason, CancelTurns, DropLinkTurns
from actors.browser.tool_runner import ToolRunner
from messages.errors import ErrorCode
from messages.wire_inbound import SessionStart
from messages.wire_outbound import ChatError, ErrorMessage, SessionReady

if TYPE_CHECKING:
    from actors.agent.connection import Connection

__all__ = ["AgentSessions"]


class AgentSessions:
    def __init__(
        self,
        *,
        table: RouteTable,
        connections: dict[int, Connection],
        ask: Callable[[str, Any], Awaitable[Any]],
        tell: Callable[[str, Any], Awaitable[None]],
        config: AgentConfig,
        models: ModelSide,
        ends: EndDelivery,
        tools: ToolRunner,
        prompts: PromptBroker,
    ) -> None:
        self._table = table
        self._connections = connections
        self._ask = ask  # asks the agent actor named first, waiting through a restart
        self._tell = tell  # tells it (only messages safe to deliver again)
        self._config = config
        self._models = models
        self._ends = ends
        self._tools = tools
        self._prompts = prompts

    # -- links ------------------------------------------------------------------------------------

    def link_opened(self, conn: Connection) -> None:
        self._connections[conn.info.link_id] = conn

    async def link_closed(self, conn: Connection) -> None:
        """A connection went: fail its browser calls, end its turns, drop its sessions."""
        link_id = conn.info.link_id
        self._connections.pop(link_id, None)
        conn.proxy.connection_lost()
        await self._tell("turn-scheduler", DropLinkTurns(link_id=link_id))
        await self._ask("session-router", DropLink(link_id=link_id))

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
        if conn.info.role == "relay" or not self._config.settings.allow_local_clients:
            return None
        browsers = [c for c in self._connections.values() if c.info.role == "relay"]
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
            old = self._connections.get(result.previous_link)
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

    async def session_end(self, conn: Connection, session_id: str) -> None:
        entry = self._table.lookup(session_id)
        if entry is None or entry.link.link_id != conn.info.link_id:
            return
        await self._tell(
            "turn-scheduler", CancelTurns(session_id=session_id, reason=CancelReason.USER)
        )
        await self._ask(
            "session-router", Unregister(link_id=conn.info.link_id, session_id=session_id)
        )
        # The panel closed: what only this session used goes with it.
        self._tools.forget(session_id)
        self._prompts.forget_session(session_id)
