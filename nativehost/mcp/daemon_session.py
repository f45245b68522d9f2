"""An MCP client's session in the daemon: a ``mcp`` link, its tools, its calls, its reconnects.

``browy mcp`` serves one MCP client; this is its side of the daemon link (protocol.md sections 4
and 6). It opens a link with role ``mcp`` (starting the daemon if none runs), says hello as the
client it serves (``hello.client`` is the MCP client's ``clientInfo`` name: the daemon asks the
browser's user about it the first time) and registers one session asking for ``cdp.activeTab``.

- :meth:`DaemonSession.tools` lists what the session may call (``tools.list``).
- :meth:`DaemonSession.call` runs one tool as a turn of its own (``tool.call``): queued,
  journaled, ended exactly once, never replayed. It returns the :class:`CallOutcome` — what the
  tool returned (``tool.call.result``) and how the turn ended. Cancelling the awaiting task sends
  ``chat.cancel`` for that turn (the browser call in flight is cancelled, and reported
  ``unknown`` if it changed the page).
- When the link drops (the daemon restarted, say), it reconnects with the link backoff and
  registers the session again; a call that was in flight then gets its definite end from the
  journal (``unknown`` for a page-changing call that was cut) — it is never sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from actors.link.link_stream import LinkBroken, LinkRefusedError, LinkStream
from actors.runtime.backoff import link_backoff
from messages.link import LinkData
from nativehost.link import DaemonUnavailable, open_link

__all__ = ["CallOutcome", "DaemonSession", "SessionRefused"]

log = logging.getLogger(__name__)

#: How often a waiting call reports progress (so a client's call timeout does not fire).
PROGRESS_EVERY_S = 5.0
#: How long a session start may wait: the browser's user may be asked about this client.
READY_TIMEOUT_S = 330.0
#: How long, after a link drop, the session tries to reach a daemon again.
RECONNECT_BUDGET_S = 20.0

Progress = Callable[[str], Awaitable[None]]
#: Ask the MCP client's user about a guarded action (elicitation): "allow" or "deny".
Ask = Callable[[dict[str, Any]], Awaitable[str]]


class SessionRefused(Exception):
    """The daemon did not let this client drive the browser (the message says why and how)."""


@dataclass(slots=True)
class CallOutcome:
    """How one ``tool.call`` ended: ``outcome`` ok | error | unknown, the content the tool
    returned, its summary, and the stable ``code`` when it failed."""

    outcome: str = "error"
    content: str | list[dict[str, Any]] = ""
    summary: str = ""
    code: str | None = None
    cut: bool = False  # the turn was cut (a link drop, a restart): outcome from the journal


@dataclass(slots=True)
class _Pending:
    outcome: CallOutcome = field(default_factory=CallOutcome)
    ended: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    #: What the daemon last said about the call (e.g. "waiting for the browser's user…").
    note: str = ""
    read_only: bool = False
    ask: Ask | None = None
    poked: asyncio.Event = field(default_factory=asyncio.Event)


class DaemonSession:
    """One MCP client's session (see the module docstring)."""

    def __init__(
        self,
        home: Path,
        *,
        client_name: str,
        session_id: str | None = None,
        start_daemon: Callable[[Path], None] | None = None,
        browser: str | None = None,
    ) -> None:
        self.home = home
        self.browser = browser  # drive this browser (doctor's names), else the most recent
        self.client_name = client_name or "mcp client"
        self.session_id = session_id or f"mcp-{secrets.token_hex(4)}"
        self.capabilities: list[str] = []
        self.refused: str | None = None
        #: The tab this client works in (from its last call), told to a new daemon.
        self.tab_id: int | None = None
        self._start_daemon = start_daemon
        self._stream: LinkStream | None = None
        self._reader: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self._connecting: asyncio.Lock = asyncio.Lock()
        self._waiters: dict[str, list[asyncio.Future[dict[str, Any]]]] = {}
        self._calls: dict[str, _Pending] = {}
        self._closed = False
        self._background: set[asyncio.Task[None]] = set()

    def _spawn(self, coro: Any) -> None:
        """A task this session owns (cancelled on close)."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the link ----------------------------------------------------------------------------

    async def ensure(self, progress: Progress | None = None) -> None:
        """Connected and registered (once; again after a drop). Raises :class:`SessionRefused`
        when the daemon refuses this client the browser."""
        async with self._connecting:
            if self._stream is None:
                await self._connect(progress)
        if self.refused is not None and "cdp.activeTab" not in self.capabilities:
            raise SessionRefused(self.refused)

    async def _connect(self, progress: Progress | None) -> None:
        try:
            stream, _ = await open_link(self.home, role="mcp", timeout=5.0)
        except (DaemonUnavailable, OSError):
            if self._start_daemon is None:
                raise
            await asyncio.to_thread(self._start_daemon, self.home)
            stream, _ = await open_link(self.home, role="mcp", timeout=5.0)
        self._stream = stream
        self._reader = asyncio.ensure_future(self._read(stream))
        hello = {"type": "hello", "client": self.client_name, "protocol": 2, "installId": "mcp",
                 "extensionVersion": "mcp", "capabilities": []}  # fmt: skip
        await self._send(hello)
        await self._expect("hello.ack", timeout=10.0)
        self.refused = None
        start: dict[str, Any] = {"type": "session.start", "sessionId": self.session_id,
                                 "capabilities": ["cdp.activeTab"]}  # fmt: skip
        if self.tab_id is not None:
            start["inspectedTabId"] = self.tab_id
        if self.browser:
            start["browser"] = self.browser
        await self._send(start)
        ready = await self._expect(
            "session.ready", timeout=READY_TIMEOUT_S, progress=progress,
            note=f"waiting for the browser's user to allow {self.client_name} in the Browy "
            "side panel",
        )  # fmt: skip
        self.capabilities = list(ready.get("capabilities") or [])
        self._connected.set()

    async def _send(self, msg: dict[str, Any]) -> None:
        stream = self._stream
        if stream is None:
            raise ConnectionError("not connected to the daemon")
        stream.send(LinkData(orjson.dumps(msg)))
        await stream.drain()

    def _waiter(self, kind: str) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(kind, []).append(fut)
        return fut

    async def _expect(
        self,
        kind: str,
        *,
        timeout: float,
        progress: Progress | None = None,
        note: str = "",
    ) -> dict[str, Any]:
        fut = self._waiter(kind)
        deadline = time.monotonic() + timeout
        while True:
            wait = min(PROGRESS_EVERY_S, deadline - time.monotonic())
            if wait <= 0:
                fut.cancel()
                raise TimeoutError(f"the daemon sent no {kind}")
            done, _ = await asyncio.wait({fut}, timeout=wait)
            if done:
                return fut.result()
            if progress is not None and note:
                await progress(note)

    async def _read(self, stream: LinkStream) -> None:
        try:
            while True:
                env = await stream.recv()
                if env is None:
                    break
                if isinstance(env, LinkData):
                    self._dispatch(orjson.loads(env.payload))
        except (LinkBroken, ConnectionError, OSError, ValueError) as exc:
            log.info("the daemon link broke: %s", exc)
        finally:
            stream.close()
            if self._stream is stream:
                self._stream = None
                self._connected.clear()
                self._cut_calls()
                if not self._closed:
                    self._spawn(self._reconnect())

    def _dispatch(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        turn_id = msg.get("turnId")
        pending = self._calls.get(turn_id) if isinstance(turn_id, str) else None
        if kind == "tool.call.result" and pending is not None:
            pending.outcome.outcome = str(msg.get("outcome", "error"))
            pending.outcome.content = msg.get("content", "")
            pending.outcome.summary = str(msg.get("summary", ""))
            pending.outcome.code = msg.get("code")
            if isinstance(msg.get("tabId"), int):
                self.tab_id = msg["tabId"]
        elif kind in ("chat.done", "chat.error") and pending is not None:
            if kind == "chat.error" and not pending.outcome.summary:
                # The turn ended without a result: refused, or cut (the journal's end).
                pending.outcome.code = str(msg.get("code") or "INTERNAL")
                pending.outcome.summary = str(msg.get("message", "the call failed"))
                pending.outcome.content = f"error {pending.outcome.code}: {msg.get('message')}"
                pending.outcome.cut = pending.outcome.code == "CONNECTION_LOST"
            if not pending.ended.done():
                pending.ended.set_result(None)
        elif kind == "chat.tool_result" and msg.get("outcome") == "unknown" and self._calls:
            for call in self._calls.values():  # a cut call: its outcome is unknown
                if not call.ended.done() and not call.outcome.summary:
                    call.outcome.outcome = "unknown"
        elif kind == "approval.request" and msg.get("sessionId") == self.session_id:
            asking = next((c.ask for c in self._calls.values() if c.ask is not None), None)
            if asking is not None:  # [mcp] elicit_clients: the client's user may answer too
                self._spawn(self._answer(msg, asking))
        elif kind == "event.activity" and msg.get("text") and self._calls:
            for call in self._calls.values():
                call.note = str(msg["text"])[:300]
                call.poked.set()
        elif kind == "error" and msg.get("requestType") == "session.start":
            self.refused = str(msg.get("message", "refused"))
        elif kind == "user.ask":
            self._spawn(self._decline(msg))
        for fut in self._waiters.pop(str(kind), []):
            if not fut.done():
                fut.set_result(msg)

    def _cut_calls(self) -> None:
        """The link dropped: every call in flight ends now — ``unknown`` unless it only reads
        (it may have changed the page before the daemon went; it is never sent again)."""
        for call in self._calls.values():
            if call.ended.done():
                continue
            call.outcome.cut = True
            call.outcome.code = "CONNECTION_LOST"
            if call.read_only:
                call.outcome.outcome = "error"
                call.outcome.summary = "Browy's daemon went away during the call; it is safe "
                call.outcome.summary += "to try again"
            else:
                call.outcome.outcome = "unknown"
                call.outcome.summary = "Browy's daemon went away during the call"
            call.outcome.content = f"error CONNECTION_LOST: {call.outcome.summary}"
            call.ended.set_result(None)

    async def _answer(self, request: dict[str, Any], ask: Ask) -> None:
        try:
            decision = await ask(request)
        except Exception as exc:  # the client cannot ask: the panel decides alone
            log.info("could not ask the MCP client: %s", exc)
            return
        with contextlib.suppress(ConnectionError):
            await self._send({"type": "approval.response", "sessionId": self.session_id,
                              "approvalId": request.get("approvalId"),
                              "decision": "allow" if decision == "allow" else "deny"})  # fmt: skip

    async def _decline(self, msg: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionError):
            await self._send({"type": "user.answer", "sessionId": self.session_id,
                              "askId": msg.get("askId"), "cancelled": True})  # fmt: skip

    async def _reconnect(self) -> None:
        """After a drop: reach a daemon again (starting one), with the link backoff."""
        backoff = link_backoff()
        deadline = time.monotonic() + RECONNECT_BUDGET_S
        attempt = 0
        while not self._closed and time.monotonic() < deadline:
            try:
                await self.ensure()
                log.info("reconnected to the daemon")
                return
            except SessionRefused:
                return
            except (DaemonUnavailable, LinkRefusedError, OSError, TimeoutError) as exc:
                log.info("reconnecting: %s", exc)
            await asyncio.sleep(backoff.delay(attempt))
            attempt += 1

    # -- what a client asks --------------------------------------------------------------------

    async def tools(self, progress: Progress | None = None) -> list[dict[str, Any]]:
        """The tools this session may call (the daemon's ``tools.list.result``)."""
        await self.ensure(progress)
        waiter = self._waiter("tools.list.result")
        await self._send({"type": "tools.list", "sessionId": self.session_id})
        async with asyncio.timeout(10.0):
            result = await waiter
        tools = result.get("tools")
        return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        progress: Progress | None = None,
        read_only: bool = False,
        ask: Ask | None = None,
    ) -> CallOutcome:
        """Run one tool as a turn (see the module docstring). *read_only*: the tool only reads
        (if the link drops mid-call, it is an error, not ``unknown``). *ask*: how to ask the
        client's user about a guarded action, when the daemon asks it too."""
        await self.ensure(progress)
        turn_id = f"mcp-{secrets.token_hex(6)}"
        pending = _Pending(read_only=read_only, ask=ask)
        self._calls[turn_id] = pending
        try:
            await self._send({"type": "tool.call", "sessionId": self.session_id,
                              "turnId": turn_id, "tool": tool, "args": args})  # fmt: skip
            while True:
                poked: asyncio.Future[Any] = asyncio.ensure_future(pending.poked.wait())
                try:
                    await asyncio.wait({pending.ended, poked}, timeout=PROGRESS_EVERY_S,
                                       return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
                finally:
                    poked.cancel()
                if pending.ended.done():
                    return pending.outcome
                pending.poked.clear()
                if progress is not None:
                    await progress(pending.note or f"{tool}: still running")
        except asyncio.CancelledError:
            with contextlib.suppress(ConnectionError):
                await self._send(
                    {"type": "chat.cancel", "sessionId": self.session_id, "turnId": turn_id}
                )
            raise
        finally:
            self._calls.pop(turn_id, None)

    async def close(self) -> None:
        self._closed = True
        for task in list(self._background):
            task.cancel()
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
