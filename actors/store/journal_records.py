"""The chat journal's record framing: encode one record, read the whole records of a journal.

Pure (bytes in, records out; no files), so its rules are tested byte by byte. The files are
:mod:`actors.store.journal`'s.

Record framing (little-endian)::

    +----------------+------------------------+---------------------------------------+
    | length: u32 LE | payload: msgpack map   | crc: u32 LE = crc32(length + payload) |
    +----------------+------------------------+---------------------------------------+

A reader takes records while they are whole and their CRC matches; the first short, oversized,
corrupt or non-map record ends the journal.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import msgpack

from messages.errors import LocalError

__all__ = ["MAX_RECORD", "StoreError", "encode_record", "scan_records"]

#: Larger declared lengths are taken as corruption (a tool result kept whole for the model can be
#: big, but not this big: the inbound frame limit is 64 MiB).
MAX_RECORD = 96 * 1024 * 1024
_HEAD = struct.Struct("<I")
_OVERHEAD = 2 * _HEAD.size


class StoreError(LocalError):
    """The store could not do what was asked (disk error, closed store, misuse). Log it."""


def _scrub(value: Any) -> Any:
    """Replace lone surrogates (Chrome can send them; UTF-8 cannot carry them) with U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def encode_record(obj: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """Frame one record; return the bytes and the record they hold (``obj``, or a copy with lone
    surrogates replaced). Raises :class:`StoreError` if msgpack cannot carry it or it is too
    big."""
    try:
        try:
            payload = msgpack.packb(obj, use_bin_type=True)
        except UnicodeEncodeError:
            obj = _scrub(obj)
            payload = msgpack.packb(obj, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise StoreError(f"record cannot be encoded: {exc}") from exc
    if len(payload) > MAX_RECORD:
        raise StoreError(f"record of {len(payload)} bytes is over the {MAX_RECORD} limit")
    head = _HEAD.pack(len(payload))
    return head + payload + _HEAD.pack(zlib.crc32(payload, zlib.crc32(head))), obj


def scan_records(data: bytes | bytearray | memoryview) -> tuple[list[dict[str, Any]], int]:
    """Decode the whole records at the start of ``data``; return them and the bytes they span.

    Never raises: the first record that is short, too long, fails its CRC or is not a msgpack map
    ends the scan (everything from there on is the tail to cut).
    """
    view = memoryview(data)
    records: list[dict[str, Any]] = []
    pos, end = 0, len(view)
    while end - pos >= _OVERHEAD:
        (length,) = _HEAD.unpack_from(view, pos)
        stop = pos + _HEAD.size + length
        if length > MAX_RECORD or stop + _HEAD.size > end:
            break
        (crc,) = _HEAD.unpack_from(view, stop)
        if zlib.crc32(view[pos:stop]) != crc:
            break
        try:
            obj = msgpack.unpackb(view[pos + _HEAD.size : stop], raw=False)
        except Exception:  # msgpack raises several unrelated types for bad input
            break
        if not isinstance(obj, dict):
            break
        records.append(obj)
        pos = stop + _HEAD.size
    return records, pos
