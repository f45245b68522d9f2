"""Native messaging framing, sans-I/O (protocol.md section 1).

Each message is a 4-byte unsigned little-endian length, then exactly that many bytes of UTF-8
JSON holding one object. This module does no I/O and imports neither asyncio nor pydantic: the
relay imports it and must start fast (a test keeps it so).

Reading::

    decoder = NativeFrameDecoder()
    decoder.feed(chunk)                 # any chunking: one byte, half a frame, ten frames
    for event in decoder.events():
        if isinstance(event, StreamBroken):
            ...                         # report it (v2: error{code}), then close the stream
        else:
            try:
                msg = decode_message(event.payload)
            except InvalidMessage as exc:
                ...                     # report it and go on with the next frame
    ...
    if (broken := decoder.eof()) is not None:
        ...                             # the peer closed in the middle of a frame

Writing: ``encode_message(obj)`` or ``encode_frame(payload)``; both raise :class:`FrameTooLarge`
before producing anything when the payload exceeds the browser's 1 MiB limit.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from messages.errors import ErrorCode, FrameTooLarge, InvalidMessage, LocalError

__all__ = [
    "DEFAULT_MAX_INBOUND_FRAME",
    "HEADER_SIZE",
    "MAX_OUTBOUND_FRAME",
    "Frame",
    "NativeFrameDecoder",
    "Peek",
    "StreamBroken",
    "decode_message",
    "encode_frame",
    "encode_message",
    "peek",
]

#: Host -> browser limit: one byte more and Chrome closes the port (section 1).
MAX_OUTBOUND_FRAME = 1_048_576
#: Browser -> host: Chrome allows up to 64 MiB; above our limit the stream is broken (section 1).
DEFAULT_MAX_INBOUND_FRAME = 64 * 1024 * 1024
#: Length prefix size in bytes.
HEADER_SIZE = 4

_HEADER = struct.Struct("<I")
# Compact the read buffer once this many consumed bytes sit at its front. Below it, a frame's
# bytes are sliced out where they are and the buffer is only reset when fully drained.
_COMPACT_AT = 64 * 1024


@dataclass(frozen=True, slots=True)
class Frame:
    """One complete frame's payload (not yet decoded: see :func:`decode_message`)."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class StreamBroken:
    """The byte stream cannot be trusted any more: report ``code`` and close the stream."""

    code: ErrorCode
    message: str


class NativeFrameDecoder:
    """Split a byte stream into length-prefixed frames, whatever the chunking.

    Feed it bytes with :meth:`feed`, collect complete frames with :meth:`events`. A declared
    length above ``max_frame`` yields one :class:`StreamBroken` (``MESSAGE_TOO_LARGE``); after
    that :attr:`broken` is True, further input is ignored and nothing more is produced. At end
    of input call :meth:`eof` to learn whether the peer stopped in the middle of a frame.

    Cost is linear in the input: bytes are appended to one ``bytearray`` and read at an offset,
    never re-sliced per frame.
    """

    __slots__ = ("_broken", "_buf", "_max_frame", "_pos")

    def __init__(self, max_frame: int = DEFAULT_MAX_INBOUND_FRAME) -> None:
        if max_frame < 0:
            raise ValueError("max_frame must be >= 0")
        self._max_frame = max_frame
        self._buf = bytearray()
        self._pos = 0
        self._broken = False

    @property
    def max_frame(self) -> int:
        """The largest frame accepted; raising it (once authenticated) keeps what is buffered."""
        return self._max_frame

    @max_frame.setter
    def max_frame(self, value: int) -> None:
        if value < 0:
            raise ValueError("max_frame must be >= 0")
        self._max_frame = value

    @property
    def broken(self) -> bool:
        """True once a :class:`StreamBroken` was produced; the decoder is then inert."""
        return self._broken

    @property
    def pending_bytes(self) -> int:
        """Bytes received but not yet returned in a frame (a partial header or payload)."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Add received bytes. Never raises for any content; ignored once :attr:`broken`."""
        if not self._broken:
            self._buf += data

    def events(self) -> list[Frame | StreamBroken]:
        """Return every frame completed so far, in order, and drop them from the buffer.

        The list ends with a :class:`StreamBroken` if a declared length exceeded the limit; the
        caller must then close the stream. Frames before it are still valid and complete.
        """
        if self._broken:
            return []
        out: list[Frame | StreamBroken] = []
        buf = self._buf
        pos = self._pos
        end = len(buf)
        unpack_from = _HEADER.unpack_from
        max_frame = self._max_frame
        too_large = -1
        # Slicing a memoryview copies each payload once (bytearray slicing would copy twice).
        # The view must be released before the bytearray is resized below.
        with memoryview(buf) as view:
            while end - pos >= HEADER_SIZE:
                (length,) = unpack_from(buf, pos)
                if length > max_frame:
                    too_large = length
                    break
                start = pos + HEADER_SIZE
                stop = start + length
                if stop > end:
                    break
                out.append(Frame(view[start:stop].tobytes()))
                pos = stop
        if too_large >= 0:
            # Section 1: the stream cannot be trusted; nothing after this is a frame.
            self._broken = True
            self._buf = bytearray()
            self._pos = 0
            out.append(
                StreamBroken(
                    ErrorCode.MESSAGE_TOO_LARGE,
                    f"declared frame length {too_large} exceeds the limit of {max_frame} bytes",
                )
            )
            return out
        if pos == end:
            buf.clear()
            pos = 0
        elif pos >= _COMPACT_AT:
            # CPython deletes from the front of a bytearray without moving the rest.
            del buf[:pos]
            pos = 0
        self._pos = pos
        return out

    def eof(self) -> StreamBroken | None:
        """Signal end of input. Return a :class:`StreamBroken` if it cut a frame short.

        Returns None when the stream ended cleanly between frames, or when it had already been
        reported broken. The decoder is inert afterwards.
        """
        if self._broken:
            return None
        self._broken = True
        pending = self.pending_bytes
        self._buf = bytearray()
        self._pos = 0
        if pending == 0:
            return None
        return StreamBroken(
            ErrorCode.INVALID_MESSAGE, f"stream ended inside a frame ({pending} bytes pending)"
        )


