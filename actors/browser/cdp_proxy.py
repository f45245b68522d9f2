"""CDPProxy: the actor that owns one connection's browser calls and its CDP event fan-out.

One per connection (architecture.md section 2), a child of that link's supervisor. It owns:

- the connection's :class:`~actors.browser.call_table.CallTable` — every ``cdp.send`` / ``tab.*``
  it sends is opened there first and settles exactly once (answered, timed out, cancelled, lost);
- the v2 ``cdp.cancel`` of a call the host gave up on, and ``control.release`` when a turn ends;
- the fan-out of ``cdp.event`` to the tools that subscribed (console and network buffers).

Callers (:mod:`actors.browser.tabs`) talk to it by messages only: :class:`OpenCall`,
:class:`GiveUp`, :class:`Subscribe` / :class:`Unsubscribe`, :class:`ReleaseControl`; the
Connection tells it :class:`Answered` and :class:`EventArrived`. The one thing that stays off the
mailbox is each call's reply: the caller hands in a :class:`CallTicket` (its future), and the proxy
settles it — a second mailbox hop per answer would buy nothing.

**The ticket rule** (why no call is ever reported "not sent" after it was sent): the caller marks
its ticket ``abandoned`` before it reads ``sent``; the proxy sets ``sent`` just before it writes
the frame, and never writes the frame of an abandoned ticket. Both run on the event loop, so the
caller's verdict — ``error`` (never sent) or ``unknown`` (sent, no answer) — is always right.

**Restarts** (state rebuilt): a crashed incarnation fails every call it held — a page-changing one
with outcome ``unknown``, never re-sent (protocol.md section 5, "No replay") — and the next one
starts with an empty table whose call ids carry a new prefix, so a late answer meant for the old
incarnation is dropped as unknown. The event subscriptions are the link's (:class:`Subscriptions`,
handed in at construction), so they survive a restart.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from actors.browser.call_table import CallState, CallTable
from actors.link.link_writer import ConnectionInfo, LinkWriter
from actors.runtime.actor import Actor
from actors.runtime.ref import Overflow
from actors.tools.cdp import BrowserCallError
from messages.errors import ErrorCode, FrameTooLarge, LocalError
from messages.wire_browser import (
    CdpCancel,
    CdpSend,
    ControlRelease,
    TabActivate,
    TabClose,
    TabGetActive,
    TabList,
    TabNew,
)
from messages.wire_inbound import CdpEvent, ToolResult

__all__ = [
    "TAB_OPS",
    "Answered",
    "CDPProxy",
    "CallTicket",
    "EventArrived",
    "EventCallback",
    "GiveUp",
    "OpenCall",
    "ProxyMsg",
    "ReleaseControl",
    "Subscribe",
    "Subscriptions",
    "Unsubscribe",
]

log = logging.getLogger(__name__)

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
    | ConnectionLost
)


class Subscriptions:
    """The link's CDP event subscribers, kept across CDPProxy restarts. Plain data."""

    def __init__(self) -> None:
        self._tokens = itertools.count(1)
        self.entries: dict[int, tuple[str, int | None, EventCallback]] = {}

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


