"""Listener: the actor that owns the daemon's listening socket.

``on_start`` binds — the Unix socket of the one path function (protocol.md section 6), its
directory private (0700) and the socket 0600, or 127.0.0.1 on a random port for the TCP
fallback — so a daemon whose tree has started accepts links. Each accepted connection is handed
to ``on_client`` (the link handshake and the link's own supervisor are the caller's). ``on_stop``
closes the socket first, so no new link arrives while the tree winds down, and removes the
socket file it made. It takes no messages.

Restart: the socket is bound again (a stale socket file of the same daemon is replaced: the
daemon holds the single-instance lock, so no other daemon can own it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from actors.runtime.actor import Actor

__all__ = ["Listener"]

log = logging.getLogger(__name__)

OnClient = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Listener(Actor[Any]):
    """Binds on start, closes on stop (see the module docstring)."""

    def __init__(
        self,
        on_client: OnClient,
        *,
        socket_path: Path | None = None,
        on_tcp_bound: Callable[[int], None] | None = None,
    ) -> None:
        self._on_client = on_client
        self._socket_path = socket_path  # None: TCP on 127.0.0.1
        self._on_tcp_bound = on_tcp_bound
        self._server: asyncio.Server | None = None
        self.port: int | None = None

    async def on_start(self) -> None:
        if self._socket_path is None:
            self._server = await asyncio.start_server(self._on_client, "127.0.0.1", 0)
            self.port = int(self._server.sockets[0].getsockname()[1])
            if self._on_tcp_bound is not None:
                self._on_tcp_bound(self.port)
            return
        path = self._socket_path
        # The daemon holds its lock, so a socket file left here is a dead daemon's (or ours).
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._on_client, str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)

    async def handle(self, msg: Any) -> Any:
        log.info("the listener takes no messages (%r ignored)", type(msg).__name__)

    async def _close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2.0)
        if self._socket_path is not None:
            with contextlib.suppress(OSError):
                self._socket_path.unlink()

    async def on_stop(self) -> None:
        await self._close()

    async def on_failure(self, exc: BaseException) -> None:
        await self._close()
