"""A journal damaged in the middle: only the records the damage touches are lost, the original bytes
are kept aside, and what was lost is logged. A torn tail (a crash) is cut as before."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from actors.store.journal import Journal
from actors.store.journal_records import encode_record, scan_journal


def records_of(n: int) -> list[dict[str, Any]]:
    return [{"k": "row", "n": i, "text": f"record {i} " + "x" * (i * 7 % 40)} for i in range(n)]


def journal_bytes(records: list[dict[str, Any]]) -> tuple[bytes, list[tuple[int, int]]]:
    """The framed records and where each lies."""
    out, spans = b"", []
    for rec in records:
        frame, _ = encode_record(rec)
        spans.append((len(out), len(out) + len(frame)))
        out += frame
    return out, spans


def side_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".corrupt*"))


def test_one_corrupt_record_in_the_middle_loses_that_record_only_and_keeps_a_copy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = records_of(3)
    data, spans = journal_bytes(records)
    damaged = bytearray(data)
    damaged[spans[1][0] + 9] ^= 0xFF  # one byte inside the second record's payload
    path = tmp_path / "sp-1.journal"
    path.write_bytes(bytes(damaged))

    with caplog.at_level(logging.WARNING):
        loaded = Journal(path).load()

    assert loaded == [records[0], records[2]]  # was: [records[0]]
    (copy,) = side_files(path)
    assert copy.name == "sp-1.journal.corrupt"
    assert copy.read_bytes() == bytes(damaged)
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    width = spans[1][1] - spans[1][0]
    assert f"{width} damaged bytes at offset {spans[1][0]}" in caplog.text
    assert "sp-1.journal.corrupt" in caplog.text
    # The journal itself was repaired: read again, it is whole, and appends follow on.
    assert path.read_bytes() == data[: spans[0][1]] + data[spans[2][0] :]
    again = Journal(path)
    assert again.load() == [records[0], records[2]]
    again.append({"k": "row", "n": 3})
    again.close()
    assert Journal(path).load() == [records[0], records[2], {"k": "row", "n": 3}]
    assert side_files(path) == [copy]  # no new copy: there was nothing more to repair


def test_a_side_copy_is_never_overwritten(tmp_path: Path) -> None:
    records = records_of(3)
    data, spans = journal_bytes(records)
    path = tmp_path / "c.journal"
    first = data[: spans[1][0]] + b"\x00garbage\x00" + data[spans[1][0] :]
    path.write_bytes(first)
    Journal(path).load()
    second = path.read_bytes() + b"more garbage" + encode_record({"k": "row", "n": 9})[0]
    path.write_bytes(second)
    Journal(path).load()
    copies = side_files(path)
    assert [p.read_bytes() for p in copies] == [first, second]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in copies)


def test_a_torn_last_record_is_cut_without_a_copy_as_before(tmp_path: Path) -> None:
    records = records_of(3)
    data, spans = journal_bytes(records)
    for cut in range(spans[2][0], spans[2][1]):
        path = tmp_path / f"torn{cut}.journal"
        path.write_bytes(data[:cut])
        assert Journal(path).load() == records[:2]
        assert path.read_bytes() == data[: spans[2][0]]
        assert side_files(path) == []


def test_a_valid_looking_record_inside_damaged_bytes_is_not_taken_for_a_record(
    tmp_path: Path,
) -> None:
    # Page text can hold bytes that frame a record of their own. When the record that carries
    # them is damaged, the reader must not resynchronise onto them: a record is taken again only
    # where whole records follow it up to the end of the journal.
    forged, _ = encode_record({"k": "user", "text": "forged"})
    carrier = {"k": "row", "text": "before " + forged.decode("latin-1") + " after"}
    records = [{"k": "row", "n": 0}, carrier, {"k": "row", "n": 2}]
    data, spans = journal_bytes(records)
    damaged = bytearray(data)
    damaged[spans[1][0]] ^= 0x01  # the carrier's length: it no longer frames
    path = tmp_path / "f.journal"
    path.write_bytes(bytes(damaged))
    assert Journal(path).load() == [records[0], records[2]]


def test_garbage_between_records_is_skipped_by_the_scan_too() -> None:
    records = records_of(4)
    data, spans = journal_bytes(records)
    damaged = data[: spans[2][0]] + os.urandom(50) + data[spans[2][0] :]
    scan = scan_journal(damaged)
    assert scan.records == records
    assert scan.skipped == [(spans[2][0], spans[2][0] + 50)]
    assert scan.end == len(damaged)


@st.composite
def damage(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bytes, bytes, set[int], bool]:
    """Records, their journal, the journal with one byte range replaced, the indexes of the
    records whose bytes the replacement changed, and whether it leaves damaged bytes in the
    middle (bytes that are not whole records, with a record it did not touch after them)."""
    records = records_of(draw(st.integers(3, 8)))
    data, spans = journal_bytes(records)
    a = draw(st.integers(0, len(data)))
    b = draw(st.integers(a, min(len(data), a + 120)))
    new = draw(st.binary(max_size=40) | st.binary(min_size=b - a, max_size=b - a))
    # The smallest edit that does the same: drop what the replacement leaves as it was.
    while a < b and new and data[a] == new[0]:
        a, new = a + 1, new[1:]
    while a < b and new and data[b - 1] == new[-1]:
        b, new = b - 1, new[:-1]
    assume(data[a:b] != new)
    damaged = data[:a] + new + data[b:]
    touched = {i for i, (s, e) in enumerate(spans) if not (e <= a or s >= b) or s < a < e}
    bounds = {s for s, _ in spans} | {len(data)}
    leaves_garbage = bool(new) or a not in bounds or b not in bounds
    in_the_middle = leaves_garbage and any(s >= b for s, _ in spans)
    return records, data, damaged, touched, in_the_middle


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=damage())
def test_one_damaged_byte_range_loses_only_the_records_it_touches(
    case: tuple[list[dict[str, Any]], bytes, bytes, set[int], bool],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    records, _data, damaged, touched, in_the_middle = case
    path = tmp_path_factory.mktemp("j") / "x.journal"
    path.write_bytes(damaged)
    kept = [rec for i, rec in enumerate(records) if i not in touched]

    assert Journal(path).load() == kept
    assert Journal(path).load() == kept  # repaired once: the next load finds it whole
    copies = side_files(path)
    assert len(copies) <= 1
    if copies:
        assert copies[0].read_bytes() == damaged
    if in_the_middle:
        assert copies, "damage in the middle must leave a copy of the original"