class CDPProxy(Actor[ProxyMsg]):
    """Browser calls of one connection (see the module docstring)."""

    mailbox_size = 1024
    overflow = Overflow.WAIT
    _incarnations: ClassVar[itertools.count[int]] = itertools.count(1)

    def __init__(
        self, *, info: ConnectionInfo, writer: LinkWriter, subscriptions: Subscriptions
    ) -> None:
        self._info = info
        self._writer = writer
        self._subs = subscriptions
        # A fresh prefix per incarnation: an answer meant for a crashed one never matches.
        self.table = CallTable(prefix=f"h{next(self._incarnations)}-")
        self._lost = False
        self._background: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        return len(self.table.pending)

    async def handle(self, msg: ProxyMsg) -> Any:
        if isinstance(msg, OpenCall):
            await self._open(msg)
        elif isinstance(msg, Answered):
            self._answered(msg.result)
        elif isinstance(msg, EventArrived):
            self._fan_out(msg.event)
        elif isinstance(msg, GiveUp):
            self._give_up(msg.ticket, msg.state)
        elif isinstance(msg, Subscribe):
            return self._subs.add(msg.session_id, msg.tab_id, msg.callback)
        elif isinstance(msg, Unsubscribe):
            self._subs.remove(msg.token)
        elif isinstance(msg, ReleaseControl):
            if self._info.v2 and not self._lost:
                await self._send_quietly(ControlRelease(owner_id=msg.owner_id))
        elif isinstance(msg, ConnectionLost):
            self._fail_all(ErrorCode.CONNECTION_LOST, "connection lost before an answer")
            self._lost = True
            self._subs.entries.clear()
        return None

    # --- calls ------------------------------------------------------------------------------

    async def _open(self, msg: OpenCall) -> None:
        ticket = msg.ticket
        if ticket.abandoned or asyncio.get_running_loop().time() > ticket.deadline:
            ticket.fail(BrowserCallError(ErrorCode.REQUEST_TIMEOUT, f"{msg.op}: not sent in time"))
            return
        if self._lost:
            ticket.fail(BrowserCallError(ErrorCode.CONNECTION_LOST, "connection already lost"))
            return
        if msg.op == "tab.close" and not self._info.v2:
            # v1 has no tab.close: Page.close on that tab (protocol.md section 3b).
            msg = OpenCall(
                ticket=ticket,
                session_id=msg.session_id,
                op="Page.close",
                tab_id=int(msg.params["tabId"]),
                owner_id=msg.owner_id,
            )
        call = self.table.open(
            session_id=msg.session_id,
            tab_id=msg.tab_id,
            op=msg.op,
            page_changing=ticket.page_changing,
            owner_id=msg.owner_id,
            waiter=ticket,
        )
        ticket.call_id = call.call_id
        try:
            wire = self._wire(msg, call.call_id)
        except (KeyError, TypeError, ValueError, LocalError) as exc:
            self.table.finish(call.call_id, CallState.CANCELLED)
            ticket.fail(BrowserCallError(ErrorCode.INVALID_MESSAGE, f"{msg.op}: {exc}"))
            return
        ticket.sent = True  # from here on the frame may reach the browser
        try:
            sent = await self._writer.send(wire)
        except FrameTooLarge:
            # cdp.send is never trimmed: a command that does not fit fails (section 5).
            ticket.sent = False  # nothing was written
            self.table.finish(call.call_id, CallState.CANCELLED)
            ticket.fail(BrowserCallError(ErrorCode.MESSAGE_TOO_LARGE, f"{msg.op} is too large"))
            return
        if not sent:
            ticket.sent = False  # the link refused it: nothing reached the browser
            self.table.finish(call.call_id, CallState.LOST)
            ticket.fail(BrowserCallError(ErrorCode.CONNECTION_LOST, "could not send"))

    def _wire(self, msg: OpenCall, call_id: str) -> BaseModel:
        v2 = self._info.v2
        owner = msg.owner_id if v2 else None
        common: dict[str, Any] = {
            "session_id": msg.session_id,
            "call_id": call_id,
            "control_owner_id": owner,
        }
        args = msg.params
        if msg.op not in TAB_OPS:
            return CdpSend(**common, tab_id=msg.tab_id, method=msg.op, params=args)
        if msg.op == "tab.new":
            return TabNew(
                **common, url=args.get("url"), active=args.get("active"), group=args.get("group")
            )
        if msg.op == "tab.activate":
            return TabActivate(**common, tab_id=int(args["tabId"]))
        if msg.op == "tab.list":
            return TabList(**common)
        if msg.op == "tab.getActive":
            return TabGetActive(**common, window_id=args.get("windowId") if v2 else None)
        return TabClose(**common, tab_id=int(args["tabId"]))

    def _answered(self, result: ToolResult) -> None:
        """Deliver an answer; late/unknown/cancelled ones are logged and dropped (section 5)."""
        call = self.table.answer(result.call_id, result.session_id)
        if call is None:
            return
        ticket: CallTicket = call.waiter
        if not ticket.future.done():
            ticket.future.set_result(result)

    def _give_up(self, ticket: CallTicket, state: CallState) -> None:
        if ticket.call_id is None:
            ticket.abandoned = True  # not opened yet: it never will be
            return
        call = self.table.finish(ticket.call_id, state)
        if call is not None and ticket.sent and self._info.v2 and not self._lost:
            # v2 only (section 4): the extension stops what it can and never answers late. The
            # call is already finished, so an answer that still comes is dropped either way.
            self._in_background(CdpCancel(session_id=call.session_id, call_id=call.call_id))

    def _fail_all(self, code: ErrorCode, text: str) -> None:
        for call in self.table.lose_all():
            ticket: CallTicket = call.waiter
            ticket.fail(
                BrowserCallError(
                    code,
                    f"{call.op}: {text}",
                    outcome="unknown" if call.page_changing and ticket.sent else "error",
                )
            )

    # --- events -----------------------------------------------------------------------------

    def _fan_out(self, event: CdpEvent) -> None:
        for callback in self._subs.matching(event):
            try:
                callback(event)
            except Exception:
                log.exception("cdp.event subscriber failed on %s", event.method)

    # --- output -----------------------------------------------------------------------------

    def _in_background(self, msg: BaseModel) -> None:
        task = asyncio.get_running_loop().create_task(self._send_quietly(msg))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send_quietly(self, msg: BaseModel) -> None:
        try:
            await self._writer.send(msg)
        except Exception:
            log.exception("could not send %s", type(msg).__name__)

    # --- life -------------------------------------------------------------------------------

    async def on_stop(self) -> None:
        self._fail_all(ErrorCode.CONNECTION_LOST, "connection closed before an answer")

    async def on_failure(self, exc: BaseException) -> None:
        self._fail_all(ErrorCode.INTERNAL, "the call was interrupted inside the host")
