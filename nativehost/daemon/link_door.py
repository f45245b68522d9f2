"""The daemon's side of the link handshake: who may open a link, and at which link version.

Rules (protocol.md section 6, architecture.md section 7):

- **Same user only.** On the Unix socket, the peer's uid (``SO_PEERCRED`` / ``LOCAL_PEERCRED``)
  must be ours (and the caller checks ours). On the TCP fallback, link version 2: the daemon
  proves it knows the token of ``run/link.json`` first (``LinkChallenge``: an HMAC over both
  nonces), then the caller does (``LinkProof``), compared in constant time; the token itself
  never crosses the wire, and a version-1 caller (which would send it) is refused on TCP.
- **Small frames until then.** Before the welcome a caller may send frames of at most
  :data:`~messages.link.LINK_PREAUTH_MAX_FRAME` bytes (a stranger cannot make the daemon buffer
  megabytes); after it, the link's full limit.
- **The first frame is ``hello``**, within the handshake deadline.
- **Versions.** The highest common link version is chosen; with none, the link is refused with
  ``PROTOCOL_MISMATCH``. A relay *newer* than this daemon (its lowest version above our highest)
  makes the daemon exit once idle, so the relay's next attempt starts a current daemon.

A refusal is one ``LinkRefused`` frame and the log line saying why.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets

from actors.link.link_stream import LinkStream, peer_uid
from messages.errors import ErrorCode
from messages.link import (
    LINK_VERSION_MAX,
    LINK_VERSION_MIN,
    LinkChallenge,
    LinkHello,
    LinkProof,
    LinkRefused,
    LinkWelcome,
    link_proof,
    proofs_match,
)

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
    if tcp_token is not None and not await _prove(stream, hello, tcp_token, version, timeout):
        return None
    stream.send(LinkWelcome(version=version, daemon_version=daemon_version, daemon_pid=os.getpid()))
    await stream.drain()
    stream.authenticated()
    return hello


async def _prove(
    stream: LinkStream, hello: LinkHello, token: str, version: int, timeout: float
) -> bool:
    """The TCP challenge/response (link version 2): the daemon proves it knows the token, then
    checks the caller's proof. False (and the link refused) when it does not hold."""
    if version < 2 or not hello.nonce:
        # Version 1 sends the token in the hello to whoever listens: never accepted on TCP.
        await _refuse(
            stream,
            ErrorCode.PROTOCOL_MISMATCH,
            "this daemon needs link version 2 on TCP (the token never crosses the wire); "
            "update the caller",
        )
        return False
    nonce = secrets.token_hex(16)
    stream.send(LinkChallenge(nonce=nonce, proof=link_proof(token, "daemon", hello.nonce, nonce)))
    await stream.drain()
    async with asyncio.timeout(timeout):
        answer = await stream.recv()
    expected = link_proof(token, "caller", hello.nonce, nonce)
    if not isinstance(answer, LinkProof) or not proofs_match(expected, answer.proof):
        await _refuse(stream, ErrorCode.ORIGIN_FORBIDDEN, "bad link proof")
        return False
    return True
