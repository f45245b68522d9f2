"""StdioFramer: owns Chrome's pipes (fd 0 in, the protected stdout fd out) in the relay.

It turns bytes from Chrome into whole frames (:class:`messages.codec.NativeFrameDecoder`) and
hands each payload to ``on_frame``; it writes frames asked of it with :class:`WriteFrame`. It is
the only writer of the native stream (conventions.md item 8). Rules (protocol.md section 1):

- A frame over Chrome's 1 MiB limit is never written: it is refused before a byte goes out
  (Chrome would close the port), logged, and dropped.
- A declared inbound length over the limit means the stream can no longer be trusted: it is
  logged and treated like EOF.
- EOF on stdin — Chrome closed the port — calls ``on_eof`` once; the relay then exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from actors.runtime.actor import Actor
from actors.runtime.ref import Overflow
from messages.codec import Frame, NativeFrameDecoder, StreamBroken, encode_frame
from messages.errors import FrameTooLarge

__all__ = ["StdioFramer", "WriteFrame"]

log = logging.getLogger(__name__)
_READ_CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteFrame:
    """Write one JSON payload to Chrome as one native frame."""

    payload: bytes


class StdioFramer(Actor[WriteFrame]):
    """Owns Chrome's pipes in the relay: reads whole frames, writes the frames it is told to."""

    mailbox_size = 256
    overflow = Overflow.WAIT

    def __init__(
        self,
        *,
        stdin: BinaryIO,
        stdout_fd: int,
        on_frame: Callable[[bytes], Awaitable[None]],
        on_eof: Callable[[str], Awaitable[None]],
    ) -> None:
        self._stdin = stdin
        self._stdout_fd = stdout_fd
        self._on_frame = on_frame
        self._on_eof = on_eof
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._reader: asyncio.StreamReader | None = None

    async def on_start(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_READ_CHUNK * 4)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self._stdin)
        out = os.fdopen(self._stdout_fd, "wb", buffering=0, closefd=False)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)
        self._reader = reader

    def begin_reading(self) -> None:
        """Start delivering Chrome's frames to ``on_frame``: call once their consumer is ready.

        Until then bytes wait in the pipe (and in the kernel), so nothing is lost.
        """
        if self._reader_task is None and self._reader is not None:
            self._reader_task = asyncio.get_running_loop().create_task(
                self._read(self._reader), name="stdio-reader"
            )

    async def _read(self, reader: asyncio.StreamReader) -> None:
        decoder = NativeFrameDecoder()
        reason = "eof"
        try:
            while True:
                data = await reader.read(_READ_CHUNK)
                if not data:
                    broken = decoder.eof()
                    if broken is not None:
                        log.warning("stdin ended inside a frame: %s", broken.message)
                    break
                decoder.feed(data)
                for event in decoder.events():
                    if isinstance(event, Frame):
                        await self._on_frame(event.payload)
                    elif isinstance(event, StreamBroken):
                        log.error("native stream broken (%s): %s", event.code, event.message)
                        reason = "broken"
                if decoder.broken:
                    break
        except (ConnectionError, OSError) as exc:
            log.warning("stdin failed: %s", exc)
            reason = "error"
        except Exception:
            log.exception("the stdin reader failed")
            reason = "error"
        await self._on_eof(reason)

    async def handle(self, msg: WriteFrame) -> Any:
        assert self._writer is not None
        try:
            frame = encode_frame(msg.payload)
        except FrameTooLarge:
            log.error("refused to write a %d-byte frame to Chrome (limit 1 MiB)", len(msg.payload))
            return False
        self._writer.write(frame)
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            log.warning("stdout closed: %s", exc)
            return False
        return True

    async def on_stop(self) -> None:
        await self._close()

    async def on_failure(self, exc: BaseException) -> None:
        await self._close()

    async def _close(self) -> None:
        if self._reader_task is not None and self._reader_task is not asyncio.current_task():
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader_task
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer.drain()
            self._writer.close()
