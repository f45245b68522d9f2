"""The standby's wait on the daemon's lock: woken by the kernel when the lock is freed (no poll),
and given up when its home goes, without keeping the lock from anyone afterwards."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from nativehost.daemon import standby


def _holder(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_the_wait_ends_the_moment_the_daemon_lets_the_lock_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(standby, "HOME_CHECK_S", 30.0)  # no periodic look can be what wakes it
    path = tmp_path / "browyd.lock"
    daemon = _holder(path)
    waiter = os.open(path, os.O_RDWR)
    released = 0.0

    def die_later() -> None:
        nonlocal released
        time.sleep(0.3)
        released = time.monotonic()
        os.close(daemon)  # the kernel frees the lock, as when the daemon dies

    threading.Thread(target=die_later).start()
    assert standby._wait_flock(waiter, lambda: True) is True
    assert time.monotonic() - released < 1.0  # woken by the release, not by a 30 s look
    assert not _free(path)  # the standby holds it now
    os.close(waiter)
    assert _free(path)


def test_a_standby_whose_home_is_gone_gives_up_and_keeps_no_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(standby, "HOME_CHECK_S", 0.05)
    path = tmp_path / "browyd.lock"
    daemon = _holder(path)
    waiter = os.open(path, os.O_RDWR)
    looks: list[float] = []

    def still_wanted() -> bool:
        looks.append(time.monotonic())
        return len(looks) < 3

    assert standby._wait_flock(waiter, still_wanted) is False
    assert len(looks) == 3
    os.close(waiter)  # as wait_for_takeover does
    os.close(daemon)
    # The abandoned thread's flock gets the lock as the daemon's goes, and lets it go with the
    # last reference to the file: a new daemon can take it.
    deadline = time.monotonic() + 5.0
    while not _free(path):
        assert time.monotonic() < deadline, "the given-up wait kept the daemon's lock"
        time.sleep(0.01)


def test_a_free_lock_is_taken_at_once(tmp_path: Path) -> None:
    path = tmp_path / "browyd.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    assert standby._wait_flock(fd, lambda: False) is True
    assert not _free(path)
    os.close(fd)


def test_a_wait_whose_flock_fails_says_so_instead_of_waiting_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    real = fcntl.flock

    def flock(fd: int, op: int) -> None:
        if op & fcntl.LOCK_NB:
            raise BlockingIOError(errno.EWOULDBLOCK, "held")
        raise OSError(errno.ENOLCK, "no locks on this file system")

    monkeypatch.setattr(fcntl, "flock", flock)
    monkeypatch.setattr(standby, "HOME_CHECK_S", 30.0)
    path = tmp_path / "browyd.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    started = time.monotonic()
    with pytest.raises(OSError, match="no locks") as err:
        standby._wait_flock(fd, lambda: True)
    assert err.value.errno == errno.ENOLCK and time.monotonic() - started < 5.0
    monkeypatch.setattr(fcntl, "flock", real)
    os.close(fd)
