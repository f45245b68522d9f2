"""The daemon's side of the link handshake: who may open a link, and at which link version.

Rules (protocol.md section 6, architecture.md section 7):

- **Same user only.** On the Unix socket, the peer's uid (``SO_PEERCRED`` / ``LOCAL_PEERCRED``)
  must be ours; on the TCP fallback, the caller must present the token of ``run/link.json``,
  compared in constant time.
- **The first frame is ``hello``**, within the handshake deadline.
- **Versions.** The highest common link version is chosen; with none, the link is refused with
  ``PROTOCOL_MISMATCH``. A relay *newer* than this daemon (its lowest version above our highest)
  makes the daemon exit once idle, so the relay's next attempt starts a current daemon.

A refusal is one ``LinkRefused`` frame and the log line saying why.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os

from actors.link.link_stream import LinkStream, peer_uid
from messages.errors import ErrorCode
from messages.link import LINK_VERSION_MAX, LINK_VERSION_MIN, LinkHello, LinkRefused, LinkWelcome

__all__ = ["NewerRelay", "admit"]

log = logging.getLogger(__name__)


class NewerRelay:
    """The link was refused because the relay is newer: this daemon should make way."""


async def _refuse(stream: LinkStream, code: ErrorCode, message: str) -> None:
    log.warning("refused a link: %s: %s", code.value, message)
    stream.send(LinkRefused(code=code.value, message=message))
    await stream.drain()


async def admit(
    stream: LinkStream,
    writer: asyncio.StreamWriter,
    *,
    tcp_token: str | None,
    daemon_version: str,
    timeout: float,
) -> LinkHello | NewerRelay | None:
    """Run the handshake; return the caller's hello once welcomed, else None (refused), or
    :class:`NewerRelay` (refused, and this daemon should exit when idle)."""
    if tcp_token is None and peer_uid(writer) != os.getuid():
        await _refuse(stream, ErrorCode.ORIGIN_FORBIDDEN, "the link is open to its user only")
        return None
    async with asyncio.timeout(timeout):
        hello = await stream.recv()
    if not isinstance(hello, LinkHello):
        await _refuse(stream, ErrorCode.INVALID_MESSAGE, "the first link frame must be hello")
        return None
    if tcp_token is not None and not hmac.compare_digest(
        (hello.token or "").encode(), tcp_token.encode()
    ):
        await _refuse(stream, ErrorCode.ORIGIN_FORBIDDEN, "bad link token")
        return None
    version = min(LINK_VERSION_MAX, hello.max_version)
    if version < max(LINK_VERSION_MIN, hello.min_version):
        newer = hello.role == "relay" and hello.min_version > LINK_VERSION_MAX
        await _refuse(
            stream,
            ErrorCode.PROTOCOL_MISMATCH,
            f"link versions {hello.min_version}-{hello.max_version} requested; this daemon "
            f"({daemon_version}) speaks {LINK_VERSION_MIN}-{LINK_VERSION_MAX}"
            + (" and will exit when idle" if newer else ""),
        )
        return NewerRelay() if newer else None
    stream.send(LinkWelcome(version=version, daemon_version=daemon_version, daemon_pid=os.getpid()))
    await stream.drain()
    return hello
