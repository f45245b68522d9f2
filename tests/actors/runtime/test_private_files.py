"""Private files: 0600 files and 0700 directories whatever the umask; older files made private."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.runtime.logger import Flush, Logger, WriteLines
from actors.runtime.private_files import (
    open_private,
    open_private_append,
    private_dir,
    write_private,
)
from actors.runtime.thread_actor import start_thread_actor


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o000, 0o022, 0o277], ids=["umask000", "umask022", "umask277"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_private_dir_makes_each_missing_parent_0700_and_leaves_existing_parents(
    tmp_path: Path, umask: int
) -> None:
    tmp_path.chmod(0o755)
    leaf = private_dir(tmp_path / "home" / "sessions" / "scope")
    assert [mode(p) for p in (leaf, leaf.parent, leaf.parent.parent)] == [0o700] * 3
    assert mode(tmp_path) == 0o755  # not ours to change


def test_private_dir_narrows_an_existing_directory_and_refuses_a_file(tmp_path: Path) -> None:
    wide = tmp_path / "logs"
    wide.mkdir(mode=0o755)
    wide.chmod(0o755)
    private_dir(wide)
    assert mode(wide) == 0o700
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        private_dir(tmp_path / "file")


def test_open_private_creates_0600_and_narrows_an_existing_file(tmp_path: Path, umask: int) -> None:
    new = tmp_path / "new"
    os.close(open_private(new, os.O_WRONLY))
    assert mode(new) == 0o600
    old = tmp_path / "old.log"
    old.write_text("before\n")
    old.chmod(0o644)
    with open_private_append(old) as fh:
        fh.write(b"after\n")
    assert mode(old) == 0o600
    assert old.read_text() == "before\nafter\n"


def test_write_private_replaces_the_file_whole_and_private(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "home" / "config.toml"
    write_private(target, "a = 1\n")
    target.chmod(0o644)
    write_private(target, b"a = 2\n")
    assert target.read_text() == "a = 2\n"
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["config.toml"]  # no temporary left


def test_a_log_left_0644_by_an_older_version_is_0600_once_the_logger_opens_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "logs" / "host.log"
    path.parent.mkdir()
    path.write_text("old line\n")
    path.chmod(0o644)
    handle = start_thread_actor(Logger(path), name="logger")
    handle.post(WriteLines(text="new line"))
    handle.post(Flush())
    assert handle.stop_and_join(2.0, drain=True)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
