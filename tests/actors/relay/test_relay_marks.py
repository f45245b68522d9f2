"""The marks a relay leaves for a later daemon: kept privately, taken once, pruned when stale."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from actors.relay.relay_marks import MAX_AGE_S, RelayMarks


def test_a_mark_is_taken_once_and_only_for_its_session(tmp_path: Path) -> None:
    marks = RelayMarks.for_home(tmp_path)
    marks.add("sp-1", "t-1")
    assert not marks.take("sp-2")
    assert marks.take("sp-1")
    assert not marks.take("sp-1")  # spent


def test_marks_are_private_files_with_safe_names_whatever_the_session_id(tmp_path: Path) -> None:
    marks = RelayMarks.for_home(tmp_path)
    odd = "../../etc/passwd\x00\ud800 " + "x" * 400
    marks.add(odd, None)
    files = list(marks.directory.iterdir())
    assert len(files) == 1 and files[0].parent == marks.directory
    assert stat.S_IMODE(marks.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert marks.take(odd)


def test_the_relays_turns_ended_spends_the_marks_it_names(tmp_path: Path) -> None:
    marks = RelayMarks.for_home(tmp_path)
    for sid in ("sp-1", "sp-2", "sp-3"):
        marks.add(sid, None)
    marks.discard(["sp-1", "sp-3", "sp-unknown"])
    assert [marks.take(s) for s in ("sp-1", "sp-2", "sp-3")] == [False, True, False]


def test_stale_marks_and_leftover_temporary_files_are_pruned(tmp_path: Path) -> None:
    marks = RelayMarks.for_home(tmp_path)
    marks.add("sp-old", None)
    old = time.time() - MAX_AGE_S - 60
    (only,) = marks.directory.iterdir()
    os.utime(only, (old, old))
    marks.add("sp-new", None)
    leftover = marks.directory / "x.123.tmp"
    leftover.write_bytes(b"{")
    os.utime(leftover, (time.time() - 120, time.time() - 120))
    assert marks.prune() == 2
    assert not marks.take("sp-old") and marks.take("sp-new")


def test_a_mark_that_cannot_be_written_is_logged_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "run"
    blocker.write_text("a file where the run directory should be")
    marks = RelayMarks.for_home(tmp_path)
    marks.add("sp-1", None)  # no exception: at worst a v1 panel sees a second end
    assert not marks.take("sp-1")
    assert marks.prune() == 0
