"""Browser calls as the tools make them: one tab's CDP session, and the ``tab.*`` operations.

:class:`BrowserCalls` is the client of one connection's :class:`~actors.browser.cdp_proxy.CDPProxy`
(reached through a :class:`~actors.runtime.live_ref.LiveRef`, so it follows the proxy through a
restart): it opens a call, waits for its answer with a deadline (conventions rule 5) and, when it
stops waiting, tells the proxy to give up on it. Every failure is a
:class:`~actors.tools.cdp.BrowserCallError` whose ``outcome`` is ``"unknown"`` only for a
page-changing call that was sent and got no answer (the ticket rule in
:mod:`actors.browser.cdp_proxy`).

:class:`TabCdpSession` binds it to one tab and implements the tools' ``CdpSession`` seam
(:mod:`actors.tools.cdp`); :class:`ProxyTabs` implements their ``TabOps``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Literal

from actors.browser.call_table import CallState
from actors.browser.download_calls import DownloadCalls
from actors.browser.proxy_messages import (
    CallTicket,
    GetDialog,
    GiveUp,
    OpenCall,
    ProxyMsg,
    ReleaseControl,
    Subscribe,
    Unsubscribe,
)
from actors.runtime.errors import ActorError
from actors.runtime.live_ref import LiveRef
from actors.tools.cdp import BrowserCallError
from actors.tools.dialogs import OpenDialog
from messages.errors import ErrorCode
from messages.wire_inbound import ToolResult

__all__ = ["BrowserCalls", "ProxyTabs", "TabCdpSession", "TabOp"]

TabOp = Literal["tab.new", "tab.activate", "tab.list", "tab.getActive", "tab.close"]

#: Tab operations that change the browser (protocol.md section 5 lists tab open/close).
_PAGE_CHANGING_OPS = frozenset({"tab.new", "tab.close"})


class BrowserCalls:
    """Calls through one connection's CDPProxy (see the module docstring)."""

    def __init__(self, proxy: LiveRef[ProxyMsg]) -> None:
        self.proxy = proxy

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
        target_session: str | None = None,
    ) -> dict[str, Any]:
        """Run one CDP command in ``tab_id`` (or in its child session ``target_session``) and
        return CDP's raw ``result`` object."""
        answer = await self._call(
            session_id, method, tab_id, params or {}, owner_id, page_changing, timeout,
            target_session,
        )  # fmt: skip
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
        ``page_changing`` defaults to True for ``tab.new`` and ``tab.close``."""
        args = args or {}
        changing = op in _PAGE_CHANGING_OPS if page_changing is None else page_changing
        tab_id = args.get("tabId")
        answer = await self._call(
            session_id,
            op,
            tab_id if isinstance(tab_id, int) else None,
            args,
            owner_id,
            changing,
            timeout,
        )
        return answer.result

    async def _call(
        self,
        session_id: str,
        op: str,
        tab_id: int | None,
        params: dict[str, Any],
        owner_id: str | None,
        page_changing: bool,
        timeout: float,
        target_session: str | None = None,
    ) -> ToolResult:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        ticket = CallTicket(loop.create_future(), deadline=deadline, page_changing=page_changing)
        opened = OpenCall(
            ticket=ticket,
            session_id=session_id,
            op=op,
            tab_id=tab_id,
            params=params,
            owner_id=owner_id,
            target_session=target_session,
        )
        try:
            async with asyncio.timeout_at(deadline):
                await self.proxy.tell(opened)
                answer = await ticket.future
        except TimeoutError:
            self._give_up(ticket, CallState.TIMED_OUT)
            raise BrowserCallError(
                ErrorCode.REQUEST_TIMEOUT,
                f"{op} got no answer in {timeout:g}s",
                outcome="unknown" if page_changing and ticket.sent else "error",
            ) from None
        except asyncio.CancelledError:
            self._give_up(ticket, CallState.CANCELLED)
            raise
        except (ActorError, LookupError):
            # The proxy is gone (its link closed) or never took the call: nothing was sent,
            # unless it crashed or timed out while taking it.
            taken = ticket.sent
            self._give_up(ticket, CallState.LOST)
            raise BrowserCallError(
                ErrorCode.CONNECTION_LOST,
                f"{op}: the browser connection is gone",
                outcome="unknown" if page_changing and taken else "error",
            ) from None
        if not answer.ok:
            raise _error_from_text(answer.error or "")
        return answer

    def _give_up(self, ticket: CallTicket, state: CallState) -> None:
        # The ticket rule: abandoned first, then the verdict reads ``sent``.
        ticket.abandoned = True
        future = ticket.future
        if future.done() and not future.cancelled():
            future.exception()  # retrieved: it settled while we stopped waiting
            return
        if ticket.call_id is None:
            return  # not opened: the proxy will not send it
        # (Our own wait cancels the future; the call is still open at the proxy.)
        with contextlib.suppress(ActorError, LookupError):
            self.proxy.tell_nowait(GiveUp(ticket=ticket, state=state))

    async def subscribe(
        self, session_id: str, tab_id: int | None, callback: Callable[[Any], None]
    ) -> Callable[[], None]:
        """Call ``callback(event)`` for each CDP event of the session (and tab). Returns the
        unsubscribe function (idempotent; best effort if the proxy is gone)."""
        token: int = await self.proxy.ask(
            Subscribe(session_id=session_id, tab_id=tab_id, callback=callback), timeout=5.0
        )
        done = False

        def unsubscribe() -> None:
            nonlocal done
            if not done:
                done = True
                with contextlib.suppress(ActorError, LookupError):
                    self.proxy.tell_nowait(Unsubscribe(token=token))

        return unsubscribe

    async def dialog(self, tab_id: int) -> OpenDialog | None:
        """The JavaScript dialog open on ``tab_id``, as this connection's events told it."""
        try:
            found = await self.proxy.ask(GetDialog(tab_id=tab_id), timeout=5.0)
        except (ActorError, LookupError, TimeoutError):
            return None
        return found if isinstance(found, OpenDialog) else None

    async def release(self, owner_id: str) -> None:
        """The turn ``owner_id`` ended: v2 ``control.release``; nothing if the link is gone."""
        with contextlib.suppress(ActorError, LookupError):
            await self.proxy.tell(ReleaseControl(owner_id=owner_id), timeout=5.0)


