"""The chat journal's record framing: encode one record, read the whole records of a journal.

Pure (bytes in, records out; no files), so its rules are tested byte by byte. The files are
:mod:`actors.store.journal`'s.

Record framing (little-endian)::

    +----------------+------------------------+---------------------------------------+
    | length: u32 LE | payload: msgpack map   | crc: u32 LE = crc32(length + payload) |
    +----------------+------------------------+---------------------------------------+

A reader takes records while they are whole and their CRC matches. Appends are the only writes,
so a crash can only leave a *torn tail*: the start of one record. Damage anywhere else (a bad disk,
another program) is skipped: the reader resynchronises on the next record from which whole records
run to the end (:func:`scan_journal`), so one damaged range loses only the records it touches.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import msgpack

from messages.errors import LocalError

__all__ = [
    "MAX_RECORD",
    "JournalScan",
    "StoreError",
    "encode_record",
    "scan_journal",
    "scan_records",
]

#: Larger declared lengths are taken as corruption (a tool result kept whole for the model can be
#: big, but not this big: the inbound frame limit is 64 MiB).
MAX_RECORD = 96 * 1024 * 1024
_HEAD = struct.Struct("<I")
_OVERHEAD = 2 * _HEAD.size
#: The first byte of a msgpack map: fixmap, map 16, map 32.
_MAP_MARKER_BYTES = frozenset([*range(0x80, 0x90), 0xDE, 0xDF])
_MAP_MARKER = re.compile(rb"[\x80-\x8f\xde\xdf]")


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


def _frame_at(data: bytes, pos: int) -> tuple[dict[str, Any], int] | None:
    """The record framed at ``pos`` and the end of its frame, if a whole, valid one is there."""
    if len(data) - pos < _OVERHEAD:
        return None
    (length,) = _HEAD.unpack_from(data, pos)
    stop = pos + _HEAD.size + length
    if length > MAX_RECORD or stop + _HEAD.size > len(data):
        return None
    (crc,) = _HEAD.unpack_from(data, stop)
    view = memoryview(data)
    if zlib.crc32(view[pos:stop]) != crc:
        return None
    try:
        obj = msgpack.unpackb(view[pos + _HEAD.size : stop], raw=False)
    except Exception:  # msgpack raises several unrelated types for bad input
        return None
    if not isinstance(obj, dict):
        return None
    return obj, stop + _HEAD.size


def _is_torn(tail: bytes) -> bool:
    """Whether a tail is what a crash leaves: the start of one record (shorter than its header,
    or shorter than the length it declares) or zeros (a file system that grew the file but had not
    written it yet). Anything else is damage."""
    if len(tail) < _HEAD.size or not tail.strip(b"\x00"):
        return True
    length: int = _HEAD.unpack_from(tail, 0)[0]
    return length <= MAX_RECORD and _HEAD.size + length + _HEAD.size > len(tail)


@dataclass(frozen=True, slots=True)
class JournalScan:
    """What :func:`scan_journal` found: the records, their frames, the damage between them."""

    records: list[dict[str, Any]]
    spans: list[tuple[int, int]]  # each record's frame
    skipped: list[tuple[int, int]]  # damaged byte ranges between whole records
    end: int  # the end of the last whole record; what follows is the tail
    torn: bool  # the tail (if any) is what a crash leaves, not damage

    @property
    def damaged(self) -> bool:
        """Whether anything but a torn tail was found: bytes that should not be there."""
        return bool(self.skipped) or not self.torn


def scan_journal(data: bytes) -> JournalScan:
    """Read every whole record of a journal, resynchronising after damage. Never raises.

    From a record that is short, too long, fails its CRC or is not a msgpack map, the reader looks
    for the next offset where a record starts *and whole records follow it up to the end*: the
    bytes in between are skipped (:attr:`JournalScan.skipped`). That second condition keeps it
    from taking for a record a frame that merely appears inside damaged bytes — page text kept in
    a record can hold such bytes. When no such offset exists, everything from the damage on is the
    tail (a torn record after a crash, or damage reaching the end).
    """
    records: list[dict[str, Any]] = []
    spans: list[tuple[int, int]] = []
    skipped: list[tuple[int, int]] = []
    pos = 0
    while pos < len(data):
        frame = _frame_at(data, pos)
        if frame is not None:
            records.append(frame[0])
            spans.append((pos, frame[1]))
            pos = frame[1]
            continue
        resync = _resync(data, pos + 1)
        if resync is None:
            break
        start, frames = resync
        skipped.append((pos, start))
        for obj, stop in frames:
            records.append(obj)
            spans.append((start, stop))
            start = stop
        pos = start
    return JournalScan(records, spans, skipped, pos, _is_torn(data[pos:]))


def _resync(data: bytes, start: int) -> tuple[int, list[tuple[dict[str, Any], int]]] | None:
    """The first offset from ``start`` where whole records run to the end of data, and them.

    Linear in the bytes searched, whatever they hold: a candidate's chain of declared lengths is
    walked first (each offset at most once, remembered in ``ends``), and only a chain that lands
    exactly on the end has its frames checked (each frame at most once, in ``frames``)."""
    ends: dict[int, bool] = {}
    frames: dict[int, tuple[dict[str, Any], int] | None] = {}
    # A record's payload is a msgpack map: only offsets 4 bytes before a map marker can start one.
    for marker in _MAP_MARKER.finditer(data, start + _HEAD.size):
        pos = marker.start() - _HEAD.size
        if not _lengths_reach_end(data, pos, ends):
            continue
        chain: list[tuple[dict[str, Any], int]] = []
        at = pos
        while at < len(data):
            if at not in frames:
                frames[at] = _frame_at(data, at)
            frame = frames[at]
            if frame is None:
                break
            chain.append(frame)
            at = frame[1]
        if at == len(data):
            return pos, chain
    return None


def _lengths_reach_end(data: bytes, pos: int, ends: dict[int, bool]) -> bool:
    """Whether the declared lengths from ``pos`` on lead exactly to the end of data."""
    walked: list[int] = []
    reached = False
    while True:
        if pos == len(data):
            reached = True
            break
        if pos in ends:
            reached = ends[pos]
            break
        if len(data) - pos < _OVERHEAD or data[pos + _HEAD.size] not in _MAP_MARKER_BYTES:
            break
        walked.append(pos)
        pos += _OVERHEAD + _HEAD.unpack_from(data, pos)[0]
        if pos > len(data):
            break
    for at in walked:
        ends[at] = reached
    return reached


def scan_records(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The whole records of a journal (see :func:`scan_journal`) and where the last one ends."""
    scan = scan_journal(data)
    return scan.records, scan.end
