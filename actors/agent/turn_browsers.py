"""Which tab a turn drives: pinned at its start, given back at its end.

- **browser_for** pins the (connection, tab) a turn works on
  (:class:`actors.tools.pinned_tab.TurnBrowser`): the session's own browser connection, or — for a
  local client's session (CLI, MCP) — the browser the route table bound it to; there a turn
  drives a tab only after that browser's user allowed it (``take_control``,
  :mod:`actors.agent.asking`).
- **release_control**: the turn ended; v2 ``control.release`` through the CDPProxy of the browser
  connection it drove (protocol.md section 4).
- **keep**: a local client's call is a turn of its own, but the client works on: its tab and its
  snapshot's element numbers are kept between its calls (while the tab is open), so
  ``inspect_page`` then ``click_index`` in the next call acts on the same page.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.agent.asking import UserAsking
from actors.agent.clients import Clients
from actors.agent.links import LinkHandle, Links
from actors.agent.route_table import RouteTable
from actors.agent.turn_queue import TurnTicket
from actors.browser.tabs import ProxyTabs
from actors.tools.pinned_tab import TurnBrowser
from messages.errors import BrowyError

__all__ = ["TurnBrowsers"]


def _groups(browser: LinkHandle) -> bool:
    """Does this browser connection put tabs in named groups (``tab.groups``, v2)?"""
    return browser.info.protocol >= 2 and "tab.groups" in browser.info.capabilities


@dataclass(slots=True)
class _Kept:
    """A local client's tab and snapshot tokens between its calls."""

    tab_id: int
    tokens: dict[int, str] = field(default_factory=dict)
    secret_indices: dict[int, set[int]] = field(default_factory=dict)
    frame_tokens: dict[int, dict[int, str]] = field(default_factory=dict)


class TurnBrowsers:
    def __init__(
        self, *, table: RouteTable, links: Links, asking: UserAsking, clients: Clients
    ) -> None:
        self._table = table
        self._links = links
        self._asking = asking
        self._clients = clients
        self._kept: dict[str, _Kept] = {}

    async def browser_for(self, ticket: TurnTicket) -> TurnBrowser | None:
        """Pin the (connection, tab) this turn works on, or None if it may not drive tabs."""
        entry = self._table.lookup(ticket.session_id)
        if entry is None or not entry.can_drive_tabs:
            return None
        link = self._links.get(entry.browser_link_id or ticket.link_id)
        if link is None:
            return None
        client = self._clients.get(ticket.session_id)  # an MCP client: its own tabs only
        tabs = ProxyTabs(
            link.calls,
            ticket.session_id,
            ticket.turn_id,
            window_id=entry.window_id,
            group=client.name if client is not None and _groups(link) else None,
            child_sessions=link.info.target_sessions,
            reports_downloads=link.info.reports_downloads,
        )
        kept = await self._kept_tab(ticket.session_id, tabs) if entry.browser_link_id else None
        if client is not None and kept is not None and kept.tab_id not in client.tabs:
            kept = None
        browser = await TurnBrowser.pin(
            tabs=tabs,
            session_id=ticket.session_id,
            owner_id=ticket.turn_id,
            inspected_tab_id=kept.tab_id if kept is not None else entry.inspected_tab_id,
            window_id=entry.window_id,
            allow_file=False,
            active_fallback=client is None,
        )
        if kept is not None:
            browser.tokens.update(kept.tokens)
            browser.secret_indices.update({k: set(v) for k, v in kept.secret_indices.items()})
            browser.frame_tokens.update({k: dict(v) for k, v in kept.frame_tokens.items()})
        if client is None and entry.browser_link_id is not None and browser.tab_id is not None:
            await self._asking.take_control(entry.link.link_id, link, browser.tab_id)
        return browser

    async def _kept_tab(self, session_id: str, tabs: ProxyTabs) -> _Kept | None:
        kept = self._kept.get(session_id)
        if kept is None:
            return None
        try:
            open_tabs = {t.get("tabId") for t in await tabs.list()}
        except BrowyError:
            return kept  # cannot tell: the tab's own calls will say if it is gone
        if kept.tab_id not in open_tabs:
            del self._kept[session_id]  # closed: the next call starts on the active tab
            self._clients.drop_tab(session_id, kept.tab_id)
            return None
        return kept

    def keep(self, session_id: str, browser: TurnBrowser | None) -> None:
        """A local client's call ended: keep its tab and snapshot tokens for its next call (not
        if it was stopped meanwhile: a stopped client starts again with no tab)."""
        if browser is None or browser.tab_id is None or self._clients.get(session_id) is None:
            return
        self._kept[session_id] = _Kept(
            tab_id=browser.tab_id,
            tokens=dict(browser.tokens),
            secret_indices={k: set(v) for k, v in browser.secret_indices.items()},
            frame_tokens={k: dict(v) for k, v in browser.frame_tokens.items()},
        )

    def kept_tab(self, session_id: str) -> int | None:
        """The tab a local client's next call starts on, if one is kept."""
        kept = self._kept.get(session_id)
        return kept.tab_id if kept is not None else None

    def resume(self, session_id: str, tab_id: int) -> None:
        """A local client came back (after a daemon restart) saying which tab it worked in."""
        self._kept.setdefault(session_id, _Kept(tab_id=tab_id))

    def hand(self, session_id: str, tab_id: int) -> None:
        """The user handed the client this tab: its next call works there."""
        self._kept[session_id] = _Kept(tab_id=tab_id)

    def forget(self, session_id: str) -> None:
        self._kept.pop(session_id, None)

    def browser_link(self, ticket: TurnTicket) -> int:
        """The browser connection this turn's tools act on (its own, or a local client's)."""
        entry = self._table.lookup(ticket.session_id)
        return (entry.browser_link_id if entry else None) or ticket.link_id

    async def release_control(self, ticket: TurnTicket) -> None:
        """v2 ``control.release`` to the browser connection the turn drove (section 4)."""
        link = self._links.get(self.browser_link(ticket))
        if link is not None:
            await link.calls.release(ticket.turn_id)
