"""The service worker's side of a real relay process, for ``browy chaos --process``.

:class:`ProcessPeer` is one simulated browser profile: it starts the real relay as Chrome does
(``python -m nativehost.relay.main chrome-extension://<id>/`` with pipes, native-messaging frames on
its stdin and stdout, split by :class:`RelayProtocol`), behaves like the extension's service worker
towards it, and answers the host's browser calls with a
:class:`nativehost.chaos.fake_browser.FakeBrowser`. What it does and why is described in
:mod:`nativehost.chaos.process_mode`, which runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import struct
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson

from nativehost.chaos.fake_browser import HOST_REQUESTS, FakeBrowser
from nativehost.chaos.panels import PanelSide, Recorder, to_panels
from nativehost.chaos.peer import ORIGIN

__all__ = ["HELLO_TIMEOUT_S", "QUEUE_LIMIT", "ProcessPeer", "RelayProtocol", "frame"]

#: The service worker gives a new port this long for its ``hello.ack`` (native.js helloTimeoutMs).
HELLO_TIMEOUT_S = 30.0
#: Messages the service worker holds while its port is not ready (native.js queueLimit).
QUEUE_LIMIT = 500


def frame(obj: dict[str, Any]) -> bytes:
    """One native-messaging frame: 4-byte little-endian length, then UTF-8 JSON."""
    payload = orjson.dumps(obj)
    return struct.pack("<I", len(payload)) + payload


class RelayProtocol(asyncio.SubprocessProtocol):
    """Chrome's end of the pipes: splits the relay's stdout into frames."""

    def __init__(self, on_frame: Callable[[bytes], None]) -> None:
        self.on_frame = on_frame
        self.buffer = bytearray()
        self.exited = asyncio.Event()
        self.stdout_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        if fd != 1:
            return
        buf = self.buffer
        buf += data
        while len(buf) >= 4:
            (length,) = struct.unpack_from("<I", buf)
            if len(buf) < 4 + length:
                break
            payload = bytes(buf[4 : 4 + length])
            del buf[: 4 + length]
            self.on_frame(payload)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.stdout_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


class _Relay:
    """One relay process of a profile (one Chrome native port)."""

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.transport: asyncio.SubprocessTransport | None = None
        self.protocol: RelayProtocol | None = None
        self.pid = 0
        self.linked = False  # hello.ack seen
        self.killed = False  # by the harness

    def write(self, obj: dict[str, Any]) -> bool:
        transport = self.transport
        if transport is None or transport.get_returncode() is not None:
            return False
        pipe = transport.get_pipe_transport(0)
        if not isinstance(pipe, asyncio.WriteTransport) or pipe.is_closing():
            return False
        try:
            pipe.write(frame(obj))
        except (ConnectionError, OSError, RuntimeError):
            return False
        return True


class ProcessPeer(PanelSide):
    """One browser profile: the service worker's side of a real relay process, its panels'
    sessions and an in-memory browser (see the module docstring)."""

    def __init__(
        self,
        env: dict[str, str],
        index: int,
        session_ids: list[str],
        recorder: Recorder,
        rng: random.Random,
        daemon_pid: Callable[[], int | None],
    ) -> None:
        self.env = env
        self.daemon_pid = daemon_pid
        self.index = index
        self.install_id = f"chaos-install-{index}"
        self.session_ids = session_ids
        self.recorder = recorder
        self.rng = rng
        self.browser = FakeBrowser()
        self.ready: dict[str, asyncio.Event] = {s: asyncio.Event() for s in session_ids}
        self.relay: _Relay | None = None
        self.generation = 0
        self.queue: list[dict[str, Any]] = []
        self.relay_pids: list[int] = []
        self.unplanned_exits = 0
        self.errors: Counter[str] = Counter()
        self.problems: list[str] = []
        self._attempt = 0
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the port -------------------------------------------------------------------------------

    @property
    def linked(self) -> bool:
        return self.relay is not None and self.relay.linked

    async def start(self) -> None:
        await self._launch()

    async def _launch(self) -> None:
        """connectNative: a new relay process, then ``hello`` (native.js ``connect``)."""
        if self._closing:
            return
        self.generation += 1
        relay = _Relay(self.generation)
        self.relay = relay
        for event in self.ready.values():
            event.clear()
        loop = asyncio.get_running_loop()
        protocol = RelayProtocol(lambda payload: self._on_frame(relay, payload))
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
            sys.executable,
            "-m",
            "nativehost.relay.main",
            ORIGIN,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=self.env,
        )
        relay.transport = transport
        relay.protocol = protocol
        relay.pid = transport.get_pid()
        self.relay_pids.append(relay.pid)
        self._spawn(self._watch(relay))
        relay.write(
            {
                "type": "hello",
                "client": "extension",
                "protocol": 2,
                "installId": self.install_id,
                "extensionVersion": "0.0.0-chaos",
                "capabilities": [],
            }
        )

    async def _watch(self, relay: _Relay) -> None:
        """onDisconnect and the hello timer: a relay that exits, closes stdout or never acks."""
        assert relay.protocol is not None and relay.transport is not None
        protocol = relay.protocol
        waits = [
            asyncio.ensure_future(protocol.exited.wait()),
            asyncio.ensure_future(protocol.stdout_closed.wait()),
        ]
        try:
            try:
                async with asyncio.timeout(HELLO_TIMEOUT_S):
                    while not relay.linked:
                        done, _ = await asyncio.wait(waits, timeout=0.05)
                        if done:
                            break
            except TimeoutError:
                self.problems.append(f"peer {self.index}: no hello.ack from relay {relay.pid}")
                relay.transport.kill()
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        await self._gone(relay)

    async def _gone(self, relay: _Relay) -> None:
        assert relay.transport is not None and relay.protocol is not None
        relay.linked = False
        if relay is self.relay and not self._closing:
            # background.js endOpenTurns: the port dropped, so a chat.send it carried may have
            # died in the relay's pipe; the worker ends each open turn (by turnId) itself.
            for sid in self.session_ids:
                rec = self.recorder.open.get(sid)
                if rec is not None:
                    self.recorder.ended(sid, "chat.error", "CONNECTION_LOST", rec.turn_id)
        if relay.transport.get_returncode() is None and not self._closing:
            # stdout closed but the process lingers: Chrome would drop the port; so do we.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await relay.protocol.exited.wait()
            if relay.transport.get_returncode() is None:
                relay.transport.kill()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await relay.protocol.exited.wait()
        relay.transport.close()
        if self._closing or relay is not self.relay:
            return
        if not relay.killed:
            self.unplanned_exits += 1
            self.problems.append(
                f"peer {self.index}: relay {relay.pid} exited by itself "
                f"(code {relay.transport.get_returncode()})"
            )
        for event in self.ready.values():
            event.clear()
        # native.js: an exponential, jittered, bounded backoff before the next connectNative.
        delay = min(2.0, 0.05 * 2**self._attempt) * (1 + self.rng.random())
        self._attempt += 1
        await asyncio.sleep(delay)
        await self._launch()

    def kill_relay(self) -> int | None:
        """SIGKILL the current relay process (only a linked one); returns its pid."""
        relay = self.relay
        if relay is None or not relay.linked or relay.transport is None:
            return None
        if relay.transport.get_returncode() is not None:
            return None
        relay.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(relay.pid, signal.SIGKILL)
        return relay.pid

    def _post(self, msg: dict[str, Any]) -> None:
        self._send(msg)

    def _send(self, obj: dict[str, Any]) -> bool:
        """native.js ``send``: now when ready, else queued (the registrations go first)."""
        relay = self.relay
        if relay is not None and relay.linked:
            return relay.write(obj)
        if len(self.queue) >= QUEUE_LIMIT:
            self._dropped(obj)
            return False
        self.queue.append(obj)
        return True

    def _dropped(self, obj: dict[str, Any]) -> None:
        """background.js ``handleDrop``: a chat.send that cannot be sent still ends."""
        if obj.get("type") == "chat.send":
            turn = obj.get("turnId")
            self.recorder.ended(
                str(obj.get("sessionId")),
                "chat.error",
                "CONNECTION_LOST",
                turn if isinstance(turn, str) else None,
            )

    # -- what the relay sends -------------------------------------------------------------------

    def _on_frame(self, relay: _Relay, payload: bytes) -> None:
        if relay is not self.relay:
            return
        try:
            msg = orjson.loads(payload)
            if isinstance(msg, dict):
                self._dispatch(relay, msg)
        except Exception as exc:  # a bad frame is a finding, not a crash of the harness
            self.problems.append(f"peer {self.index}: bad frame from the relay: {exc}")

    def _dispatch(self, relay: _Relay, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "hello.ack":
            if relay.linked:
                return
            relay.linked = True
            self._attempt = 0
            # On ready: every live session.start, then what was queued (background.js).
            for s in self.session_ids:
                relay.write(
                    {"type": "session.start", "sessionId": s, "capabilities": ["cdp.activeTab"]}
                )
            queued, self.queue = self.queue, []
            for obj in queued:
                if not relay.write(obj):
                    self._dropped(obj)
        elif kind == "ping":
            relay.write({"type": "pong", "id": msg.get("id")})
        elif kind in HOST_REQUESTS:
            self._spawn(self._answer(relay, msg))
        elif kind == "error":
            self.errors[str(msg.get("code"))] += 1
        else:
            to_panels(msg, self.recorder, self.ready, self._send)

    async def _answer(self, relay: _Relay, msg: dict[str, Any]) -> None:
        rec, ok, value = self.browser.execute(msg)
        # Call ids are per daemon connection: the relay's port and the daemon that asked.
        rec.link = sys.intern(f"{self.index}/{relay.generation}/{self.daemon_pid()}")
        answer: dict[str, Any] = {
            "type": "tool.result",
            "sessionId": rec.session_id,
            "callId": rec.call_id,
            "ok": ok,
        }
        answer["result" if ok else "error"] = value
        await asyncio.sleep(self.rng.uniform(0.0, 0.02))
        # The port the command came on is gone: its answer cannot reach the host (the worker's
        # CdpExecutor fails commands of a lost connection instead of sending them on a new one).
        if relay is not self.relay or not relay.linked:
            rec.delivered = False
            return
        rec.delivered = None if relay.write(answer) else False

    # -- the panels -----------------------------------------------------------------------------

    # -- the end --------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the port (EOF on the relay's stdin: it exits), then make sure it is gone."""
        self._closing = True
        relay = self.relay
        if relay is not None and relay.transport is not None and relay.protocol is not None:
            pipe = relay.transport.get_pipe_transport(0)
            if pipe is not None:
                pipe.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5.0):
                    await relay.protocol.exited.wait()
            if relay.transport.get_returncode() is None:
                self.problems.append(f"peer {self.index}: relay {relay.pid} ignored EOF")
                relay.transport.kill()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5.0):
                        await relay.protocol.exited.wait()
            relay.transport.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