def encode_frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its little-endian length, ready to write to the browser.

    Raises :class:`FrameTooLarge` (nothing is produced) when ``payload`` exceeds
    :data:`MAX_OUTBOUND_FRAME`: Chrome would close the port (section 1). The caller must split or
    trim the message per section 5, or fail the request it belongs to.
    """
    size = len(payload)
    if size > MAX_OUTBOUND_FRAME:
        raise FrameTooLarge(
            f"outbound frame of {size} bytes exceeds the limit of {MAX_OUTBOUND_FRAME} bytes"
        )
    return _HEADER.pack(size) + payload


def encode_message(obj: Mapping[str, Any]) -> bytes:
    """Serialise ``obj`` to JSON with orjson and frame it (see :func:`encode_frame`).

    Raises :class:`FrameTooLarge` if too large and :class:`LocalError` if ``obj`` holds values
    JSON cannot carry (including strings with lone surrogates, which orjson refuses to write).
    """
    try:
        payload = orjson.dumps(obj)
    except orjson.JSONEncodeError as exc:
        raise LocalError(f"cannot encode outbound message: {exc}") from exc
    return encode_frame(payload)


def _reject_constant(name: str) -> Any:
    # The stdlib decoder accepts NaN/Infinity; JSON (and orjson) does not.
    raise ValueError(f"invalid JSON constant {name}")


def _loads_tolerant(payload: bytes) -> Any:
    """Parse JSON that orjson refused, keeping lone surrogates (section 1); raise InvalidMessage."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMessage("", f"invalid UTF-8 at byte {exc.start}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        # json.JSONDecodeError is a ValueError; its text names the position, not our internals.
        raise InvalidMessage("", f"invalid JSON: {exc}") from None


def decode_message(payload: bytes) -> dict[str, Any]:
    """Decode one frame's payload into a JSON object with a string ``type``.

    Raises :class:`InvalidMessage` naming the problem (invalid UTF-8, invalid JSON, not an
    object, missing or non-string ``type``). The stream is still fine: report the error (v2
    ``error{code: INVALID_MESSAGE}``, v1: log) and read the next frame (section 1).

    Strings with lone surrogates, which Chrome can send and orjson refuses, are decoded by the
    stdlib decoder instead and kept as they are.
    """
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError:
        obj = _loads_tolerant(payload)
    if not isinstance(obj, dict):
        raise InvalidMessage("", f"message must be a JSON object, not {_json_kind(obj)}")
    kind = obj.get("type")
    if not isinstance(kind, str):
        if kind is None and "type" not in obj:
            raise InvalidMessage("type", "field required")
        raise InvalidMessage("type", f"must be a string, not {_json_kind(kind)}")
    return obj


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


@dataclass(frozen=True, slots=True)
class Peek:
    """The routing fields of a message, each None when absent or of the wrong JSON type."""

    type: str | None
    session_id: str | None
    protocol: int | None
    turn_id: str | None = None  # v2 chat.send / chat.done / chat.error


_EMPTY_PEEK = Peek(None, None, None)


def peek(payload: bytes) -> Peek:
    """Read only ``type``, ``sessionId`` and ``protocol`` of a frame, for the relay (section 6).

    Never raises: a payload that is not a JSON object gives ``Peek(None, None, None)``; a field
    of the wrong type is None. Validating the rest is the daemon's job.
    """
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError:
        try:
            obj = _loads_tolerant(payload)
        except InvalidMessage:
            return _EMPTY_PEEK
    if not isinstance(obj, dict):
        return _EMPTY_PEEK
    kind = obj.get("type")
    session_id = obj.get("sessionId")
    protocol = obj.get("protocol")
    turn_id = obj.get("turnId")
    return Peek(
        kind if isinstance(kind, str) else None,
        session_id if isinstance(session_id, str) else None,
        protocol if isinstance(protocol, int) and not isinstance(protocol, bool) else None,
        turn_id if isinstance(turn_id, str) else None,
    )
