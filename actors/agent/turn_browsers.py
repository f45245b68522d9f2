"""Which tab a turn drives: pinned at its start, given back at its end.

- **browser_for** pins the (connection, tab) a turn works on
  (:class:`actors.tools.pinned_tab.TurnBrowser`): the session's own browser connection, or — for a
  local client's session (CLI, MCP) — the browser the route table bound it to; there a turn
  drives a tab only after that browser's user allowed it (``take_control``,
  :mod:`actors.agent.asking`).
- **release_control**: the turn ended; v2 ``control.release`` through the CDPProxy of the browser
  connection it drove (protocol.md section 4).
"""

from __future__ import annotations

from actors.agent.asking import UserAsking
from actors.agent.links import Links
from actors.agent.route_table import RouteTable
from actors.agent.turn_queue import TurnTicket
from actors.browser.tabs import ProxyTabs
from actors.tools.pinned_tab import TurnBrowser

__all__ = ["TurnBrowsers"]


class TurnBrowsers:
    def __init__(self, *, table: RouteTable, links: Links, asking: UserAsking) -> None:
        self._table = table
        self._links = links
        self._asking = asking

    async def browser_for(self, ticket: TurnTicket) -> TurnBrowser | None:
        """Pin the (connection, tab) this turn works on, or None if it may not drive tabs."""
        entry = self._table.lookup(ticket.session_id)
        if entry is None or not entry.can_drive_tabs:
            return None
        link = self._links.get(entry.browser_link_id or ticket.link_id)
        if link is None:
            return None
        tabs = ProxyTabs(link.calls, ticket.session_id, ticket.turn_id, window_id=entry.window_id)
        browser = await TurnBrowser.pin(
            tabs=tabs,
            session_id=ticket.session_id,
            owner_id=ticket.turn_id,
            inspected_tab_id=entry.inspected_tab_id,
            window_id=entry.window_id,
            allow_file=False,
        )
        if entry.browser_link_id is not None and browser.tab_id is not None:
            await self._asking.take_control(entry.link.link_id, link, browser.tab_id)
        return browser

    def browser_link(self, ticket: TurnTicket) -> int:
        """The browser connection this turn's tools act on (its own, or a local client's)."""
        entry = self._table.lookup(ticket.session_id)
        return (entry.browser_link_id if entry else None) or ticket.link_id

    async def release_control(self, ticket: TurnTicket) -> None:
        """v2 ``control.release`` to the browser connection the turn drove (section 4)."""
        link = self._links.get(self.browser_link(ticket))
        if link is not None:
            await link.calls.release(ticket.turn_id)
