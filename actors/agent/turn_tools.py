"""What a turn reaches for in the browser and on the host, as the agent hub hands it out.

- **browser_for** pins the (connection, tab) a turn works on
  (:class:`actors.browser.tool_runner.TurnBrowser`); a local client's turn drives a browser's tab
  only after that browser's user allowed it (``take_control``, :mod:`actors.agent.asking`), and
  gives it back with **release_control**.
- **tool_definitions** and **run_tool**: the tools a session may use — the panel's toggles plus the
  host config's ``disabled_tools`` — run by the :class:`actors.browser.tool_runner.ToolRunner`, with
  approvals and ``ask_user`` (v2) asked through :class:`actors.agent.asking.UserAsking`.
- **tab_lock** serializes page actions on one tab, across turns and sessions.

One instance per daemon, owned by the hub (:class:`supervisors.agent.AgentHub`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from actors.agent.asking import UserAsking
from actors.agent.session_router import RouteTable
from actors.agent.turn_scheduler import TurnTicket
from actors.browser.tool_runner import AskUserArgs, ToolResultView, ToolRunner, TurnBrowser
from actors.tools.registry import ApprovalRequestInfo
from messages.wire_outbound import ControlRelease

if TYPE_CHECKING:
    from actors.agent.connection import Connection

__all__ = ["TurnTools"]


class TurnTools:
    def __init__(
        self,
        *,
        table: RouteTable,
        connections: dict[int, Connection],
        tools: ToolRunner,
        asking: UserAsking,
        disabled: Callable[[], frozenset[str]],
    ) -> None:
        self._table = table
        self._connections = connections
        self._tools = tools
        self._asking = asking
        self._disabled = disabled  # the tools the host's config disables (it may change)
        # One lock per (link, tab) while someone holds it: weak values, so the locks of closed
        # tabs and gone links do not pile up in a long-running daemon.
        self.tab_locks: weakref.WeakValueDictionary[tuple[int, int], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    async def browser_for(self, ticket: TurnTicket) -> TurnBrowser | None:
        """Pin the (connection, tab) this turn works on, or None if it may not drive tabs."""
        entry = self._table.lookup(ticket.session_id)
        if entry is None or not entry.can_drive_tabs:
            return None
        conn = self._connections.get(entry.browser_link_id or ticket.link_id)
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
            await self._asking.take_control(entry.link.link_id, conn, browser.tab_id)
        return browser

    async def release_control(self, ticket: TurnTicket) -> None:
        """v2 ``control.release`` to the browser connection the turn drove (section 4)."""
        entry = self._table.lookup(ticket.session_id)
        link = (entry.browser_link_id if entry else None) or ticket.link_id
        conn = self._connections.get(link)
        if conn is not None and conn.info.protocol >= 2:
            await conn.send(ControlRelease(owner_id=ticket.turn_id))

    def tool_definitions(self, session_id: str, browser: bool) -> list[dict[str, Any]]:
        entry = self._table.lookup(session_id)
        disabled = (entry.disabled_tools if entry else frozenset()) | self._disabled()
        host = entry.enabled_host_tools if entry else frozenset()
        protocol = entry.link.protocol if entry else 1
        return self._tools.definitions(
            browser=browser, disabled=disabled, enabled_host=host, protocol=protocol
        )

    def tab_lock(self, link_id: int, tab_id: int) -> asyncio.Lock:
        """The lock that serializes page actions on one tab (the caller keeps it while in use)."""
        lock = self.tab_locks.get((link_id, tab_id))
        if lock is None:
            lock = self.tab_locks[(link_id, tab_id)] = asyncio.Lock()
        return lock

    async def run_tool(
        self,
        ticket: TurnTicket,
        browser: TurnBrowser | None,
        name: str,
        args: dict[str, Any],
        call_id: str | None = None,
    ) -> ToolResultView:
        entry = self._table.lookup(ticket.session_id)
        disabled = (entry.disabled_tools if entry else frozenset()) | self._disabled()
        host = entry.enabled_host_tools if entry else frozenset()
        browser_link = (entry.browser_link_id if entry else None) or ticket.link_id
        lock: Callable[[int], asyncio.Lock] = lambda tab: self.tab_lock(browser_link, tab)  # noqa: E731

        async def approve(info: ApprovalRequestInfo) -> bool:
            return await self._asking.approve(ticket, browser, info)

        async def ask(args: AskUserArgs) -> tuple[Any, bool]:
            return await self._asking.ask_user(ticket, args)

        return await self._tools.run(
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
