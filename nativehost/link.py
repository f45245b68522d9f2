"""Opening the link to the daemon, for the relay and the CLI (protocol.md section 6).

The transport is a Unix socket at :func:`nativehost.home.socket_path`, or — where Unix sockets
are unavailable, or when ``[daemon] link_transport = "tcp"`` / ``BROWY_LINK_TRANSPORT=tcp`` —
loopback TCP with a random token that the daemon writes to ``run/link.json`` (0600).

The caller checks who the daemon is before it says anything of weight (link version 2,
protocol.md section 6): the socket's directory must be ours and private (checked with ``lstat``
before connecting) and the peer's uid ours (after connecting); on TCP the daemon must prove it
knows the token before the caller proves it (the token never crosses the wire). Anything else is
refused with :class:`UntrustedDaemon`: nothing but the hello is sent.

The relay imports this module, so it stays light: standard library, msgpack and orjson only (the
transport setting is read with tomllib, not through the validated config).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import tomllib
from pathlib import Path
from typing import Any

import orjson

from actors.link.link_stream import LinkRefusedError, LinkStream, client_handshake, peer_uid
from messages.link import (
    LINK_VERSION_CALLER_MIN,
    LINK_VERSION_MAX,
    LinkControl,
    LinkHello,
    LinkWelcome,
)
from nativehost.home import private_dir_problem, run_dir, socket_path
from nativehost.version import VERSION

__all__ = [
    "DaemonUnavailable",
    "UntrustedDaemon",
    "link_transport",
    "open_link",
    "query_daemon",
    "tcp_endpoint_path",
]


log = logging.getLogger(__name__)


class DaemonUnavailable(ConnectionError):
    """No daemon answers at the link endpoint of this BROWY_HOME."""


class UntrustedDaemon(LinkRefusedError):
    """What answers at the link endpoint may not be this user's daemon: refused, nothing sent.
    ``browy doctor`` says what is wrong and how to fix it."""

    def __init__(self, message: str) -> None:
        super().__init__("ORIGIN_FORBIDDEN", message)


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


def _untrusted(message: str) -> UntrustedDaemon:
    log.error("refusing the link: %s (browy doctor explains)", message)
    return UntrustedDaemon(message)


async def _connect(home: Path) -> tuple[LinkStream, str | None]:
    if link_transport(home) == "tcp":
        try:
            endpoint = orjson.loads(tcp_endpoint_path(home).read_bytes())
            reader, writer = await asyncio.open_connection("127.0.0.1", int(endpoint["port"]))
        except (OSError, ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
            raise DaemonUnavailable(f"no daemon answers for {home}: {exc}") from exc
        return LinkStream(reader, writer), str(endpoint["token"])
    path = socket_path(home)
    problem = private_dir_problem(path.parent)
    if problem is not None and path.parent.exists():
        raise _untrusted(f"the daemon's socket directory cannot be trusted: {problem}")
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
    except OSError as exc:
        raise DaemonUnavailable(f"no daemon answers for {home}: {exc}") from exc
    stream = LinkStream(reader, writer)
    uid = peer_uid(writer)
    if uid != os.getuid():
        stream.close()
        who = "an unknown user" if uid is None else f"uid {uid}"
        raise _untrusted(f"the process listening on {path} runs as {who}, not as us")
    return stream, None


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
        min_version=LINK_VERSION_CALLER_MIN,
        max_version=LINK_VERSION_MAX,
        role=role,
        origin=origin,
        pid=os.getpid(),
        package_version=VERSION,
        nonce=os.urandom(16).hex(),  # secrets.token_hex, without importing random & co
    )
    try:
        welcome = await client_handshake(stream, hello, timeout=timeout, token=token)
    except UntrustedDaemon:
        stream.close()
        raise
    except LinkRefusedError as exc:
        stream.close()
        if exc.code == "ORIGIN_FORBIDDEN" and token is not None:
            raise _untrusted(f"the TCP link on 127.0.0.1: {exc.message}") from None
        raise
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
