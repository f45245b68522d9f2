"""CDPProxy: browser calls of one extension connection, correlated by ``callId``.

The host asks the extension to run CDP commands (``cdp.send``) and tab operations (``tab.*``); the
extension answers each with ``tool.result{callId, ok, result?, error?}`` (protocol.md sections 2-3).
This module has two layers, like a sans-I/O protocol and its asyncio shell:

- :class:`CallTable` is the pure correlator (no asyncio): it mints call ids, remembers what each
  call is (session, tab, method, page-changing, owner) and lets each settle **once**. Its state
  machine is the table below; an illegal transition raises :class:`LocalError`::

      PENDING --answer--> ANSWERED        (the answer is delivered)
      PENDING --deadline--> TIMED_OUT     (REQUEST_TIMEOUT; v2 also sends cdp.cancel)
      PENDING --cancel--> CANCELLED       (the awaiting task was cancelled; v2 cdp.cancel)
      PENDING --lost--> LOST              (connection_lost(): CONNECTION_LOST)

  A late answer, an answer to a cancelled call, or one for an unknown ``callId`` is logged and
  dropped; nothing settles twice (protocol.md section 5, "Correlation").

- :class:`CdpProxy` sends the wire models and awaits the answers, each with a deadline (conventions
  rule 5: no caller ever hangs).

Errors are :class:`BrowserCallError` (a :class:`~actors.tools.cdp.CdpError`, so the page tools treat
them like any CDP failure). ``outcome`` says what the caller may assume about the browser:

- ``"error"``: the call definitely did not happen (an error answer, or it was never sent), or it was
  a read;
- ``"unknown"``: a page-changing call was sent but no answer came (deadline, cancel, connection
  lost). It is reported as such and never sent again (protocol.md section 4, ``chat.tool_result``
  outcome ``unknown``; section 5, "No replay").

:class:`TabCdpSession` binds the proxy to one tab and implements the ``CdpSession`` seam of
:mod:`actors.tools.cdp`; :class:`ProxyTabs` gives the tools the ``tab.*`` operations.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from actors.tools.cdp import CdpError
from messages.errors import ErrorCode, FrameTooLarge, LocalError
from messages.wire_inbound import CdpEvent, ToolResult
from messages.wire_outbound import (
    CdpCancel,
    CdpSend,
    ControlRelease,
    TabActivate,
    TabClose,
    TabGetActive,
    TabList,
    TabNew,
)

__all__ = [
    "BrowserCallError",
    "CallState",
    "CallTable",
    "CdpProxy",
    "EventCallback",
    "Outcome",
    "PendingCall",
    "ProxyTabs",
    "TabCdpSession",
    "TabOp",
    "outcome_of",
]

log = logging.getLogger(__name__)

Outcome = Literal["error", "unknown"]
TabOp = Literal["tab.new", "tab.activate", "tab.list", "tab.getActive", "tab.close"]
EventCallback = Callable[[CdpEvent], None]

#: Tab operations that change the browser (protocol.md section 5 lists tab open/close).
_PAGE_CHANGING_OPS = frozenset({"tab.new", "tab.close"})
#: How many finished call ids are remembered so a late answer is told apart from an unknown one.
_FINISHED_MEMORY = 1024


class BrowserCallError(CdpError):
    """A browser call failed. ``outcome`` is ``"unknown"`` when a page-changing call was sent and
    no answer came: the caller must report it as such and must not send it again."""

    def __init__(
        self, code: ErrorCode | str, message: str = "", *, outcome: Outcome = "error"
    ) -> None:
        super().__init__(code, message)
        self.outcome: Outcome = outcome

    @property
    def wire_message(self) -> str:
        if self.code is ErrorCode.CONNECTION_LOST:
            return "the browser connection was lost"
        if self.code is ErrorCode.CANCELLED:
            return "the browser call was cancelled"
        return super().wire_message


def outcome_of(exc: BaseException) -> Outcome:
    """``"unknown"`` if ``exc`` (or an exception it was raised from) says so, else ``"error"``.

    Tools may wrap a proxy error (e.g. the page tools turn a dead context into STALE_REF), so the
    ``__cause__``/``__context__`` chain is searched.
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if getattr(cur, "outcome", None) == "unknown":
            return "unknown"
        cur = cur.__cause__ or cur.__context__
    return "error"