def _error_from_text(text: str) -> BrowserCallError:
    # The extension answers ok:false with Chrome's error text; it starts with NOT_ALLOWED_URL when
    # the extension refused the page (protocol.md section 5, "URLs").
    code = ErrorCode.NOT_ALLOWED_URL if text.startswith("NOT_ALLOWED_URL") else ErrorCode.INTERNAL
    return BrowserCallError(code, text or "the browser call failed")


class TabCdpSession(DownloadCalls):
    """The ``CdpSession`` seam (actors/tools/cdp.py) over :class:`BrowserCalls`, bound to one
    tab. Also offers :meth:`subscribe` for that tab's CDP events (``callback(method, params)``).

    ``child(target_session)`` is the same tab's child session (an out-of-process iframe), where
    ``child_sessions`` says the connection can address them (v2 ``cdp.targetSessions``). Its
    connection's downloads: :class:`~actors.browser.download_calls.DownloadCalls`.
    """

    def __init__(
        self,
        calls: BrowserCalls,
        session_id: str,
        tab_id: int | None,
        owner_id: str | None,
        *,
        child_sessions: bool = False,
        target_session: str | None = None,
        reports_downloads: bool = False,
    ) -> None:
        self.calls: BrowserCalls = calls
        self.reports_downloads = reports_downloads
        self.session_id = session_id
        self.tab_id = tab_id
        self.owner_id = owner_id
        self.child_sessions = child_sessions
        self.target_session = target_session

    def child(self, target_session: str) -> TabCdpSession:
        """The child session ``target_session`` of this tab (needs ``child_sessions``)."""
        return TabCdpSession(
            self.calls, self.session_id, self.tab_id, self.owner_id,
            child_sessions=self.child_sessions, target_session=target_session,
            reports_downloads=self.reports_downloads,
        )  # fmt: skip

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        page_changing: bool = False,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        return await self.calls.cdp(
            self.session_id,
            self.tab_id,
            method,
            params,
            page_changing=page_changing,
            timeout=timeout,
            owner_id=self.owner_id,
            target_session=self.target_session,
        )

    async def open_dialog(self) -> OpenDialog | None:
        """The JavaScript dialog open on this tab, if the host saw one open."""
        return None if self.tab_id is None else await self.calls.dialog(self.tab_id)

    async def subscribe(
        self, callback: Callable[[str, dict[str, Any]], None]
    ) -> Callable[[], None]:
        mine = self.target_session

        def deliver(ev: Any) -> None:
            if getattr(ev, "target_session_id", None) == mine:  # this session's events only
                callback(ev.method, ev.params)

        return await self.calls.subscribe(self.session_id, self.tab_id, deliver)


class ProxyTabs(DownloadCalls):
    """``tab.*`` operations of one session (the tools' ``TabOps``)."""

    def __init__(
        self,
        calls: BrowserCalls,
        session_id: str,
        owner_id: str | None,
        *,
        window_id: int | None = None,
        timeout: float = 10.0,
        group: str | None = None,
        child_sessions: bool = False,
        reports_downloads: bool = False,
    ) -> None:
        self.calls: BrowserCalls = calls
        #: The browser tells the host of its downloads (v2, capability ``downloads``).
        self.reports_downloads = reports_downloads
        self.session_id = session_id
        self.owner_id = owner_id
        self.window_id = window_id
        self.timeout = timeout
        #: New tabs go into the tab group of this title (an MCP client's name; v2 only).
        self.group = group
        self.child_sessions = child_sessions

    async def _op(self, op: TabOp, args: dict[str, Any] | None = None) -> Any:
        return await self.calls.tab(
            self.session_id, op, args, timeout=self.timeout, owner_id=self.owner_id
        )

    async def new(self, url: str | None, *, active: bool = True) -> dict[str, Any]:
        args: dict[str, Any] = {"url": url, "active": active}
        if self.group:
            args["group"] = self.group
        res = await self._op("tab.new", args)
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
        return TabCdpSession(
            self.calls, self.session_id, tab_id, self.owner_id,
            child_sessions=self.child_sessions, reports_downloads=self.reports_downloads,
        )  # fmt: skip
