"""The tab a turn drives, pinned at its start, and what the tools remember about its documents.

:class:`TurnBrowser` pins the (connection, tab) a turn works on at its start — the session's
inspected tab, else the active tab (of the panel's window in v2) — and keeps it unless the model
switches tabs (protocol.md section 3b). It remembers the document token of the last snapshot of
each tab, so ``click_index`` and friends act on the document the model saw, or fail with
``STALE_REF`` (protocol.md section 5), and which element numbers are secret fields (so what is
typed into them is masked: :mod:`actors.tools.masking`).

Before the tools act on a tab it enables the ``Page`` domain there
(:meth:`TurnBrowser.watch_dialogs`): only a client that had it enabled when a JavaScript dialog
opened hears of the dialog and can answer it (:mod:`actors.tools.dialogs`).

It reaches the browser only through the tools' seams (``TabOps``, ``CdpSession``): in the daemon
those are :mod:`actors.browser.tabs` over the connection's CDPProxy.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from actors.tools.dialogs import DialogOpen, blocked_snapshot
from actors.tools.page import PageTools, Snapshot
from actors.tools.shared import untrusted
from actors.tools.tool_def import TabOps, TabSession, ToolError
from messages.errors import BrowyError, ErrorCode

__all__ = ["TurnBrowser"]

#: How often ``Page.enable`` is sent again to a tab a turn keeps using: the extension detaches a
#: tab after 60 s without calls, and a new attachment starts with no domain enabled.
WATCH_EVERY_S = 30.0
#: ``Page.enable`` waits on the page: a page that a dialog already blocks never answers it.
WATCH_TIMEOUT_S = 3.0

_LINE = re.compile(r"^\*?\[(\d+)\] (\S+)(.*)$")


def _secret_lines(text: str) -> set[int]:
    """Indices of secret fields in a snapshot (role ``password``, or the ``secret`` state)."""
    found: set[int] = set()
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and (m.group(2) == "password" or " secret" in m.group(3)):
            found.add(int(m.group(1)))
    return found


@dataclass(slots=True)
class TurnBrowser:
    """The tab a turn drives; ``tabs`` are the session's ``tab.*`` operations (its browser
    connection's, in the daemon: :class:`actors.browser.tabs.ProxyTabs`)."""

    tabs: TabOps
    session_id: str
    owner_id: str
    tab_id: int | None
    window_id: int | None
    allow_file: bool = False
    _pages: dict[int, PageTools] = field(default_factory=dict)
    tokens: dict[int, str] = field(default_factory=dict)
    #: Per tab: indices of secret fields (password, card number, CVC) of the current document.
    secret_indices: dict[int, set[int]] = field(default_factory=dict)
    #: Per tab: the document token of each cross-origin frame's last snapshot (frame slot ->
    #: token; :mod:`actors.tools.frames`).
    frame_tokens: dict[int, dict[int, str]] = field(default_factory=dict)
    note: str | None = None
    #: Per tab: when ``Page.enable`` was last sent (``time.monotonic()``).
    _watched: dict[int, float] = field(default_factory=dict)

    @classmethod
    async def pin(
        cls,
        *,
        tabs: TabOps,
        session_id: str,
        owner_id: str,
        inspected_tab_id: int | None,
        window_id: int | None,
        allow_file: bool = False,
        active_fallback: bool = True,
    ) -> TurnBrowser:
        """The turn's browser on *inspected_tab_id*, else — with *active_fallback* — on the
        active tab (an MCP client has none: it works in tabs of its own)."""
        browser = cls(
            tabs=tabs,
            session_id=session_id,
            owner_id=owner_id,
            tab_id=inspected_tab_id,
            window_id=window_id,
            allow_file=allow_file,
        )
        if browser.tab_id is None and active_fallback:
            try:
                active = await browser.tabs.active()
            except BrowyError as exc:
                browser.note = f"could not find the active tab: {exc.wire_message}"
                active = None
            if active is not None and isinstance(active.get("tabId"), int):
                browser.tab_id = int(active["tabId"])
        return browser

    def session(self) -> TabSession:
        if self.tab_id is None:
            raise ToolError("no tab is open for this session", code=ErrorCode.NO_CAPABILITY)
        return self.tabs.session(self.tab_id)

    def page(self) -> PageTools:
        session = self.session()
        assert self.tab_id is not None
        page = self._pages.get(self.tab_id)
        if page is None:
            # One PageTools per tab keeps its isolated-world context id cached across calls.
            page = PageTools(
                session,
                allow_file=self.allow_file,
                frame_tokens=self.frame_tokens.setdefault(self.tab_id, {}),
            )
            self._pages[self.tab_id] = page
        return page

    async def watch_dialogs(self) -> bool:
        """Enable ``Page`` on the pinned tab (again after :data:`WATCH_EVERY_S`), so a dialog
        that opens is reported to the host, which alone can then answer it. False when the page
        did not answer in :data:`WATCH_TIMEOUT_S` (a dialog nobody can answer, or a busy page)."""
        tab = self.tab_id
        now = time.monotonic()
        if tab is None or now - self._watched.get(tab, -WATCH_EVERY_S) < WATCH_EVERY_S:
            return True
        try:
            await self.session().send("Page.enable", timeout=WATCH_TIMEOUT_S)
        except DialogOpen:
            pass  # one is open and known: the domain is on
        except BrowyError as exc:
            # A page Browy may not drive (the tool will say), or one that does not answer.
            return exc.code is not ErrorCode.REQUEST_TIMEOUT
        self._watched[tab] = now
        return True

    def switch(self, tab_id: int) -> None:
        self.tab_id = tab_id

    def token(self) -> str:
        if self.tab_id is None or self.tab_id not in self.tokens:
            raise ToolError(
                "call inspect_page first: element numbers come from a snapshot",
                code=ErrorCode.STALE_REF,
            )
        return self.tokens[self.tab_id]

    async def snapshot(self, **kwargs: Any) -> Snapshot:
        snap = await self.page().inspect_page(**kwargs)
        assert self.tab_id is not None
        if self.tokens.get(self.tab_id) != snap.doc_token:
            self.secret_indices[self.tab_id] = set()
            # Frames of another top document: the slots' tokens kept are not its frames'.
            kept = self.frame_tokens.setdefault(self.tab_id, {})
            fresh = {k: v for k, v in kept.items() if f"-- frame {k}:" in snap.text}
            kept.clear()
            kept.update(fresh)
        self.tokens[self.tab_id] = snap.doc_token
        self.secret_indices.setdefault(self.tab_id, set()).update(_secret_lines(snap.text))
        return snap

    def is_secret(self, index: int) -> bool:
        """Is element [index] of the current document a secret field (as last seen)?"""
        return self.tab_id is not None and index in self.secret_indices.get(self.tab_id, set())

    async def origin(self) -> str:
        """The pinned tab's origin (for approvals and per-site permissions); "" if unknown."""
        try:
            result = await self.session().send(
                "Runtime.evaluate", {"expression": "location.origin", "returnByValue": True}
            )
        except DialogOpen as exc:
            parts = urllib.parse.urlsplit(exc.dialog.url)  # a dialog blocks the page
            return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else ""
        except BrowyError:
            return ""
        value = result.get("result", {}).get("value")
        return value if isinstance(value, str) and value != "null" else ""

    async def context_block(self) -> str:
        """The browser context sent with the user's words: the tab and a fresh snapshot."""
        if self.tab_id is None:
            return "Browser: no tab is available." + (f" ({self.note})" if self.note else "")
        await self.watch_dialogs()
        try:
            snap = await self.snapshot()
        except DialogOpen as exc:
            text = await blocked_snapshot(self.session(), exc.dialog)
            return "Browser: the user's active tab. Snapshot:\n" + untrusted(text)
        except BrowyError as exc:
            if exc.code is ErrorCode.NOT_ALLOWED_URL:
                return (
                    "Browser: the active tab shows a browser page that Browy may not read or "
                    "drive. Open or switch to a web page (navigate / new_tab / switch_tab)."
                )
            return f"Browser: the active tab could not be read ({exc.wire_message})."
        return "Browser: the user's active tab. Snapshot:\n" + untrusted(snap.text)