# --- the pure correlator -------------------------------------------------------------------------


class CallState(enum.Enum):
    PENDING = "pending"
    ANSWERED = "answered"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    LOST = "lost"


# The state machine of one call, as data (conventions rule 2).
_TRANSITIONS: dict[CallState, frozenset[CallState]] = {
    CallState.PENDING: frozenset(
        {CallState.ANSWERED, CallState.TIMED_OUT, CallState.CANCELLED, CallState.LOST}
    ),
    CallState.ANSWERED: frozenset(),
    CallState.TIMED_OUT: frozenset(),
    CallState.CANCELLED: frozenset(),
    CallState.LOST: frozenset(),
}


@dataclass(slots=True, kw_only=True)
class PendingCall:
    """One browser call: what it is and where it stands."""

    call_id: str
    session_id: str
    tab_id: int | None
    op: str  # the CDP method for cdp.send, else the tab.* type
    page_changing: bool
    owner_id: str | None
    state: CallState = CallState.PENDING

    def move(self, new: CallState) -> None:
        if new not in _TRANSITIONS[self.state]:
            raise LocalError(f"call {self.call_id}: illegal transition {self.state} -> {new}")
        self.state = new


class CallTable:
    """Correlates requests and answers by ``callId``; settles each call at most once. No I/O.

    Use :meth:`open` before sending, then exactly one of :meth:`answer` (the peer answered),
    :meth:`finish` (deadline or cancel) or :meth:`lose_all` (the connection went away).
    """

    def __init__(self, prefix: str = "h") -> None:
        self._prefix = prefix
        self._ids = itertools.count(1)
        self.pending: dict[str, PendingCall] = {}
        # Recently finished calls, so a late answer is logged as late rather than as unknown.
        self._finished: OrderedDict[str, CallState] = OrderedDict()

    def open(
        self,
        *,
        session_id: str,
        tab_id: int | None,
        op: str,
        page_changing: bool,
        owner_id: str | None,
    ) -> PendingCall:
        """Register a new call and return it (its ``call_id`` goes on the wire)."""
        call = PendingCall(
            call_id=f"{self._prefix}{next(self._ids)}",
            session_id=session_id,
            tab_id=tab_id,
            op=op,
            page_changing=page_changing,
            owner_id=owner_id,
        )
        self.pending[call.call_id] = call
        return call

    def _close(self, call: PendingCall, state: CallState) -> None:
        call.move(state)
        del self.pending[call.call_id]
        self._finished[call.call_id] = state
        while len(self._finished) > _FINISHED_MEMORY:
            self._finished.popitem(last=False)

    def answer(self, call_id: str, session_id: str | None = None) -> PendingCall | None:
        """An answer arrived. Returns the call it settles, or None when it must be dropped
        (late, cancelled, unknown, or from another session); the reason is logged."""
        call = self.pending.get(call_id)
        if call is None:
            state = self._finished.get(call_id)
            if state is None:
                log.warning("dropping tool.result for unknown callId %r", call_id[:64])
            else:
                log.info("dropping late tool.result for callId %s (%s)", call_id, state.value)
            return None
        if session_id is not None and session_id != call.session_id:
            log.warning("dropping tool.result for %s from another session", call_id)
            return None
        self._close(call, CallState.ANSWERED)
        return call

    def finish(self, call_id: str, state: CallState) -> PendingCall | None:
        """The host gave up on a call (``TIMED_OUT``/``CANCELLED``/``LOST``). None if it had
        already settled (then the answer won and nothing changes)."""
        call = self.pending.get(call_id)
        if call is None:
            return None
        self._close(call, state)
        return call

    def lose_all(self) -> list[PendingCall]:
        """Every pending call becomes ``LOST``; returns them."""
        calls = list(self.pending.values())
        for call in calls:
            self._close(call, CallState.LOST)
        return calls


