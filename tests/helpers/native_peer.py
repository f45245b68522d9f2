"""A stand-in for Chrome's side of a native port: starts the real relay with pipes, as Chrome does.

``RelayPeer`` writes framed JSON to the relay's stdin and reads frames from its stdout, with a
deadline on every read. It also cleans up the daemon that a test's ``BROWY_HOME`` started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from nativehost.daemon.instance import is_running, pid_path

OUR_ORIGIN = "chrome-extension://kmfpcmoidebagkbcjhngabjpcgedcmna/"


def relay_env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["BROWY_HOME"] = str(home)
    env.setdefault("BROWY_IDLE_EXIT_SECONDS", "5")
    env.update(extra)
    return env


def frame(obj: dict[str, Any] | bytes) -> bytes:
    payload = obj if isinstance(obj, bytes) else orjson.dumps(obj)
    return struct.pack("<I", len(payload)) + payload


class RelayPeer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(
        cls, home: Path, origin: str = OUR_ORIGIN, *, argv: list[str] | None = None, **env: str
    ) -> RelayPeer:
        args = argv or [sys.executable, "-m", "nativehost.relay.main", origin]
        proc = await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=relay_env(home, **env),
        )
        return cls(proc)

    async def send(self, obj: dict[str, Any] | bytes, *, raw: bool = False) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(obj if raw and isinstance(obj, bytes) else frame(obj))
        await self.proc.stdin.drain()

    async def recv(self, timeout: float = 15.0) -> dict[str, Any]:
        """The next frame from the relay, decoded. Raises TimeoutError or EOFError."""
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            try:
                header = await self.proc.stdout.readexactly(4)
                (length,) = struct.unpack("<I", header)
                payload = await self.proc.stdout.readexactly(length)
            except asyncio.IncompleteReadError as exc:
                raise EOFError("the relay closed stdout") from exc
        obj = orjson.loads(payload)
        assert isinstance(obj, dict)
        return obj

    async def recv_until(
        self, kind: str, *, timeout: float = 15.0, session_id: str | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Read frames until one of type *kind* (and session); returns it and those before it."""
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(timeout):
            while True:
                msg = await self.recv(timeout=timeout)
                if msg.get("type") == kind and (
                    session_id is None or msg.get("sessionId") == session_id
                ):
                    return msg, seen
                seen.append(msg)

    async def handshake(self, protocol: int = 1, *sessions: str) -> list[dict[str, Any]]:
        """hello + session.start for each session; returns everything up to the last models.list."""
        hello: dict[str, Any] = {"type": "hello", "client": "extension", "protocol": protocol}
        if protocol >= 2:
            hello.update(installId="install-test", extensionVersion="0.1.0", capabilities=[])
        await self.send(hello)
        out = [(await self.recv_until("hello.ack"))[0]]
        for sid in sessions:
            await self.send(
                {"type": "session.start", "sessionId": sid, "capabilities": ["cdp.activeTab"]}
            )
            last, before = await self.recv_until("models.list")
            out.extend([*before, last])
        return out

    async def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        with contextlib.suppress(ConnectionError):
            await self.proc.stdin.wait_closed()

    async def wait_exit(self, timeout: float = 10.0) -> int:
        async with asyncio.timeout(timeout):
            return await self.proc.wait()

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


def daemon_pid(home: Path) -> int | None:
    try:
        return int(pid_path(home).read_text().strip())
    except (OSError, ValueError):
        return None


async def wait_for(predicate: Any, *, timeout: float = 10.0, interval: float = 0.02) -> None:
    """Poll *predicate* until true, with a deadline (a liveness wait, not a sleep)."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(interval)


def kill_daemon(home: Path) -> None:
    """Last-resort cleanup of a test's daemon, by its recorded pid (never by name)."""
    pid = daemon_pid(home)
    if pid is not None and is_running(home):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def play_browser(
    peer: RelayPeer, *, until: Callable[[dict[str, Any]], bool] | None = None, **wait: Any
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Answer the turn's browser calls (an active tab; CDP commands fail as unsupported) until a
    frame matches *until*, or, without it, until ``wait["when"]()`` holds. Returns that frame
    (or None) and the other frames seen."""
    seen: list[dict[str, Any]] = []
    tab = {"tabId": 1, "url": "https://example.test/", "title": "Example", "windowId": 1}
    async with asyncio.timeout(15.0):
        while True:
            if until is None and wait["when"]():
                return None, seen
            try:
                msg = await peer.recv(timeout=0.1)
            except TimeoutError:
                continue
            kind = msg.get("type")
            if until is not None and until(msg):
                return msg, seen
            if kind in ("tab.getActive", "cdp.send"):
                answer: dict[str, Any] = {
                    "type": "tool.result",
                    "sessionId": msg["sessionId"],
                    "callId": msg["callId"],
                }
                if kind == "tab.getActive":
                    answer.update(ok=True, result=tab)
                else:
                    answer.update(ok=False, error=f"{msg.get('method')} is not supported here")
                await peer.send(answer)
            else:
                seen.append(msg)
