"""A minimal CDP client over Chromium's DevTools websocket, implementing ``CdpSession``.

One :class:`CdpWsSession` is one page target (a tab): :meth:`CdpWsSession.open` creates a tab with
``PUT /json/new?<url>`` and connects to its websocket. ``send`` numbers requests and resolves a
future per id; events are kept in :attr:`events` and can be awaited with :meth:`wait_for_event`.
Every wait has a deadline. ``close`` is idempotent and closes the tab.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

from actors.tools.cdp import CdpError, ErrorCode

__all__ = ["CdpWsSession", "ChildWs", "WsTab"]

Event = dict[str, Any]


def _http(method: str, url: str) -> Any:
    req = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        body = resp.read()
    try:
        return json.loads(body or b"null")
    except ValueError:
        return body.decode("utf-8", "replace")  # e.g. /json/close answers "Target is closing"


class CdpWsSession:
    """CDP over a websocket to one page target. Implements ``actors.tools.cdp.CdpSession``."""

    def __init__(self, ws: ClientConnection, *, http_base: str, target_id: str) -> None:
        self._ws = ws
        self._http_base = http_base
        self.target_id = target_id
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[Event] = []
        self._event_waiters: list[tuple[Callable[[Event], bool], asyncio.Future[Event]]] = []
        self.sent: list[tuple[str, bool]] = []  # (method, page_changing), for tests to inspect
        self._closed = False
        self._reader = asyncio.create_task(self._read(), name=f"cdp-reader-{target_id[:8]}")

    @classmethod
    async def open(cls, http_base: str, url: str = "about:blank") -> CdpWsSession:
        """Create a new tab showing ``url`` and connect to it."""
        quoted = urllib.parse.quote(url, safe=":/?&=#%")
        info = await asyncio.to_thread(_http, "PUT", f"{http_base}/json/new?{quoted}")
        ws = await websockets.connect(
            info["webSocketDebuggerUrl"], max_size=None, ping_interval=None
        )
        return cls(ws, http_base=http_base, target_id=info["id"])

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                msg = json.loads(raw)
                if "id" in msg:
                    fut = self._pending.pop(msg["id"], None)
                    if fut is None or fut.done():
                        continue  # late answer to a timed-out call: drop it
                    if "error" in msg:
                        err = msg["error"]
                        fut.set_exception(
                            CdpError(
                                ErrorCode.INTERNAL,
                                f"{err.get('message', '')} {err.get('data', '')}".strip(),
                                cdp_code=err.get("code"),
                            )
                        )
                    else:
                        fut.set_result(msg.get("result", {}))
                else:
                    self.events.append(msg)
                    for pred, wfut in list(self._event_waiters):
                        if not wfut.done() and pred(msg):
                            wfut.set_result(msg)
        except websockets.ConnectionClosed:
            pass
        finally:
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(CdpError(ErrorCode.INTERNAL, "websocket closed"))
            self._pending.clear()

    #: Like the extension with ``cdp.targetSessions``: child sessions (``child``) can be addressed.
    child_sessions = True

    def child(self, session_id: str) -> ChildWs:
        """A flattened child session of this target (``Target.setAutoAttach{flatten}``)."""
        return ChildWs(self, session_id)

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        page_changing: bool = False,
        timeout: float = 10.0,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Send one command; raise ``CdpError`` on a CDP error or ``REQUEST_TIMEOUT``."""
        if self._closed:
            raise CdpError(ErrorCode.INTERNAL, "session closed")
        msg_id = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        self.sent.append((method, page_changing))
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id is not None:
            msg["sessionId"] = session_id
        await self._ws.send(json.dumps(msg))
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise CdpError(ErrorCode.REQUEST_TIMEOUT, f"{method} timed out") from None
        finally:
            self._pending.pop(msg_id, None)

    async def wait_for_event(
        self,
        method: str,
        predicate: Callable[[Event], bool] | None = None,
        *,
        timeout: float = 10.0,
        since: int = 0,
    ) -> Event:
        """Return the first event ``method`` (matching ``predicate``) at or after ``since``.

        ``since`` is an index into :attr:`events` taken before the action that causes the event,
        so an event that arrived before this call is not missed.
        """

        def pred(ev: Event) -> bool:
            return ev.get("method") == method and (predicate is None or predicate(ev))

        for ev in self.events[since:]:
            if pred(ev):
                return ev
        fut: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        entry = (pred, fut)
        self._event_waiters.append(entry)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise CdpError(ErrorCode.WAIT_TIMEOUT, f"no {method} event in {timeout}s") from None
        finally:
            self._event_waiters.remove(entry)

    def subscribe(
        self, callback: Callable[[str, dict[str, Any]], None], *, session_id: str | None = None
    ) -> Callable[[], None]:
        """Call ``callback(method, params)`` for every event of this target (or of its child
        session ``session_id``) from now on; returns unsubscribe."""

        def pred(ev: Event) -> bool:
            if ev.get("sessionId") == session_id:  # a child session's events are the child's
                callback(str(ev.get("method", "")), dict(ev.get("params") or {}))
            return False  # never "matches": a standing subscription, not a one-shot wait

        entry = (pred, asyncio.get_running_loop().create_future())
        self._event_waiters.append(entry)

        def unsubscribe() -> None:
            if entry in self._event_waiters:
                self._event_waiters.remove(entry)

        return unsubscribe

    async def navigate(self, url: str, *, timeout: float = 10.0) -> None:
        """Navigate the tab and wait for its load event."""
        await self.send("Page.enable")
        mark = len(self.events)
        result = await self.send("Page.navigate", {"url": url}, page_changing=True)
        if result.get("errorText"):
            raise CdpError(ErrorCode.INTERNAL, f"navigation failed: {result['errorText']}")
        await self.wait_for_event("Page.loadEventFired", timeout=timeout, since=mark)

    async def evaluate(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page's main world and return its JSON value."""
        res = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in res:
            raise CdpError(ErrorCode.INTERNAL, json.dumps(res["exceptionDetails"])[:500])
        return res["result"].get("value")

    async def close(self) -> None:
        """Close the websocket and the tab. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        with contextlib.suppress(OSError):
            await asyncio.to_thread(_http, "GET", f"{self._http_base}/json/close/{self.target_id}")


class WsTab:
    """A :class:`CdpWsSession` as the tools' ``TabSession`` (send + events) for tab *tab_id*."""

    def __init__(self, ws: CdpWsSession, tab_id: int | None = 1) -> None:
        self.ws = ws
        self.tab_id = tab_id

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        page_changing: bool = False,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        return await self.ws.send(method, params, page_changing=page_changing, timeout=timeout)

    async def subscribe(
        self, callback: Callable[[str, dict[str, Any]], None]
    ) -> Callable[[], None]:
        return self.ws.subscribe(callback)


class ChildWs:
    """A child session (an out-of-process iframe) of a :class:`CdpWsSession`'s target."""

    def __init__(self, parent: CdpWsSession, session_id: str) -> None:
        self.parent = parent
        self.session_id = session_id

    @property
    def target_session(self) -> str:
        """As the host's ``TabCdpSession.target_session``: the child session's id."""
        return self.session_id

    def child(self, session_id: str) -> ChildWs:
        """A child session of this one (flattened: addressed on the same websocket)."""
        return ChildWs(self.parent, session_id)

    def subscribe(self, callback: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        """This session's events (a frame's ``Target.attachedToTarget`` for its own frames)."""
        return self.parent.subscribe(callback, session_id=self.session_id)

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        page_changing: bool = False,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        return await self.parent.send(
            method, params, page_changing=page_changing, timeout=timeout,
            session_id=self.session_id,
        )  # fmt: skip
