"""What the CDPProxy is told, and the plain data it keeps across restarts.

The caller's :class:`CallTicket` (its reply future and the ticket rule's two flags, see
:mod:`actors.browser.cdp_proxy`), the proxy's mailbox messages (:data:`ProxyMsg`) and
:class:`Subscriptions` — the link's CDP event subscribers and its open JavaScript dialogs
(:class:`actors.tools.dialogs.DialogTable`) and the downloads the browser reported
(:class:`actors.browser.downloads.DownloadTable`), handed to each CDPProxy incarnation.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actors.browser.call_table import CallState
from actors.browser.downloads import DownloadTable, DownloadWaiter
from actors.tools.dialogs import DialogTable
from messages.wire_inbound import CdpEvent, DownloadDone, DownloadStarted, ToolResult

__all__ = [
    "TAB_OPS",
    "Answered",
    "CallTicket",
    "ConnectionLost",
    "DownloadArrived",
    "DownloadQuery",
    "DownloadSaved",
    "EventArrived",
    "EventCallback",
    "GetDialog",
    "GiveUp",
    "OpenCall",
    "ProxyMsg",
    "ReleaseControl",
    "Subscribe",
    "Subscriptions",
    "Unsubscribe",
]

EventCallback = Callable[[CdpEvent], None]

#: The ``tab.*`` operations (protocol.md sections 3-4).
TAB_OPS = frozenset({"tab.new", "tab.activate", "tab.list", "tab.getActive", "tab.close"})


class CallTicket:
    """A caller's handle on one browser call: its reply future and the ticket rule's two flags."""

    __slots__ = ("abandoned", "call_id", "deadline", "future", "page_changing", "sent")

    def __init__(self, future: asyncio.Future[ToolResult], *, deadline: float, page_changing: bool):
        self.future = future
        self.deadline = deadline  # loop time; a call opened later is not sent
        self.page_changing = page_changing
        self.call_id: str | None = None
        self.sent = False
        self.abandoned = False

    def fail(self, exc: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(exc)
            self.future.exception()  # retrieved: the caller may have stopped waiting


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenCall:
    """Send one ``cdp.send`` (``op`` is the CDP method) or ``tab.*`` (``op`` is the type)."""

    ticket: CallTicket
    session_id: str
    op: str
    tab_id: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    owner_id: str | None = None
    #: A child session of the tab (``cdp.send.targetSessionId``; v2 ``cdp.targetSessions``).
    target_session: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GiveUp:
    """The caller stopped waiting (``TIMED_OUT`` or ``CANCELLED``): settle it, v2 ``cdp.cancel``."""

    ticket: CallTicket
    state: CallState


@dataclass(frozen=True, slots=True, kw_only=True)
class Answered:
    """The extension's ``tool.result`` arrived."""

    result: ToolResult


@dataclass(frozen=True, slots=True, kw_only=True)
class EventArrived:
    """A ``cdp.event`` arrived."""

    event: CdpEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscribe:
    """Call ``callback`` for each event of ``session_id`` (and ``tab_id``; None = any tab).
    Answered with a token for :class:`Unsubscribe`."""

    session_id: str
    tab_id: int | None
    callback: EventCallback


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsubscribe:
    token: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseControl:
    """The turn ``owner_id`` ended: v2 ``control.release`` (settles nothing); v1: nothing."""

    owner_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GetDialog:
    """Which JavaScript dialog is open on ``tab_id`` (answered with an ``OpenDialog`` or None)."""

    tab_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DownloadArrived:
    """A ``download.started`` / ``download.done`` arrived (v2, capability ``downloads``)."""

    download: DownloadStarted | DownloadDone


@dataclass(frozen=True, slots=True, kw_only=True)
class DownloadQuery:
    """Ask the link's :class:`~actors.browser.downloads.DownloadTable`: ``op`` ``"mark"``
    (answered with an int), ``"since"`` (the records after ``after``), ``"wait"`` (register
    ``waiter``, see :meth:`DownloadTable.wait`) or ``"forget"`` (drop ``waiter``)."""

    op: str
    after: int = 0
    download_id: int | None = None
    waiter: DownloadWaiter | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DownloadSaved:
    """Download ``download_id`` was copied into the sandbox at ``path``."""

    download_id: int
    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLost:
    """The link went away: fail every pending call; later calls fail at once (section 5)."""


ProxyMsg = (
    OpenCall
    | GiveUp
    | Answered
    | EventArrived
    | Subscribe
    | Unsubscribe
    | ReleaseControl
    | GetDialog
    | DownloadArrived
    | DownloadQuery
    | DownloadSaved
    | ConnectionLost
)


class Subscriptions:
    """The link's CDP event subscribers and open dialogs, kept across CDPProxy restarts. Plain
    data."""

    def __init__(self) -> None:
        self._tokens = itertools.count(1)
        self.entries: dict[int, tuple[str, int | None, EventCallback]] = {}
        self.dialogs = DialogTable()
        self.downloads = DownloadTable()

    def add(self, session_id: str, tab_id: int | None, callback: EventCallback) -> int:
        token = next(self._tokens)
        self.entries[token] = (session_id, tab_id, callback)
        return token

    def remove(self, token: int) -> None:
        self.entries.pop(token, None)

    def matching(self, event: CdpEvent) -> list[EventCallback]:
        return [
            cb
            for sid, tab, cb in self.entries.values()
            if sid == event.session_id and (tab is None or tab == event.tab_id)
        ]
