"""The asyncio shell around the link codec: one open link between a client and the daemon.

:mod:`messages.link` decides what the bytes mean; this module only moves them. Both ends use
:class:`LinkStream` (at most :data:`~messages.link.LINK_PREAUTH_MAX_FRAME` per frame until
:meth:`LinkStream.authenticated`); the caller adds :func:`client_handshake`; both check who is at
the other end of a Unix socket with :func:`peer_uid` (architecture.md section 7: the link is open
to the same user only).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import sys

from messages.codec import StreamBroken
from messages.link import (
    LINK_MAX_FRAME,
    LINK_PREAUTH_MAX_FRAME,
    LinkChallenge,
    LinkDecoder,
    LinkEnvelope,
    LinkHello,
    LinkProof,
    LinkRefused,
    LinkWelcome,
    encode_link,
    link_proof,
    proofs_match,
)

__all__ = [
    "LinkBroken",
    "LinkRefusedError",
    "LinkStream",
    "client_handshake",
    "peer_uid",
]

_READ_CHUNK = 256 * 1024


class LinkBroken(Exception):
    """The peer sent bytes that are not a link frame; the link must be closed."""


class LinkRefusedError(Exception):
    """The daemon refused the handshake (``code`` is an ErrorCode value)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class LinkStream:
    """Envelopes in, envelopes out, over one stream. Not safe for two concurrent readers."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        max_frame: int = LINK_PREAUTH_MAX_FRAME,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self._decoder = LinkDecoder(max_frame)
        self._ready: list[LinkEnvelope] = []

    async def recv(self) -> LinkEnvelope | None:
        """The next envelope, or None at a clean EOF. Raises LinkBroken on a corrupt stream."""
        while not self._ready:
            data = await self.reader.read(_READ_CHUNK)
            if not data:
                truncated = self._decoder.eof()
                if truncated is not None:
                    raise LinkBroken(truncated.message)
                return None
            self._decoder.feed(data)
            for event in self._decoder.events():
                if isinstance(event, StreamBroken):
                    raise LinkBroken(event.message)
                self._ready.append(event)
        return self._ready.pop(0)

    def authenticated(self) -> None:
        """The handshake completed: accept frames up to the link's full limit from now on
        (before it, a side accepts only :data:`~messages.link.LINK_PREAUTH_MAX_FRAME`)."""
        self._decoder.max_frame = LINK_MAX_FRAME

    def send(self, env: LinkEnvelope) -> None:
        """Queue one envelope for writing (call :meth:`drain` to apply backpressure)."""
        self.writer.write(encode_link(env))

    async def drain(self) -> None:
        await self.writer.drain()

    def close(self) -> None:
        """Close the transport; idempotent."""
        with contextlib.suppress(RuntimeError):
            self.writer.close()

    async def wait_closed(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            await self.writer.wait_closed()


async def client_handshake(
    stream: LinkStream, hello: LinkHello, *, timeout: float, token: str | None = None
) -> LinkWelcome:
    """Send *hello* and complete the handshake as the caller (link version 2).

    With a *token* (the TCP fallback), the daemon must first prove it knows it
    (``LinkChallenge``), and only then does the caller prove it (``LinkProof``): a listener that
    is not our daemon gets the hello and nothing else. Returns the :class:`LinkWelcome`; raises
    :class:`LinkRefusedError` when refused (or the daemon's proof is wrong: ``ORIGIN_FORBIDDEN``),
    ``TimeoutError`` when no answer comes in *timeout* seconds, ``ConnectionError`` when the link
    closes first.
    """
    stream.send(hello)
    await stream.drain()
    async with asyncio.timeout(timeout):
        env = await stream.recv()
        if isinstance(env, LinkChallenge):
            if token is None or hello.nonce is None:
                raise LinkRefusedError("ORIGIN_FORBIDDEN", "unexpected challenge on this link")
            expected = link_proof(token, "daemon", hello.nonce, env.nonce)
            if not proofs_match(expected, env.proof):
                raise LinkRefusedError(
                    "ORIGIN_FORBIDDEN",
                    "the listener did not prove it is this user's daemon (wrong link proof)",
                )
            stream.send(LinkProof(proof=link_proof(token, "caller", hello.nonce, env.nonce)))
            await stream.drain()
            env = await stream.recv()
        elif token is not None and isinstance(env, LinkWelcome):
            # A TCP daemon that welcomes without proving it knows the token is not ours.
            raise LinkRefusedError(
                "ORIGIN_FORBIDDEN", "the listener welcomed the link without proving the token"
            )
    if isinstance(env, LinkWelcome):
        stream.authenticated()
        return env
    if isinstance(env, LinkRefused):
        raise LinkRefusedError(env.code, env.message)
    if env is None:
        raise ConnectionError("the daemon closed the link during the handshake")
    raise LinkBroken(f"unexpected {type(env).__name__} during the handshake")


def peer_uid(writer: asyncio.StreamWriter) -> int | None:
    """The uid of the process at the other end of a Unix socket, or None if it cannot be known.

    Linux: ``SO_PEERCRED`` (struct ucred: pid, uid, gid). macOS/BSD: ``LOCAL_PEERCRED``
    (struct xucred: version, uid, ...). A TCP link has no peer credentials: it is checked by
    its token instead.
    """
    sock = writer.get_extra_info("socket")
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    try:
        if sys.platform.startswith("linux"):
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", raw)
            return int(uid)
        local_peercred = 0x001  # <sys/un.h>: LOCAL_PEERCRED, at level SOL_LOCAL (0)
        raw = sock.getsockopt(0, local_peercred, struct.calcsize("2I") + 16 * 4 + 4)
        _version, uid = struct.unpack_from("2I", raw)
        return int(uid)
    except OSError:
        return None
