"""The live links as the agent sees them, and where a session's output goes.

- :class:`LinkHandle`: what the agent may do with one link — read its :class:`ConnectionInfo`,
  write to it (:class:`~actors.link.link_writer.LinkWriter`), call its browser
  (:class:`~actors.browser.tabs.BrowserCalls` over the link's CDPProxy) — and when it was last
  active. The Connection actor makes one when it starts and hands it to
  :meth:`actors.agent.sessions.Sessions.link_opened`.
- :class:`Links`: the handles by link id; which browser a local client drives.
- :class:`Outbox`: session-scoped output goes to the session's *current* connection, looked up
  in the route table at every send, so it never goes where the session is not registered
  (protocol.md section 3b, "Routing").
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from pydantic import BaseModel

from actors.agent.route_table import RouteTable
from actors.browser.tabs import BrowserCalls
from actors.link.link_writer import ConnectionInfo, LinkWriter

__all__ = ["LinkHandle", "Links", "Outbox"]


@dataclass(slots=True, kw_only=True)
class LinkHandle:
    """One live link: a browser connection through a relay, or a local client (CLI, MCP)."""

    info: ConnectionInfo
    writer: LinkWriter
    calls: BrowserCalls
    last_active: float = field(default_factory=time.monotonic)

    @property
    def link_id(self) -> int:
        return self.info.link_id

    @property
    def is_browser(self) -> bool:
        return self.info.role == "relay"

    async def send(self, msg: BaseModel) -> bool:
        return await self.writer.send(msg)


class Links:
    """The live links by id (plain data; the Connection actors add and remove themselves)."""

    def __init__(self) -> None:
        self._by_id: dict[int, LinkHandle] = {}
        self._browser_came = asyncio.Event()

    def add(self, handle: LinkHandle) -> None:
        self._by_id[handle.link_id] = handle
        if handle.is_browser:
            self._browser_came.set()

    async def wait_browser(self, timeout: float, name: str | None = None) -> LinkHandle | None:
        """The most recent browser connection (of browser *name*, if given), waiting up to
        *timeout* s for one to come (a relay reconnecting after a daemon restart); None if none
        came."""
        try:
            async with asyncio.timeout(timeout):
                while (browser := self.most_recent_browser(name)) is None:
                    self._browser_came.clear()
                    await self._browser_came.wait()
        except TimeoutError:
            return None
        return browser

    def remove(self, link_id: int) -> LinkHandle | None:
        return self._by_id.pop(link_id, None)

    def get(self, link_id: int | None) -> LinkHandle | None:
        return None if link_id is None else self._by_id.get(link_id)

    def all(self) -> list[LinkHandle]:
        return list(self._by_id.values())

    def most_recent_browser(self, name: str | None = None) -> LinkHandle | None:
        """The browser connection a local client drives by default (protocol.md section 6); of
        browser *name* (``chrome``, ``edge``…, as its hello said) if given."""
        browsers = [
            h
            for h in self._by_id.values()
            if h.is_browser and (name is None or h.info.browser == name)
        ]
        return max(browsers, key=lambda h: h.last_active) if browsers else None

    def browser_names(self) -> list[str]:
        """The connected browsers, by name ("" for one that did not say)."""
        return [h.info.browser for h in self._by_id.values() if h.is_browser]

    def __len__(self) -> int:
        return len(self._by_id)


class Outbox:
    """Sends session-scoped output to the session's current connection, if it has one."""

    def __init__(self, table: RouteTable, links: Links) -> None:
        self._table = table
        self._links = links

    def link_of(self, session_id: str) -> LinkHandle | None:
        entry = self._table.lookup(session_id)
        return None if entry is None else self._links.get(entry.link.link_id)

    async def emit(self, session_id: str, msg: BaseModel) -> bool:
        """False when it could not be delivered (the session is registered nowhere, or its
        connection is gone): the journal still has it."""
        handle = self.link_of(session_id)
        if handle is None:
            return False
        return await handle.send(msg)
