"""Opening the link to the daemon, for the relay and the CLI (protocol.md section 6).

The transport is a Unix socket at :func:`nativehost.home.socket_path` (0700 directory, peer
credentials checked by the daemon), or — where Unix sockets are unavailable, or when
``[daemon] link_transport = "tcp"`` / ``BROWY_LINK_TRANSPORT=tcp`` — loopback TCP with a random
token that the daemon writes to ``run/link.json`` (0600) and compares in constant time.

The relay imports this module, so it stays light: standard library, msgpack and orjson only (the
transport setting is read with tomllib, not through the validated config).
"""

from __future__ import annotations

import asyncio
import os
import socket
import tomllib
from pathlib import Path
from typing import Any

import orjson

from actors.link.link_stream import LinkStream, client_handshake
from messages.link import LINK_VERSION_MAX, LINK_VERSION_MIN, LinkControl, LinkHello, LinkWelcome
from nativehost.home import run_dir, socket_path

__all__ = [
    "PACKAGE_VERSION",
    "DaemonUnavailable",
    "link_transport",
    "open_link",
    "query_daemon",
    "tcp_endpoint_path",
]

PACKAGE_VERSION = "0.1.0"


class DaemonUnavailable(ConnectionError):
    """No daemon answers at the link endpoint of this BROWY_HOME."""


def tcp_endpoint_path(home: Path) -> Path:
    return run_dir(home) / "link.json"


def link_transport(home: Path, env: dict[str, str] | None = None) -> str:
    """``"unix"`` or ``"tcp"``: the environment, then config.toml, then the platform default."""
    env = dict(os.environ) if env is None else env
    value = env.get("BROWY_LINK_TRANSPORT")
    if not value:
        try:
            with open(home / "config.toml", "rb") as fh:
                daemon = tomllib.load(fh).get("daemon", {})
            value = daemon.get("link_transport") if isinstance(daemon, dict) else None
        except (OSError, tomllib.TOMLDecodeError):
            value = None
    if value in ("unix", "tcp"):
        return str(value)
    return "unix" if hasattr(socket, "AF_UNIX") else "tcp"


async def _connect(home: Path) -> tuple[LinkStream, str | None]:
    try:
        if link_transport(home) == "tcp":
            endpoint = orjson.loads(tcp_endpoint_path(home).read_bytes())
            reader, writer = await asyncio.open_connection("127.0.0.1", int(endpoint["port"]))
            return LinkStream(reader, writer), str(endpoint["token"])
        reader, writer = await asyncio.open_unix_connection(str(socket_path(home)))
        return LinkStream(reader, writer), None
    except (OSError, ValueError, KeyError, orjson.JSONDecodeError) as exc:
        raise DaemonUnavailable(f"no daemon answers for {home}: {exc}") from exc


async def open_link(
    home: Path, *, role: str, origin: str = "", timeout: float = 5.0
) -> tuple[LinkStream, LinkWelcome]:
    """Connect to the daemon of *home* and complete the handshake.

    Raises :class:`DaemonUnavailable` when nothing listens, ``LinkRefusedError`` when the daemon
    refuses (e.g. ``PROTOCOL_MISMATCH`` after an upgrade), ``TimeoutError`` when it does not
    answer in *timeout* seconds.
    """
    stream, token = await _connect(home)
    hello = LinkHello(
        min_version=LINK_VERSION_MIN,
        max_version=LINK_VERSION_MAX,
        role=role,
        origin=origin,
        pid=os.getpid(),
        package_version=PACKAGE_VERSION,
        token=token,
    )
    try:
        welcome = await client_handshake(stream, hello, timeout=timeout)
    except BaseException:
        stream.close()
        raise
    return stream, welcome


async def query_daemon(
    home: Path, op: str, *, args: dict[str, Any] | None = None, timeout: float = 5.0
) -> dict[str, Any]:
    """Ask the daemon one control question as a ``cli`` client; returns its answer's args."""
    async with asyncio.timeout(timeout):
        stream, _welcome = await open_link(home, role="cli", timeout=timeout)
        try:
            stream.send(LinkControl(op=op, args=args or {}))
            await stream.drain()
            while True:
                env = await stream.recv()
                if env is None:
                    raise DaemonUnavailable("the daemon closed the link before answering")
                if isinstance(env, LinkControl) and env.op == op:
                    return dict(env.args)
        finally:
            stream.close()
            await stream.wait_closed()
