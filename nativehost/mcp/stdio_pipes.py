"""stdin/stdout for the MCP SDK's stdio transport, on the event loop instead of worker threads.

The SDK's ``stdio_server()`` reads and writes the standard streams through ``anyio.wrap_file``:
every line read, every write and every flush is a hop to a worker thread and back — about a
third of a millisecond per call, measured by ``python -m bench mcp``. It also takes explicit
streams; :func:`pipe_stdio` gives it ones on non-blocking pipes (``connect_read_pipe`` /
``connect_write_pipe``), and does what the SDK does around them: fd 0 reads the null device and
fd 1 goes to stderr while serving, so a stray ``print`` (ours or a library's) cannot corrupt the
protocol, and both are restored after.

When stdin or stdout is not a pipe, socket or character device (a regular file, say), it
yields None and the caller uses the SDK's own streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator

__all__ = ["MAX_LINE", "pipe_stdio"]

#: The longest JSON-RPC line read (a call's arguments are capped far below this).
MAX_LINE = 32 * 1024 * 1024


class _Lines:
    """Async iteration over stdin's lines, as ``stdio_server`` reads them."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                raise StopAsyncIteration from None
            line = exc.partial
        except asyncio.LimitOverrunError as exc:
            # Too long to be ours: drop it (the SDK answers the garbage with a parse error).
            await self._reader.readexactly(exc.consumed)
            return "{}\n"
        return line.decode("utf-8", errors="replace")


class _Out:
    """``write`` and ``flush`` of stdout, as ``stdio_server`` calls them."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@contextlib.asynccontextmanager
async def pipe_stdio() -> AsyncIterator[tuple[_Lines, _Out] | None]:
    """(stdin lines, stdout) on the loop, or None when they are not pipes (see the module)."""
    loop = asyncio.get_running_loop()
    in_fd, out_fd = os.dup(0), os.dup(1)
    reader = asyncio.StreamReader(limit=MAX_LINE)
    try:
        stdin = os.fdopen(in_fd, "rb", buffering=0)
        stdout = os.fdopen(out_fd, "wb", buffering=0)
    except OSError:
        os.close(in_fd)
        os.close(out_fd)
        raise
    try:
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), stdin
        )
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, stdout
        )
    except (ValueError, OSError):
        stdin.close()
        stdout.close()
        yield None
        return
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    writer = asyncio.StreamWriter(write_transport, protocol, reader, loop)
    try:
        yield _Lines(reader), _Out(writer)
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
        read_transport.close()
        write_transport.close()