# --- the asyncio shell ---------------------------------------------------------------------------


def _error_from_text(text: str) -> BrowserCallError:
    # The extension answers ok:false with Chrome's error text; it starts with NOT_ALLOWED_URL when
    # the extension refused the page (protocol.md section 5, "URLs").
    code = ErrorCode.NOT_ALLOWED_URL if text.startswith("NOT_ALLOWED_URL") else ErrorCode.INTERNAL
    return BrowserCallError(code, text or "the browser call failed")


class CdpProxy:
    """Browser calls of one connection: send, await the answer with a deadline, cancel, fan out
    events. ``send`` writes one host -> extension model and returns False if it could not (the
    connection is gone). ``protocol`` is the connection's level (1 or 2)."""

    def __init__(self, send: Callable[[BaseModel], Awaitable[bool]], *, protocol: int) -> None:
        self._send = send
        self.protocol = protocol
        self.table = CallTable()
        self._futures: dict[str, asyncio.Future[ToolResult]] = {}
        self._subscribers: list[tuple[str, int | None, EventCallback]] = []
        self._background: set[asyncio.Task[None]] = set()
        self._lost = False

    @property
    def v2(self) -> bool:
        return self.protocol >= 2

    # --- requests ----------------------------------------------------------------------------

    async def cdp(
        self,
        session_id: str,
        tab_id: int | None,
        method: str,
        params: dict[str, Any] | None,
        *,
        page_changing: bool,
        timeout: float,
        owner_id: str | None,
    ) -> dict[str, Any]:
        """Run one CDP command in ``tab_id`` and return CDP's raw ``result`` object."""
        call = self.table.open(
            session_id=session_id,
            tab_id=tab_id,
            op=method,
            page_changing=page_changing,
            owner_id=owner_id,
        )
        msg = CdpSend(
            session_id=session_id,
            call_id=call.call_id,
            tab_id=tab_id,
            method=method,
            params=params or {},
            control_owner_id=owner_id if self.v2 else None,
        )
        answer = await self._roundtrip(call, msg, timeout)
        result = answer.result
        # tool.result for cdp.send carries {tabId, result: <raw CDP result>} (protocol.md 2).
        if isinstance(result, dict):
            inner = result.get("result", {})
            return inner if isinstance(inner, dict) else {}
        return {}

    async def tab(
        self,
        session_id: str,
        op: TabOp,
        args: dict[str, Any] | None = None,
        *,
        timeout: float,
        owner_id: str | None,
        page_changing: bool | None = None,
    ) -> Any:
        """Run a ``tab.*`` operation and return its raw result (TabInfo, TabInfo[] or None).

        ``page_changing`` defaults to True for ``tab.new`` and ``tab.close``. In v1 there is no
        ``tab.close``: it is sent as ``cdp.send Page.close`` on that tab (protocol.md 3b).
        """
        args = args or {}
        changing = op in _PAGE_CHANGING_OPS if page_changing is None else page_changing
        if op == "tab.close" and not self.v2:
            await self.cdp(
                session_id,
                int(args["tabId"]),
                "Page.close",
                {},
                page_changing=changing,
                timeout=timeout,
                owner_id=owner_id,
            )
            return None
        tab_id = args.get("tabId")
        call = self.table.open(
            session_id=session_id,
            tab_id=tab_id,
            op=op,
            page_changing=changing,
            owner_id=owner_id,
        )
        owner = owner_id if self.v2 else None
        common: dict[str, Any] = {
            "session_id": session_id,
            "call_id": call.call_id,
            "control_owner_id": owner,
        }
        msg: BaseModel
        if op == "tab.new":
            msg = TabNew(**common, url=args.get("url"), active=args.get("active"))
        elif op == "tab.activate":
            msg = TabActivate(**common, tab_id=int(args["tabId"]))
        elif op == "tab.list":
            msg = TabList(**common)
        elif op == "tab.getActive":
            window = args.get("windowId") if self.v2 else None
            msg = TabGetActive(**common, window_id=window)
        elif op == "tab.close":
            msg = TabClose(**common, tab_id=int(args["tabId"]))
        else:  # pragma: no cover - guarded by the TabOp literal
            self.table.finish(call.call_id, CallState.CANCELLED)
            raise LocalError(f"unknown tab operation {op!r}")
        answer = await self._roundtrip(call, msg, timeout)
        return answer.result

    async def _roundtrip(
        self,
        call: PendingCall,
        msg: BaseModel,
        timeout: float,
    ) -> ToolResult:
        unknown: Outcome = "unknown" if call.page_changing else "error"
        if self._lost:
            self.table.finish(call.call_id, CallState.LOST)
            raise BrowserCallError(ErrorCode.CONNECTION_LOST, "connection already lost")
        fut: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self._futures[call.call_id] = fut
        sent = False
        try:
            async with asyncio.timeout(timeout):
                try:
                    sent = await self._send(msg)
                except FrameTooLarge:
                    # cdp.send is never trimmed: a command that does not fit fails (section 5).
                    self.table.finish(call.call_id, CallState.CANCELLED)
                    raise BrowserCallError(
                        ErrorCode.MESSAGE_TOO_LARGE, f"{call.op} is too large to send"
                    ) from None
                if not sent:
                    self.table.finish(call.call_id, CallState.LOST)
                    raise BrowserCallError(ErrorCode.CONNECTION_LOST, "could not send")
                answer = await fut
        except TimeoutError:
            if self.table.finish(call.call_id, CallState.TIMED_OUT) is not None:
                self._cancel_on_peer(call)
            raise BrowserCallError(
                ErrorCode.REQUEST_TIMEOUT,
                f"{call.op} got no answer in {timeout:g}s",
                outcome=unknown,
            ) from None
        except asyncio.CancelledError:
            if self.table.finish(call.call_id, CallState.CANCELLED) is not None and sent:
                self._cancel_on_peer(call)
            raise
        finally:
            self._futures.pop(call.call_id, None)
            if fut.done() and not fut.cancelled():
                # connection_lost() may fail the future while this call is still sending (or is
                # being cancelled): the outcome is already decided above, so mark it retrieved.
                fut.exception()
        if not answer.ok:
            raise _error_from_text(answer.error or "")
        return answer

    def _cancel_on_peer(self, call: PendingCall) -> None:
        # v2 only (section 4): the extension stops what it can and never answers late. The call
        # is already marked finished, so an answer that still comes is dropped either way.
        if not self.v2 or self._lost:
            return
        msg = CdpCancel(session_id=call.session_id, call_id=call.call_id)
        task = asyncio.get_running_loop().create_task(self._send_quietly(msg))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send_quietly(self, msg: BaseModel) -> None:
        try:
            await self._send(msg)
        except Exception:
            log.exception("could not send %s", type(msg).__name__)

    # --- inbound -----------------------------------------------------------------------------

    def on_tool_result(self, msg: ToolResult) -> None:
        """Deliver an answer; late/unknown/cancelled ones are logged and dropped (section 5)."""
        call = self.table.answer(msg.call_id, msg.session_id)
        if call is None:
            return
        fut = self._futures.get(call.call_id)
        if fut is not None and not fut.done():
            fut.set_result(msg)

    def on_cdp_event(self, msg: CdpEvent) -> None:
        """Fan a CDP event out to the subscribers of its session (and tab)."""
        for session_id, tab_id, callback in list(self._subscribers):
            if session_id != msg.session_id or (tab_id is not None and tab_id != msg.tab_id):
                continue
            try:
                callback(msg)
            except Exception:
                log.exception("cdp.event subscriber failed on %s", msg.method)

    def subscribe(
        self, session_id: str, tab_id: int | None, callback: EventCallback
    ) -> Callable[[], None]:
        """Call ``callback`` for each event of ``session_id`` (and ``tab_id``, None = any tab).
        Returns the function that unsubscribes (idempotent)."""
        entry = (session_id, tab_id, callback)
        self._subscribers.append(entry)

        def unsubscribe() -> None:
            if entry in self._subscribers:
                self._subscribers.remove(entry)

        return unsubscribe

    # --- control -----------------------------------------------------------------------------

    async def release(self, owner_id: str) -> None:
        """The turn ``owner_id`` ended: v2 ``control.release`` (settles nothing); v1: nothing."""
        if self.v2 and not self._lost:
            await self._send_quietly(ControlRelease(owner_id=owner_id))

    def connection_lost(self) -> None:
        """Fail every pending call with CONNECTION_LOST (page-changing ones: outcome unknown).
        Later calls fail at once: requests are never moved to a new connection (section 5)."""
        self._lost = True
        for call in self.table.lose_all():
            fut = self._futures.get(call.call_id)
            if fut is not None and not fut.done():
                fut.set_exception(
                    BrowserCallError(
                        ErrorCode.CONNECTION_LOST,
                        f"{call.op}: connection lost before an answer",
                        outcome="unknown" if call.page_changing else "error",
                    )
                )
        self._subscribers.clear()


