"""CDPProxy: the actor that owns one connection's browser calls and its CDP event fan-out.

One per connection (architecture.md section 2), a child of that link's supervisor. It owns:

- the connection's :class:`~actors.browser.call_table.CallTable` — every ``cdp.send`` / ``tab.*``
  it sends is opened there first and settles exactly once (answered, timed out, cancelled, lost);
- the v2 ``cdp.cancel`` of a call the host gave up on, and ``control.release`` when a turn ends;
- the fan-out of ``cdp.event`` to the tools that subscribed (console and network buffers);
- the downloads its browser reported (v2 ``download.*``, :mod:`actors.browser.downloads`) and
  the tools waiting for one to finish;
- the open JavaScript dialogs of its tabs (:mod:`actors.tools.dialogs`): a dialog that opens fails
  the calls waiting on its tab at once (``DialogOpen``, v2 ``cdp.cancel``), and a call opened while
  it is open fails before it is sent — a blocked page would otherwise hold each one to its deadline.

Callers (:mod:`actors.browser.tabs`) talk to it by messages only: :class:`OpenCall`,
:class:`GiveUp`, :class:`Subscribe` / :class:`Unsubscribe`, :class:`ReleaseControl`,
:class:`GetDialog` (all in :mod:`actors.browser.proxy_messages`); the Connection tells it
:class:`Answered` and :class:`EventArrived`. The one thing that stays off the mailbox is each
call's reply: the caller hands in a :class:`CallTicket` (its future), and the proxy settles it — a
second mailbox hop per answer would buy nothing.

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
from typing import Any, ClassVar

from pydantic import BaseModel

from actors.browser.call_table import CallState, CallTable
from actors.browser.proxy_messages import (
    TAB_OPS,
    Answered,
    CallTicket,
    ConnectionLost,
    DownloadArrived,
    DownloadQuery,
    DownloadSaved,
    EventArrived,
    GetDialog,
    GiveUp,
    OpenCall,
    ProxyMsg,
    ReleaseControl,
    Subscribe,
    Subscriptions,
    Unsubscribe,
)
from actors.link.link_writer import ConnectionInfo, LinkWriter
from actors.runtime.actor import Actor
from actors.runtime.ref import Overflow
from actors.tools.cdp import BrowserCallError
from actors.tools.dialogs import PASS_WHILE_OPEN, DialogOpen
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

__all__ = ["CDPProxy"]

log = logging.getLogger(__name__)


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
        elif isinstance(msg, GetDialog):
            return self._subs.dialogs.get(msg.tab_id)
        elif isinstance(msg, DownloadArrived):
            record = self._subs.downloads.update(msg.download)
            log.info("download %d: %s", record.download_id, record.state)
        elif isinstance(msg, DownloadQuery):
            return self._downloads(msg)
        elif isinstance(msg, DownloadSaved):
            self._subs.downloads.saved(msg.download_id, msg.path)
        elif isinstance(msg, ReleaseControl):
            if self._info.v2 and not self._lost:
                await self._send_quietly(ControlRelease(owner_id=msg.owner_id))
        elif isinstance(msg, ConnectionLost):
            self._fail_all(ErrorCode.CONNECTION_LOST, "connection lost before an answer")
            self._lost = True
            self._subs.entries.clear()
            self._subs.downloads.drop_waiters()
        return None

    def _downloads(self, msg: DownloadQuery) -> Any:
        table = self._subs.downloads
        if msg.op == "mark":
            return table.mark()
        if msg.op == "since":
            return table.since(msg.after)
        if msg.op == "wait" and msg.waiter is not None:
            if self._lost:
                msg.waiter(None)
            else:
                table.wait(msg.download_id, msg.after, msg.waiter)
        elif msg.op == "forget" and msg.waiter is not None:
            table.forget_waiter(msg.waiter)
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
        dialog = self._subs.dialogs.get(msg.tab_id) if msg.op not in TAB_OPS else None
        if dialog is not None and msg.op not in PASS_WHILE_OPEN:
            ticket.fail(DialogOpen(dialog, msg.op, sent=False))  # it would wait for its deadline
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
            if msg.target_session is not None and not self._info.target_sessions:
                # protocol.md section 4: only after the extension's hello offered it.
                raise ValueError("this browser connection cannot address child sessions")
            return CdpSend(
                **common,
                tab_id=msg.tab_id,
                method=msg.op,
                params=args,
                target_session_id=msg.target_session,
            )
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
        if call.op == "Page.handleJavaScriptDialog" and result.ok:
            # Answered: the dialog is gone now, whether or not its Closed event came first.
            self._subs.dialogs.clear(call.tab_id)
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
        opened = None
        if event.target_session_id is None:  # a child session's Page is not the tab's
            opened = self._subs.dialogs.on_event(event.tab_id, event.method, event.params)
        if event.method.startswith("Page.javascriptDialog"):
            log.info("tab %s: %s %s", event.tab_id, event.method, event.params.get("type", ""))
        if opened is not None:
            self._blocked(event.tab_id, opened)
        for callback in self._subs.matching(event):
            try:
                callback(event)
            except Exception:
                log.exception("cdp.event subscriber failed on %s", event.method)

    def _blocked(self, tab_id: int | None, dialog: Any) -> None:
        """A dialog opened on ``tab_id``: its waiting calls end now (the page answers none of them
        until the dialog closes); their late answers are dropped (v2: never sent)."""
        for call in list(self.table.pending.values()):
            if call.tab_id != tab_id or call.op in TAB_OPS or call.op in PASS_WHILE_OPEN:
                continue
            ticket: CallTicket = call.waiter
            self._give_up(ticket, CallState.CANCELLED)
            ticket.fail(DialogOpen(dialog, call.op, sent=ticket.sent))

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
