"""The fake extension side of ``browy chaos``: an in-memory browser, panels, and a relay-like link.

:class:`ChaosPeer` stands for one browser profile (a v2 extension with its own ``installId``)
behind a relay. It keeps the product's relay rules by driving the real, pure
:class:`actors.relay.relay_core.RelayCore` — link drops end the turns in flight, reconnects re-send
only the registrations and tell the daemon which turns the relay ended (protocol.md section 6) —
over a real :class:`actors.link.link_stream.LinkStream` to the daemon.

Its :class:`FakeBrowser` answers ``cdp.send`` and ``tab.*`` like the extension does, and records
every command it *executes* (page-changing or not) with whether its answer reached the daemon, so
the harness can check "no page-changing command executed twice" and "every interrupted one was
reported unknown".

Faults are armed on the peer and fire on the next matching frame or command (the seams of
conventions.md item 12): frames corrupted, truncated, duplicated, delayed or reordered on their way
to the daemon; browser calls answered late, never, or twice; the link dropped or torn.

The records and the browser live in their own modules: ``TurnRecord``, ``Recorder`` and
``to_panels`` in :mod:`nativehost.chaos.panels`; ``FakeBrowser``, ``Executed`` and the request
tables in :mod:`nativehost.chaos.fake_browser`. The fault kinds are in
:mod:`nativehost.chaos.faults`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from actors.link.link_stream import LinkStream
from actors.relay.relay_core import (
    Action,
    LinkState,
    RelayCore,
    ToDaemon,
    ToDaemonControl,
    ToExtension,
)
from messages.link import LinkControl, LinkData, encode_link
from nativehost.chaos.fake_browser import HOST_REQUESTS, FakeBrowser
from nativehost.chaos.panels import PanelSide, Recorder, to_panels
from nativehost.link import open_link

__all__ = ["ORIGIN", "ChaosPeer"]

log = logging.getLogger(__name__)

ORIGIN = "chrome-extension://kmfpcmoidebagkbcjhngabjpcgedcmna/"

#: Seconds after which the host has given up on a browser call (CdpProxy deadline is 10 s).
LATE_ANSWER_S = 10.8


@dataclass(slots=True)
class _Out:
    payload: bytes | None = None
    control: tuple[str, dict[str, object]] | None = None
    generation: int = 0


class ChaosPeer(PanelSide):
    """One browser profile behind a relay, with its panels' sessions (see the module docstring).

    ``await start()`` links up and registers the sessions; ``await close()`` stops everything.
    ``on_fault(kind, peer)`` is called when an armed fault actually fires.
    """

    def __init__(
        self,
        home: Path,
        index: int,
        session_ids: list[str],
        recorder: Recorder,
        rng: random.Random,
        on_fault: Callable[[str, ChaosPeer], None],
    ) -> None:
        self.home = home
        self.index = index
        self.install_id = f"chaos-install-{index}"
        self.session_ids = session_ids
        self.recorder = recorder
        self.rng = rng
        self.on_fault = on_fault
        self.browser = FakeBrowser()
        self.core = RelayCore()
        self.stream: LinkStream | None = None
        self.generation = 0
        self.armed_frames: list[str] = []
        self.armed_browser: list[str] = []
        self.ready: dict[str, asyncio.Event] = {s: asyncio.Event() for s in session_ids}
        self.links = 0
        self._out: asyncio.Queue[_Out] = asyncio.Queue()
        self._held: _Out | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False
        self._link_up = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        self._writer = asyncio.ensure_future(self._write_loop())
        self._hello()
        for sid in self.session_ids:
            self.from_extension(
                {"type": "session.start", "sessionId": sid, "capabilities": ["cdp.activeTab"]}
            )
        await self._connect()

    def _hello(self) -> None:
        self.from_extension(
            {
                "type": "hello",
                "client": "extension",
                "protocol": 2,
                "installId": self.install_id,
                "extensionVersion": "0.0.0-chaos",
                "capabilities": [],
            }
        )

    async def close(self) -> None:
        self._closing = True
        if self.stream is not None:
            self.stream.close()
        for task in [self._reader, self._writer, *self._tasks]:
            if task is not None:
                task.cancel()
        for task in [self._reader, self._writer, *self._tasks]:
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.stream is not None:
            await self.stream.wait_closed()

    async def _connect(self) -> None:
        delay = 0.02
        while not self._closing:
            try:
                stream, _ = await open_link(self.home, role="relay", origin=ORIGIN, timeout=3.0)
            except (OSError, ConnectionError, TimeoutError, Exception):
                await asyncio.sleep(delay * (1 + self.rng.random()))
                delay = min(delay * 2, 0.5)
                continue
            self.stream = stream
            self.generation += 1
            self.links += 1
            self._reader = asyncio.ensure_future(self._read_loop(stream, self.generation))
            self._do(self.core.link_up(now=time.monotonic()))
            self._link_up.set()
            return

    def _link_lost(self, generation: int) -> None:
        if generation != self.generation or self._closing:
            return
        self.generation += 1  # frames queued for the old link are dropped
        self._link_up.clear()
        if self.stream is not None:
            self.stream.close()
        self.stream = None
        if self.core.state is LinkState.LINKED:
            self._do(self.core.link_down())
        self._spawn(self._connect())

    # -- the link -------------------------------------------------------------------------------

    async def _read_loop(self, stream: LinkStream, generation: int) -> None:
        try:
            while True:
                env = await stream.recv()
                if env is None:
                    break
                if isinstance(env, LinkData):
                    self._do(self.core.from_daemon(env.payload, now=time.monotonic()))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("peer %d: link %d broke: %s", self.index, generation, exc)
        self._link_lost(generation)

    def _do(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, ToDaemon):
                self._out.put_nowait(_Out(payload=action.payload, generation=self.generation))
            elif isinstance(action, ToDaemonControl):
                self._out.put_nowait(
                    _Out(control=(action.op, action.args), generation=self.generation)
                )
            elif isinstance(action, ToExtension):
                self._to_extension(action.payload)

    def _post(self, msg: dict[str, Any]) -> None:
        self.from_extension(msg)

    def from_extension(self, obj: dict[str, Any]) -> bool:
        """What the extension sends; returns whether the relay forwarded it to the daemon."""
        actions = self.core.from_extension(orjson.dumps(obj))
        self._do(actions)
        return any(isinstance(a, ToDaemon) for a in actions)

    async def _write_loop(self) -> None:
        while True:
            item = self._held or await self._out.get()
            self._held = None
            if item.generation != self.generation or self.stream is None:
                continue  # queued for a link that is gone: lost with it
            stream = self.stream
            try:
                if item.control is not None:
                    stream.send(LinkControl(op=item.control[0], args=dict(item.control[1])))
                elif item.payload is not None:
                    await self._send_data(stream, item)
                await stream.drain()
            except (ConnectionError, OSError, RuntimeError) as exc:
                log.info("peer %d: write failed: %s", self.index, exc)
                self._link_lost(item.generation)

    async def _send_data(self, stream: LinkStream, item: _Out) -> None:
        assert item.payload is not None
        payload = item.payload
        kind = orjson.loads(payload).get("type")
        fault = self.armed_frames[0] if self.armed_frames else None
        if fault is None or kind not in ("chat.send", "tool.result", "ping"):
            stream.send(LinkData(payload))
            return
        self.armed_frames.pop(0)
        self.on_fault(fault, self)
        if fault == "frame_corrupt":
            # Invalid UTF-8 in a well-framed message: INVALID_MESSAGE, then reading goes on.
            cut = self.rng.randrange(1, len(payload))
            stream.send(LinkData(payload[:cut] + b"\xff\xfe" + payload[cut:]))
            stream.send(LinkData(payload))
        elif fault == "frame_truncated":
            if self.rng.random() < 0.5:
                stream.send(LinkData(payload[: len(payload) // 2]))  # JSON cut short
                stream.send(LinkData(payload))
            else:
                # A link frame torn mid-way, then the link goes: the daemon sees a torn frame.
                raw = encode_link(LinkData(payload))
                stream.writer.write(raw[: self.rng.randrange(1, len(raw))])
                with contextlib.suppress(ConnectionError, OSError):
                    await stream.drain()
                self._link_lost(item.generation)
        elif fault == "frame_duplicate":
            stream.send(LinkData(payload))
            stream.send(LinkData(payload))
        elif fault == "frame_delay":
            await asyncio.sleep(self.rng.uniform(0.2, 1.5))
            if item.generation == self.generation:
                stream.send(LinkData(payload))
        elif fault == "frame_reorder":
            try:
                async with asyncio.timeout(0.5):
                    later = await self._out.get()
            except TimeoutError:
                later = None
            if later is not None and later.generation == item.generation:
                if later.payload is not None:
                    stream.send(LinkData(later.payload))
                elif later.control is not None:
                    stream.send(LinkControl(op=later.control[0], args=dict(later.control[1])))
            elif later is not None:
                self._held = later
            stream.send(LinkData(payload))

    def drop_link(self, *, garbage: bool = False) -> bool:
        """Close the link now (``garbage``: send bytes that are no link frame first)."""
        stream = self.stream
        if stream is None:
            return False
        if garbage:
            stream.writer.write(struct.pack("<I", 9) + b"\xc1garbage!")
        stream.close()
        self._link_lost(self.generation)
        return True

    # -- the extension side ---------------------------------------------------------------------

    def _to_extension(self, payload: bytes) -> None:
        msg = orjson.loads(payload)
        if msg.get("type") in HOST_REQUESTS:
            self._spawn(self._answer(msg))
        else:
            to_panels(msg, self.recorder, self.ready, self.from_extension)

    async def _answer(self, msg: dict[str, Any]) -> None:
        rec, ok, value = self.browser.execute(msg)
        rec.link = sys.intern(f"{self.index}/{self.links}")
        fault: str | None = None
        if rec.page_changing and self.armed_browser:
            fault = self.armed_browser.pop(0)
            rec.fault = fault
            self.on_fault(fault, self)
        answer: dict[str, Any] = {
            "type": "tool.result",
            "sessionId": rec.session_id,
            "callId": rec.call_id,
            "ok": ok,
        }
        if ok:
            answer["result"] = value
        else:
            answer["error"] = value
        if fault == "browser_never":
            rec.delivered = False
            return
        if fault == "browser_late":
            await asyncio.sleep(LATE_ANSWER_S)
            self.from_extension(answer)
            rec.delivered = False  # after the host's deadline: it must be dropped
            return
        await asyncio.sleep(self.rng.uniform(0.0, 0.02))
        forwarded = self.from_extension(answer)
        if fault == "browser_twice":
            self.from_extension(answer)
        rec.delivered = None if forwarded else False

    # -- the panels -----------------------------------------------------------------------------