class TabCdpSession:
    """The ``CdpSession`` seam (actors/tools/cdp.py) over a :class:`CdpProxy`, bound to one tab.

    Also offers :meth:`subscribe` for that tab's CDP events (``callback(method, params)``).
    """

    def __init__(
        self, proxy: CdpProxy, session_id: str, tab_id: int | None, owner_id: str | None
    ) -> None:
        self.proxy = proxy
        self.session_id = session_id
        self.tab_id = tab_id
        self.owner_id = owner_id

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        page_changing: bool = False,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        return await self.proxy.cdp(
            self.session_id,
            self.tab_id,
            method,
            params,
            page_changing=page_changing,
            timeout=timeout,
            owner_id=self.owner_id,
        )

    def subscribe(self, callback: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        return self.proxy.subscribe(
            self.session_id, self.tab_id, lambda ev: callback(ev.method, ev.params)
        )


class ProxyTabs:
    """``tab.*`` operations of one session through a :class:`CdpProxy` (the tools' ``TabOps``)."""

    def __init__(
        self,
        proxy: CdpProxy,
        session_id: str,
        owner_id: str | None,
        *,
        window_id: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.proxy = proxy
        self.session_id = session_id
        self.owner_id = owner_id
        self.window_id = window_id
        self.timeout = timeout

    async def _op(self, op: TabOp, args: dict[str, Any] | None = None) -> Any:
        return await self.proxy.tab(
            self.session_id, op, args, timeout=self.timeout, owner_id=self.owner_id
        )

    async def new(self, url: str | None, *, active: bool = True) -> dict[str, Any]:
        res = await self._op("tab.new", {"url": url, "active": active})
        return res if isinstance(res, dict) else {}

    async def list(self) -> list[dict[str, Any]]:
        res = await self._op("tab.list")
        return [t for t in res if isinstance(t, dict)] if isinstance(res, list) else []

    async def active(self) -> dict[str, Any] | None:
        res = await self._op("tab.getActive", {"windowId": self.window_id})
        return res if isinstance(res, dict) else None

    async def activate(self, tab_id: int) -> dict[str, Any]:
        res = await self._op("tab.activate", {"tabId": tab_id})
        return res if isinstance(res, dict) else {}

    async def close(self, tab_id: int) -> None:
        await self._op("tab.close", {"tabId": tab_id})

    def session(self, tab_id: int) -> TabCdpSession:
        return TabCdpSession(self.proxy, self.session_id, tab_id, self.owner_id)
