"""The relay/CLI <-> daemon link framing, sans-I/O (protocol.md section 6).

Each link frame is a 4-byte little-endian length, then a msgpack map: the envelope. The key
``"t"`` holds the envelope type; the other keys are the dataclass field names::

    "hello"    LinkHello      caller -> daemon, first frame: version range, role, origin, pid
    "challenge" LinkChallenge daemon -> caller (TCP, v2): its nonce and its proof of the token
    "proof"    LinkProof      caller -> daemon (TCP, v2): the caller's proof of the token
    "welcome"  LinkWelcome    daemon -> caller: the link version chosen
    "refused"  LinkRefused    daemon -> caller: no common version, bad token, ...; then close
    "data"     LinkData       either way: one extension JSON message, as raw bytes (msgpack bin)
    "control"  LinkControl    either way: an operation between our own processes

``LinkData.payload`` is the extension's JSON exactly as it came off (or goes onto) the native
stream: the relay never re-encodes it, the daemon validates it (``INVALID_MESSAGE``).

Who is on the other end (link version 2, protocol.md section 6): on the Unix socket each side
checks the other's uid (peer credentials) and the caller checks, before connecting, that the
socket's directory is ours and private. On the TCP fallback the token of ``run/link.json`` never
crosses the wire: each side proves it knows it with an HMAC over both sides' nonces
(:func:`link_proof`), the daemon first, so a stale ``link.json`` pointing at another user's
listener gets nothing but a hello. Until the handshake completes a side accepts frames of at most
:data:`LINK_PREAUTH_MAX_FRAME` bytes.

The link is trusted but verified: a frame that is not msgpack, not a map, of an unknown type, or
with a missing or mistyped field yields :class:`StreamBroken` (``INVALID_MESSAGE``) and the
decoder stops; the caller must close the link. Extra keys are ignored (a newer peer may add
fields). Like :mod:`messages.codec`, this module imports neither asyncio nor pydantic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import msgpack

from messages.codec import HEADER_SIZE, Frame, NativeFrameDecoder, StreamBroken
from messages.errors import ErrorCode, FrameTooLarge, LocalError

__all__ = [
    "LINK_MAX_FRAME",
    "LINK_PREAUTH_MAX_FRAME",
    "LINK_VERSION_MAX",
    "LINK_VERSION_MIN",
    "LinkChallenge",
    "LinkControl",
    "LinkData",
    "LinkDecoder",
    "LinkEnvelope",
    "LinkHello",
    "LinkProof",
    "LinkRefused",
    "LinkWelcome",
    "encode_link",
    "link_proof",
    "proofs_match",
]

#: Version 1: the TCP token was sent in the hello. Version 2: peer checks both ways and, on TCP,
#: a challenge/response in which the token never crosses the wire. A daemon still accepts a
#: version-1 caller on the Unix socket (peer credentials cover it); our callers speak only 2.
LINK_VERSION_MIN: Final = 1
LINK_VERSION_MAX: Final = 2
#: What our relays and CLI accept: never a link without the daemon proving who it is.
LINK_VERSION_CALLER_MIN: Final = 2
#: A link frame carries at most one inbound extension message (64 MiB) plus envelope overhead.
LINK_MAX_FRAME: Final = 64 * 1024 * 1024 + 64 * 1024
#: Before the handshake completes: a hello, a challenge or a proof fits in far less.
LINK_PREAUTH_MAX_FRAME: Final = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkHello:
    """First frame from a relay, CLI or MCP client: what it speaks and who it is."""

    min_version: int
    max_version: int
    role: str  # "relay" | "cli" | "mcp"
    origin: str  # the extension origin the relay serves; "" for cli/mcp
    pid: int
    package_version: str
    token: str | None = None  # version 1 on TCP only; a version-2 caller never sends it
    nonce: str | None = None  # version 2: the caller's random nonce (hex)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkChallenge:
    """TCP, version 2: the daemon's nonce and its proof that it knows the token."""

    nonce: str
    proof: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkProof:
    """TCP, version 2: the caller's proof that it knows the token."""

    proof: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkWelcome:
    """The daemon accepted the hello; ``version`` is the highest common link version."""

    version: int
    daemon_version: str
    daemon_pid: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkRefused:
    """The daemon refused the hello (``code`` is an ErrorCode value); it closes the link."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class LinkData:
    """One extension message, as the exact JSON bytes of the native frame."""

    payload: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkControl:
    """An operation between our processes (e.g. ``"shutdown_when_idle"``); args are msgpack-able."""

    op: str
    args: dict[str, Any] = field(default_factory=dict)


LinkEnvelope = (
    LinkHello | LinkChallenge | LinkProof | LinkWelcome | LinkRefused | LinkData | LinkControl
)


def link_proof(token: str, side: str, caller_nonce: str, daemon_nonce: str) -> str:
    """HMAC-SHA256 of both nonces under the link token, for ``side`` (``"daemon"`` or
    ``"caller"``: the two proofs differ, so one cannot be replayed as the other)."""
    # Imported here: only the TCP fallback proves anything, and a relay's start-up (on the Unix
    # socket) should not load OpenSSL's hashes for nothing (bench/bench_relay.py).
    import hashlib
    import hmac

    message = f"browy-link-v2|{side}|{caller_nonce}|{daemon_nonce}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def proofs_match(expected: str, given: str) -> bool:
    """Compare two proofs in constant time."""
    import hmac

    return hmac.compare_digest(expected.encode(), given.encode())


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_opt_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def _is_bytes(value: object) -> bool:
    return isinstance(value, bytes)


def _is_str_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) for k in value)


_Check = Callable[[object], bool]

# type key -> (class, {field: check}, optional fields). The table is the envelope schema.
_SCHEMA: Final[dict[str, tuple[type[Any], dict[str, _Check], frozenset[str]]]] = {
    "hello": (
        LinkHello,
        {
            "min_version": _is_int,
            "max_version": _is_int,
            "role": _is_str,
            "origin": _is_str,
            "pid": _is_int,
            "package_version": _is_str,
            "token": _is_opt_str,
            "nonce": _is_opt_str,
        },
        frozenset({"token", "nonce"}),
    ),
    "challenge": (LinkChallenge, {"nonce": _is_str, "proof": _is_str}, frozenset()),
    "proof": (LinkProof, {"proof": _is_str}, frozenset()),
    "welcome": (
        LinkWelcome,
        {"version": _is_int, "daemon_version": _is_str, "daemon_pid": _is_int},
        frozenset(),
    ),
    "refused": (LinkRefused, {"code": _is_str, "message": _is_str}, frozenset()),
    "data": (LinkData, {"payload": _is_bytes}, frozenset()),
    "control": (LinkControl, {"op": _is_str, "args": _is_str_map}, frozenset({"args"})),
}
_TYPE_KEY: Final[dict[type[Any], str]] = {cls: key for key, (cls, _, _) in _SCHEMA.items()}


def encode_link(env: LinkEnvelope, max_frame: int = LINK_MAX_FRAME) -> bytes:
    """Encode one envelope as a link frame (length prefix + msgpack map).

    Raises :class:`FrameTooLarge` when the frame would exceed ``max_frame`` (nothing is
    produced), and :class:`LocalError` when ``LinkControl.args`` holds what msgpack cannot carry.
    """
    if isinstance(env, LinkData):
        # The hot path: one key lookup less, and no dict built from the dataclass fields.
        body: dict[str, Any] = {"t": "data", "payload": env.payload}
    else:
        body = {"t": _TYPE_KEY[type(env)]}
        for name in _SCHEMA[body["t"]][1]:
            body[name] = getattr(env, name)
    try:
        packed: bytes = msgpack.packb(body, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise LocalError(f"cannot encode link envelope {type(env).__name__}: {exc}") from exc
    if len(packed) > max_frame:
        raise FrameTooLarge(f"link frame of {len(packed)} bytes exceeds {max_frame} bytes")
    return len(packed).to_bytes(HEADER_SIZE, "little") + packed


def _decode_envelope(payload: bytes) -> LinkEnvelope | str:
    """Return the envelope, or a description of what is wrong with the frame."""
    try:
        body = msgpack.unpackb(payload, raw=False, use_list=True, strict_map_key=True)
    except Exception as exc:
        # msgpack raises many exception types for garbage (ExtraData, FormatError, StackError,
        # UnicodeDecodeError, ...); all of them mean the same here.
        return f"link frame is not msgpack: {type(exc).__name__}"
    if not isinstance(body, dict):
        return "link frame is not a msgpack map"
    kind = body.get("t")
    if not isinstance(kind, str) or kind not in _SCHEMA:
        return f"unknown link envelope type {kind!r:.60}"
    cls, checks, optional = _SCHEMA[kind]
    values: dict[str, Any] = {}
    for name, check in checks.items():
        if name not in body:
            if name in optional:
                continue
            return f"link envelope {kind!r} lacks {name!r}"
        value = body[name]
        if not check(value):
            return f"link envelope {kind!r} has a bad {name!r}"
        values[name] = value
    envelope: LinkEnvelope = cls(**values)
    return envelope


class LinkDecoder:
    """Split a link byte stream into envelopes; interface as :class:`NativeFrameDecoder`.

    :meth:`events` returns envelopes in order, ending with a :class:`StreamBroken` when a frame
    is too long (``MESSAGE_TOO_LARGE``) or garbled (``INVALID_MESSAGE``); after that nothing more
    is produced and :attr:`broken` is True. The caller must then close the link.
    """

    __slots__ = ("_broken", "_frames")

    def __init__(self, max_frame: int = LINK_MAX_FRAME) -> None:
        self._frames = NativeFrameDecoder(max_frame)
        self._broken = False

    @property
    def max_frame(self) -> int:
        return self._frames.max_frame

    @max_frame.setter
    def max_frame(self, value: int) -> None:
        """Raise the limit once the peer is authenticated (the frames buffered so far keep)."""
        self._frames.max_frame = value

    @property
    def broken(self) -> bool:
        """True once a :class:`StreamBroken` was produced."""
        return self._broken

    @property
    def pending_bytes(self) -> int:
        """Bytes received but not yet returned as an envelope."""
        return 0 if self._broken else self._frames.pending_bytes

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Add received bytes. Never raises; ignored once :attr:`broken`."""
        if not self._broken:
            self._frames.feed(data)

    def events(self) -> list[LinkEnvelope | StreamBroken]:
        """Return every envelope completed so far (see the class docstring)."""
        if self._broken:
            return []
        out: list[LinkEnvelope | StreamBroken] = []
        for event in self._frames.events():
            if not isinstance(event, Frame):
                self._broken = True
                out.append(event)
                break
            decoded = _decode_envelope(event.payload)
            if isinstance(decoded, str):
                self._broken = True
                out.append(StreamBroken(ErrorCode.INVALID_MESSAGE, decoded))
                break
            out.append(decoded)
        return out

    def eof(self) -> StreamBroken | None:
        """Signal end of input; return a :class:`StreamBroken` if it cut a frame short."""
        if self._broken:
            return None
        self._broken = True
        return self._frames.eof()
