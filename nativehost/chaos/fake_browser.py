"""The in-memory browser of ``browy chaos``'s fake extension.

:class:`FakeBrowser` answers ``cdp.send`` and ``tab.*`` like the extension does, and records every
page-changing command it *executes* (:class:`Executed`) with whether its answer reached the daemon,
so the harness can check "no page-changing command executed twice" and "every interrupted one was
reported unknown" (:mod:`nativehost.chaos.checks`). Both peers use it:
:class:`nativehost.chaos.peer.ChaosPeer` and :class:`nativehost.chaos.relay_peer.ProcessPeer`.
"""

from __future__ import annotations

import itertools
import sys
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["HOST_REQUESTS", "MAX_TABS", "PAGE_CHANGING_CDP", "Executed", "FakeBrowser"]

#: What the host asks of the browser (answered with ``tool.result``).
HOST_REQUESTS = frozenset(
    {"cdp.send", "tab.new", "tab.close", "tab.list", "tab.getActive", "tab.activate"}
)
#: CDP methods that change the page (protocol.md section 5, "No replay").
PAGE_CHANGING_CDP = frozenset(
    {"Page.navigate", "Page.reload", "Page.close", "Page.navigateToHistoryEntry"}
)


@dataclass(slots=True)
class Executed:
    """One browser command the fake browser carried out."""

    call_id: str
    session_id: str
    op: str
    key: str
    page_changing: bool
    at: float
    fault: str | None = None
    delivered: bool | None = None  # None: handed to the link, fate unknown
    link: str = ""  # "peer/link number": call ids are per connection


MAX_TABS = 40


class FakeBrowser:
    """An in-memory browser: tabs with a URL and a title; every command is recorded."""

    def __init__(self) -> None:
        self.tabs: dict[int, dict[str, Any]] = {
            1: {"tabId": 1, "url": "https://chaos.test/", "title": "Chaos", "windowId": 1}
        }
        self.active = 1
        self._ids = itertools.count(2)
        self.executed: list[Executed] = []  # page-changing commands
        self.reads = 0  # other commands

    def _record(self, rec: Executed) -> None:
        if rec.page_changing:  # what the invariants look at; the rest is only counted
            self.executed.append(rec)
        else:
            self.reads += 1

    def _info(self, tab_id: int) -> dict[str, Any]:
        return {**self.tabs[tab_id], "active": tab_id == self.active}

    def execute(self, msg: dict[str, Any]) -> tuple[Executed, bool, Any]:
        """Carry out one host request; returns (its record, ok, result or error text). The
        words its records repeat (session ids, operations) are interned: a soak keeps one
        record per page-changing command."""
        kind = sys.intern(str(msg.get("type")))
        call_id = str(msg.get("callId"))
        sid = sys.intern(str(msg.get("sessionId")))
        now = time.monotonic()
        if kind == "cdp.send":
            method = sys.intern(str(msg.get("method")))
            changing = method in PAGE_CHANGING_CDP or method.startswith("Input.")
            params = msg.get("params") or {}
            rec = Executed(call_id, sid, method, str(params.get("url", "")), changing, now)
            self._record(rec)
            tab_id = msg.get("tabId")
            if method == "Page.close" and isinstance(tab_id, int):
                self.tabs.pop(tab_id, None)
                return rec, True, {"tabId": tab_id, "result": {}}
            if changing:
                return rec, True, {"tabId": tab_id, "result": {}}
            return rec, False, f"{method} is not supported by the chaos browser"
        changing = kind in ("tab.new", "tab.close")
        key = str(msg.get("url") or msg.get("tabId") or "")
        rec = Executed(call_id, sid, kind, key, changing, now)
        self._record(rec)
        if kind == "tab.new":
            tab_id = next(self._ids)
            self.tabs[tab_id] = {"tabId": tab_id, "url": key, "title": key, "windowId": 1}
            while len(self.tabs) > MAX_TABS:  # the user closes old tabs, as people do
                self.tabs.pop(next(iter(self.tabs)))
            if msg.get("active", True) is not False:
                self.active = tab_id
            return rec, True, self._info(tab_id)
        if kind == "tab.close":
            self.tabs.pop(int(msg.get("tabId") or 0), None)
            return rec, True, None
        if kind == "tab.list":
            return rec, True, [self._info(t) for t in self.tabs]
        if kind == "tab.getActive":
            if self.active not in self.tabs:
                self.active = next(iter(self.tabs), 0)
            return rec, True, self._info(self.active) if self.active else None
        if kind == "tab.activate":
            tab_id = int(msg.get("tabId") or 0)
            if tab_id not in self.tabs:
                return rec, False, "No tab with given id"
            self.active = tab_id
            return rec, True, self._info(tab_id)
        return rec, False, f"{kind} is not supported"
