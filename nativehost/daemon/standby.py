"""A standby daemon: imported ahead of time, it serves the moment the daemon of its home dies.

A daemon's start-up is mostly imports (the model SDKs, pydantic's models: about 0.6 s on the
2-core machines we measure on, bench/bench_restart.py), and a relay whose daemon was killed
waits for all of it. So once the running daemon has a browser to serve (its first relay link),
it starts one standby (``python -m nativehost.daemon.process --standby``). The standby:

1. Takes ``run/browyd.standby.lock`` without waiting (one standby per ``BROWY_HOME``; a second
   one exits at once), then does the imports a daemon needs.
2. Waits on the daemon's own lock (``run/browyd.lock``, :mod:`nativehost.daemon.instance`): a
   blocking ``flock`` on a thread, which the kernel wakes the moment the daemon dies (SIGKILL
   included), while the main thread looks every :data:`HOME_CHECK_S` seconds whether the home
   is still there.
3. With the lock, it looks at ``run/browyd.pid``. A daemon that exits on purpose (idle, ``browy
   daemon stop``/``restart``, the options page's Restart, a tree that gave up) removes it before
   it lets the lock go: the standby then exits too, and the next relay starts a daemon as ever.
   A pid file still there means the daemon died without cleaning up: the standby takes over —
   it frees the standby lock (the new daemon will start its own standby) and serves exactly as a
   daemon started from scratch would (same lock, pid file, config read now, logs).
4. A standby that took over and that no link reaches within :data:`FIRST_LINK_WITHIN_S` (the
   relays' reconnect budget and then some) exits: nobody was coming back.

``BROWY_DAEMON_STANDBY=0`` in the daemon's environment starts no standby. The cost: one idle
process per home holding the daemon's imports in memory, asleep (one wake a second).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.runtime.backoff import RECONNECT_BUDGET_S
from actors.runtime.private_files import open_private, write_private
from nativehost.daemon.instance import lock_path, pid_path
from nativehost.home import run_dir

__all__ = [
    "FIRST_LINK_WITHIN_S",
    "HOME_CHECK_S",
    "standby_enabled",
    "standby_lock_path",
    "standby_pid_path",
    "wait_for_takeover",
]

#: How often a standby waiting on the daemon's lock looks whether its home was removed.
HOME_CHECK_S = 1.0
#: A standby that took over exits when no link came within this many seconds.
FIRST_LINK_WITHIN_S = RECONNECT_BUDGET_S + 5.0


def standby_lock_path(home: Path) -> Path:
    return run_dir(home) / "browyd.standby.lock"


def standby_pid_path(home: Path) -> Path:
    """Written once the standby's imports are done (a benchmark waits for it)."""
    return run_dir(home) / "browyd.standby.pid"


def standby_enabled(env: dict[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("BROWY_DAEMON_STANDBY", "1") != "0"


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _wait_flock(fd: int, still_wanted: Callable[[], bool]) -> bool:
    """Take the lock on *fd*, however long that takes; False as soon as ``still_wanted()``
    (asked every :data:`HOME_CHECK_S` seconds) says to give up.

    The blocking ``flock`` runs on a thread, on a duplicate of *fd* (the same open file, so the
    lock it takes is *fd*'s): the kernel wakes it when the lock is freed, so a takeover waits on
    no poll. If we give up, the thread closes its duplicate once its ``flock`` returns, and
    whatever lock it got goes with it; the caller's ``close(fd)`` never races a call in flight.
    A ``flock`` that fails (a file system without locks) raises here.
    """
    if _try_flock(fd):
        return True
    mine = os.dup(fd)
    got = threading.Event()
    owner = threading.Lock()  # who closes `mine`: the thread once abandoned, else us
    state: dict[str, Any] = {"done": False, "abandoned": False, "error": None}

    def take() -> None:
        error: OSError | None = None
        try:
            fcntl.flock(mine, fcntl.LOCK_EX)
        except OSError as exc:
            error = exc
        with owner:
            if state["abandoned"]:
                os.close(mine)
                return
            state.update(done=True, error=error)
        got.set()

    threading.Thread(target=take, name="browyd-standby-lock", daemon=True).start()
    while not got.wait(HOME_CHECK_S):
        if still_wanted():
            continue
        with owner:
            if not state["done"]:
                state["abandoned"] = True
                return False
        break  # it ended just now: its outcome stands
    os.close(mine)  # a lock it took stays with the open file, held through fd
    if state["error"] is not None:
        raise state["error"]
    return True


def wait_for_takeover(home: Path, *, prepare: Callable[[], None]) -> int | None:
    """Be the standby of *home* (see the module docstring). Returns the descriptor of the
    daemon's lock, held, when this process must now serve as the daemon; None when it must exit
    (another standby waits already, the daemon exited on purpose, or the home is gone).

    ``prepare`` does the imports, once the standby's slot is ours.
    """
    # A standby never makes its home: one started just before its home was removed (a private
    # browser's, at the end of `browy run --launch`) must leave nothing behind.
    if not run_dir(home).is_dir():
        return None
    try:
        slot = open_private(standby_lock_path(home), os.O_RDWR)
    except FileNotFoundError:
        return None
    lock: int | None = None
    try:
        if not _try_flock(slot):
            return None
        prepare()
        if not run_dir(home).is_dir():
            return None  # removed while the imports ran
        write_private(standby_pid_path(home), f"{os.getpid()}\n")
        lock = open_private(lock_path(home), os.O_RDWR)
        try:
            if not _wait_flock(lock, lambda: run_dir(home).is_dir()):
                return None  # the home was removed under us
        except OSError:
            return None  # no lock to wait on (a file system without them): no standby
        if not pid_path(home).exists():
            return None  # the daemon before us exited on purpose: no takeover
        held, lock = lock, None
        return held
    finally:
        if lock is not None:
            os.close(lock)  # frees the daemon's lock if we took it only to look
        with contextlib.suppress(OSError):
            if _standby_pid_is_ours(home):
                standby_pid_path(home).unlink()
        os.close(slot)


def _standby_pid_is_ours(home: Path) -> bool:
    try:
        return int(standby_pid_path(home).read_text().strip()) == os.getpid()
    except (OSError, ValueError):
        return False
