"""The MCP clients driving a browser: their own tabs, and what the browser's panels show of them.

An MCP client (``browy mcp``) works in tabs of its own — the tabs it opened (``new_tab``, in
the background) and the tabs the user handed it from the side panel — and reads another tab of
the user's only after the user allowed that tab
(:meth:`actors.agent.asking.UserAsking.tab_consent`).

Each v2 panel of a browser connection that speaks ``clients`` (hello capability) gets
``clients.list`` whenever that browser's clients change: who is connected, whether a call is
running, which tabs it holds. From the panel the user can stop a client (``client.stop``: its
running call is cancelled — ``unknown`` if it was changing the page, never repeated — and it
must be allowed again) or hand it a tab (``client.hand_tab``).

One instance per daemon (:func:`actors.agent.agent.build_agent`); plain data plus the sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.agent.asking import UserAsking
from actors.agent.links import LinkHandle, Links
from actors.agent.route_table import RouteTable
from messages.wire_clients import ClientInfo, ClientsList

__all__ = ["CLIENTS_CAPABILITY", "ClientRecord", "Clients"]

#: The hello capability of a browser connection whose panels list clients.
CLIENTS_CAPABILITY = "clients"


@dataclass(slots=True)
class ClientRecord:
    session_id: str
    name: str
    link_id: int
    browser_link_id: int
    tabs: set[int] = field(default_factory=set)
    busy: bool = False


class Clients:
    def __init__(self, *, table: RouteTable, links: Links, asking: UserAsking) -> None:
        self._table = table
        self._links = links
        self._asking = asking
        self._by_session: dict[str, ClientRecord] = {}

    # -- who is bound where -----------------------------------------------------------------

    def get(self, session_id: str) -> ClientRecord | None:
        return self._by_session.get(session_id)

    async def bound(self, session_id: str, name: str, link_id: int, browser_link_id: int) -> None:
        """An MCP client's session may now drive *browser_link_id*."""
        old = self._by_session.get(session_id)
        tabs = old.tabs if old is not None and old.browser_link_id == browser_link_id else set()
        self._by_session[session_id] = ClientRecord(
            session_id=session_id,
            name=name,
            link_id=link_id,
            browser_link_id=browser_link_id,
            tabs=tabs,
        )
        if old is not None and old.browser_link_id != browser_link_id:
            await self.publish(old.browser_link_id)
        await self.publish(browser_link_id)

    async def gone(self, session_id: str) -> None:
        """The client's session ended, its link went, or the user stopped it."""
        record = self._by_session.pop(session_id, None)
        if record is not None:
            await self.publish(record.browser_link_id)

    def of_link(self, link_id: int) -> list[str]:
        """The client sessions of a client link, or bound to a browser link."""
        return [
            r.session_id
            for r in self._by_session.values()
            if link_id in (r.link_id, r.browser_link_id)
        ]

    # -- tabs -----------------------------------------------------------------------------------

    def owns(self, session_id: str, tab_id: int) -> bool:
        record = self._by_session.get(session_id)
        return record is not None and tab_id in record.tabs

    async def add_tab(self, session_id: str, tab_id: int) -> None:
        record = self._by_session.get(session_id)
        if record is not None and tab_id not in record.tabs:
            record.tabs.add(tab_id)
            await self.publish(record.browser_link_id)

    def drop_tab(self, session_id: str, tab_id: int) -> None:
        """The tab closed (seen at the client's next call)."""
        record = self._by_session.get(session_id)
        if record is not None:
            record.tabs.discard(tab_id)

    async def take_tab(self, session_id: str, tab_id: int) -> bool:
        """The user took the tab back; True if it was the client's."""
        record = self._by_session.get(session_id)
        if record is None or tab_id not in record.tabs:
            return False
        record.tabs.discard(tab_id)
        await self.publish(record.browser_link_id)
        return True

    async def ask_for_tab(self, session_id: str, tab_id: int) -> bool:
        """The client wants a tab that is not its own: the browser's user decides (then it is
        its own)."""
        record = self._by_session.get(session_id)
        client = self._links.get(record.link_id) if record is not None else None
        browser = self._links.get(record.browser_link_id) if record is not None else None
        if record is None or client is None or browser is None:
            return False
        if not await self._asking.tab_consent(client, browser, tab_id):
            return False
        await self.add_tab(session_id, tab_id)
        return True

    async def set_busy(self, session_id: str, busy: bool) -> None:
        record = self._by_session.get(session_id)
        if record is not None and record.busy != busy:
            record.busy = busy
            await self.publish(record.browser_link_id)

    # -- what the panels show ---------------------------------------------------------------

    def listing(self, browser_link_id: int) -> list[ClientInfo]:
        return [
            ClientInfo(client_id=r.session_id, name=r.name, busy=r.busy, tabs=sorted(r.tabs))
            for r in self._by_session.values()
            if r.browser_link_id == browser_link_id
        ]

    async def publish(self, browser_link_id: int) -> None:
        """Send the browser's client list to each of its v2 panels that lists clients."""
        browser = self._links.get(browser_link_id)
        if browser is None or not _lists_clients(browser):
            return
        listing = self.listing(browser_link_id)
        for entry in self._table.sessions_of(browser_link_id):
            if entry.session_id.startswith(("sp-", "dt-")):
                await browser.send(ClientsList(session_id=entry.session_id, clients=listing))

    async def show_to(self, browser: LinkHandle, panel_session_id: str) -> None:
        """A panel (re)registered: tell it the clients of its browser."""
        if _lists_clients(browser):
            listing = self.listing(browser.link_id)
            await browser.send(ClientsList(session_id=panel_session_id, clients=listing))


def _lists_clients(browser: LinkHandle) -> bool:
    return browser.info.protocol >= 2 and CLIENTS_CAPABILITY in browser.info.capabilities
