"""The daemon in the test's own event loop, reached over its real link, with a scripted model.

``DaemonHarness`` starts :class:`nativehost.daemon.server.DaemonServer` on a temporary
``BROWY_HOME`` (Unix socket) and the :class:`nativehost.demo.model_server.ScriptedModelServer` over
real HTTP; a ``LinkPeer`` plays the relay (v1 or v2 extension traffic inside link envelopes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from actors.link.link_stream import LinkStream
from actors.store.chat_store import ChatStore
from messages.link import LinkControl, LinkData
from nativehost.config import load_config
from nativehost.daemon.server import DaemonServer
from nativehost.demo.model_server import ScriptedModelServer
from nativehost.link import open_link

ORIGIN = "chrome-extension://kmfpcmoidebagkbcjhngabjpcgedcmna/"


#: Answers one browser request (cdp.send / tab.*) like the extension: (ok, result, error), or
#: None to leave it unanswered (a page that never answers).
BrowserFn = Callable[[dict[str, Any]], tuple[bool, Any, str | None] | None]

BROWSER_REQUESTS = frozenset(
    {"cdp.send", "tab.new", "tab.activate", "tab.list", "tab.getActive", "tab.close"}
)


class FakeTab:
    """One tab, as far as navigation goes: ``Page.navigate`` commits a new document at once;
    ``Runtime.evaluate`` of ``[location.href, document.title, document.readyState]`` reports it.
    Anything else fails as on a page the debugger cannot script, so snapshots are unavailable."""

    def __init__(self, url: str = "https://example.test/") -> None:
        self.url = url
        self.loader = 1
        self.opened: list[dict[str, Any]] = []  # the tab.new requests

    def __call__(self, msg: dict[str, Any]) -> tuple[bool, Any, str | None]:
        info = {"tabId": 7, "url": self.url, "title": "Example", "active": True, "windowId": 1}
        if msg["type"] == "tab.getActive":
            return True, info, None
        if msg["type"] == "tab.list":
            return True, [info], None
        if msg["type"] == "tab.new":  # one tab only: "opening" one lands on it
            self.url = str(msg.get("url") or "about:blank")
            self.opened.append(msg)
            return True, {**info, "url": self.url, "active": bool(msg.get("active"))}, None
        if msg["type"] != "cdp.send":
            return False, None, "not supported by the fake tab"
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "Page.navigate":
            self.url = str(params.get("url"))
            self.loader += 1
            result = {"frameId": "F", "loaderId": f"L{self.loader}"}
            return True, {"tabId": 7, "result": result}, None
        if method == "Page.getFrameTree":
            frame = {"id": "F", "loaderId": f"L{self.loader}", "url": self.url}
            return True, {"tabId": 7, "result": {"frameTree": {"frame": frame}}}, None
        if method == "Runtime.evaluate" and "readyState" in str(params.get("expression")):
            value = {"type": "object", "value": [self.url, "Example", "complete"]}
            return True, {"tabId": 7, "result": {"result": value}}, None
        return False, None, "Cannot access contents of the page"


def no_page(msg: dict[str, Any]) -> tuple[bool, Any, str | None]:
    """A fake extension with one tab that cannot be scripted (every CDP command fails)."""
    if msg["type"] == "tab.getActive":
        return (
            True,
            {"tabId": 7, "url": "https://example.test/", "title": "x", "active": True},
            None,
        )
    return False, None, "Cannot access a chrome:// URL"


class LinkPeer:
    """Plays the relay (and, with *browser*, the extension's CDP executor: every browser request
    it receives is recorded in ``browser_calls`` and answered with ``tool.result``)."""

    def __init__(self, stream: LinkStream, browser: BrowserFn | None = None) -> None:
        self.stream = stream
        self.inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.log: list[dict[str, Any]] = []
        self.browser = browser
        self.browser_calls: list[dict[str, Any]] = []
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            while True:
                env = await self.stream.recv()
                if env is None:
                    break
                if isinstance(env, LinkData):
                    msg = orjson.loads(env.payload)
                    self.log.append(msg)
                    if self.browser is not None and msg.get("type") in BROWSER_REQUESTS:
                        self.browser_calls.append(msg)
                        answered = self.browser(msg)
                        if answered is None:
                            continue
                        ok, result, error = answered
                        answer = {"type": "tool.result", "sessionId": msg["sessionId"],
                                  "callId": msg["callId"], "ok": ok}  # fmt: skip
                        if ok:
                            answer["result"] = result
                        else:
                            answer["error"] = error
                        await self.send(answer)
                        continue
                    await self.inbox.put(msg)
        finally:
            await self.inbox.put(None)

    async def send(self, msg: dict[str, Any]) -> None:
        self.stream.send(LinkData(orjson.dumps(msg)))
        await self.stream.drain()

    async def control(self, op: str, **args: Any) -> None:
        self.stream.send(LinkControl(op=op, args=args))
        await self.stream.drain()

    async def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            msg = await self.inbox.get()
        if msg is None:
            raise EOFError("the daemon closed the link")
        return msg

    async def until(
        self, kind: str, *, session_id: str | None = None, timeout: float = 10.0, **fields: Any
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Frames up to and including the first of type *kind* (matching session and fields)."""
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(timeout):
            while True:
                msg = await self.recv(timeout=timeout)
                if (
                    msg.get("type") == kind
                    and (session_id is None or msg.get("sessionId") == session_id)
                    and all(msg.get(k) == v for k, v in fields.items())
                ):
                    return msg, seen
                seen.append(msg)

    async def turn_end(
        self, session_id: str, timeout: float = 15.0
    ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """(chat.done|chat.error, the status event after it, everything of the session before)."""
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(timeout):
            while True:
                msg = await self.recv(timeout=timeout)
                if msg.get("sessionId") != session_id:
                    continue
                if msg.get("type") in ("chat.done", "chat.error"):
                    end = msg
                    while True:
                        status = await self.recv(timeout=timeout)
                        if (
                            status.get("type") == "event.activity"
                            and status.get("sessionId") == session_id
                        ):
                            return end, status, seen
                        seen.append(status)
                seen.append(msg)

    async def hello(
        self,
        protocol: int = 1,
        install_id: str = "install-1",
        capabilities: tuple[str, ...] = (),
        browser: str | None = None,
    ) -> dict[str, Any]:
        msg: dict[str, Any] = {"type": "hello", "client": "extension", "protocol": protocol}
        if protocol >= 2:
            msg.update(
                installId=install_id, extensionVersion="0.1.0", capabilities=list(capabilities)
            )
            if browser is not None:
                msg["browser"] = browser
        await self.send(msg)
        return (await self.until("hello.ack"))[0]

    async def start(self, session_id: str, *, tabs: bool = False, **extra: Any) -> None:
        caps = ["cdp.activeTab"] if tabs else []
        await self.send(
            {"type": "session.start", "sessionId": session_id, "capabilities": caps, **extra}
        )
        await self.until("models.list")

    async def close(self) -> None:
        self.stream.close()
        await self.stream.wait_closed()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class DaemonHarness:
    def __init__(
        self,
        home: Path,
        script: Any,
        *,
        config: str = "",
        provider: str = "openai",
        store: ChatStore | None = None,
        model_toml: str | None = None,
    ) -> None:
        #: The whole ``[model]`` table instead of the scripted server's (e.g. Copilot's CLI).
        self.model_toml = model_toml
        self.provider = provider
        self.store = store  # the daemon's chat store (e.g. with an fsync seam), or its own
        self.home = home
        self.script = script
        self.extra_config = config
        self.model = ScriptedModelServer(script)
        self.server: DaemonServer | None = None
        self._task: asyncio.Task[int] | None = None
        self.peers: list[LinkPeer] = []

    async def __aenter__(self) -> DaemonHarness:
        base_url = await self.model.start()
        self.home.mkdir(parents=True, exist_ok=True)
        model = self.model_toml or (
            "[model]\n"
            f'provider = "{self.provider}"\n'
            f'base_url = "{base_url}"\n'
            'model = "scripted-model"\n'
            'api_key = "sk-test-key"\n'
        )
        (self.home / "config.toml").write_text(
            model + "[daemon]\nidle_exit_seconds = 0\n" + self.extra_config
        )
        await self.start_daemon()
        return self

    async def start_daemon(self) -> None:
        config = load_config(self.home, env={})
        self.server = DaemonServer(self.home, config, version="test", store=self.store)
        self._task = asyncio.ensure_future(self.server.serve())
        async with asyncio.timeout(10):
            while True:
                try:
                    stream, _ = await open_link(self.home, role="cli")
                    stream.close()
                    break
                except (OSError, ConnectionError):
                    await asyncio.sleep(0.01)

    async def stop_daemon(self) -> None:
        if self.server is not None and self._task is not None:
            self.server._stop.set()
            async with asyncio.timeout(10):
                await self._task

    async def peer(self, browser: BrowserFn | None = None, *, role: str = "relay") -> LinkPeer:
        origin = ORIGIN if role == "relay" else ""
        stream, _ = await open_link(self.home, role=role, origin=origin)
        peer = LinkPeer(stream, browser)
        self.peers.append(peer)
        return peer

    async def __aexit__(self, *exc: object) -> None:
        for peer in self.peers:
            await peer.close()
        await self.stop_daemon()
        await self.model.stop()
