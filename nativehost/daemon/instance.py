"""One daemon per ``BROWY_HOME``: its lock, its pid file, and its status as others see them.

The daemon holds an exclusive ``flock`` on ``run/browyd.lock`` for its whole life (protocol.md
section 6): a second daemon — e.g. two relays starting one at the same moment — fails to take the
lock and exits quietly, so exactly one serves. The lock is released by the kernel when the process
dies, even by SIGKILL, so a stale pid file never blocks a new daemon.

Everyone else asks here whether a daemon runs (:func:`is_running`: someone holds the lock) and how
it is (:func:`daemon_status`: it is asked over its link) — the CLI, the relay's tests, ``browy
doctor`` both in a terminal and inside the daemon. Starting, stopping and running the daemon are
:mod:`nativehost.daemon.process`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from actors.runtime.private_files import open_private
from nativehost.home import browy_home, ensure_private_dir, run_dir, socket_path
from nativehost.link import DaemonUnavailable, query_daemon
from supervisors.introspection import SupervisorInfo

__all__ = [
    "DaemonStatus",
    "daemon_status",
    "daemon_tree",
    "is_running",
    "lock_path",
    "pid_path",
    "read_pid",
    "try_lock",
]


def lock_path(home: Path) -> Path:
    return run_dir(home) / "browyd.lock"


def pid_path(home: Path) -> Path:
    return run_dir(home) / "browyd.pid"


@dataclass(frozen=True, slots=True)
class DaemonStatus:
    """What ``browy daemon status`` prints."""

    running: bool
    pid: int | None = None
    socket: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        if not self.running:
            return f"browyd: not running (socket {self.socket})"
        extra = ", ".join(f"{k}={v}" for k, v in sorted(self.details.items()))
        return f"browyd: running, pid {self.pid}, socket {self.socket}" + (
            f", {extra}" if extra else ""
        )


@contextlib.contextmanager
def try_lock(home: Path) -> Iterator[IO[bytes] | None]:
    """Yield the open lock file when we got the lock, else None (another daemon holds it)."""
    ensure_private_dir(run_dir(home))
    fh = os.fdopen(open_private(lock_path(home), os.O_RDWR), "r+b")  # held for the daemon's life
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield fh
    finally:
        fh.close()


def is_running(home: Path) -> bool:
    """True when some process holds the daemon lock of *home*."""
    with try_lock(home) as fh:
        return fh is None


def read_pid(home: Path) -> int | None:
    """The pid the daemon of *home* wrote, or None (no pid file, or not a number)."""
    try:
        return int(pid_path(home).read_text().strip())
    except (OSError, ValueError):
        return None


def daemon_status(home: Path | None = None) -> DaemonStatus:
    """Ask the daemon of *home* how it is; a daemon that does not answer is reported as such."""
    home = home or browy_home()
    sock = str(socket_path(home))
    if not is_running(home):
        return DaemonStatus(running=False, socket=sock)
    try:
        details = asyncio.run(query_daemon(home, "status", timeout=3.0))
    except Exception as exc:  # any failure is reported, never raised at the user
        return DaemonStatus(
            running=True, pid=read_pid(home), socket=sock, details={"error": str(exc)}
        )
    return DaemonStatus(running=True, pid=read_pid(home), socket=sock, details=details)


def daemon_tree(home: Path | None = None) -> SupervisorInfo | None:
    """The running daemon's supervision tree (``Supervisor.describe()``), or None when no daemon
    runs. Raises ``ConnectionError`` when one runs but does not answer."""
    home = home or browy_home()
    if not is_running(home):
        return None
    answer = asyncio.run(query_daemon(home, "tree", timeout=3.0))
    tree = answer.get("tree")
    if not isinstance(tree, dict):
        raise DaemonUnavailable(f"the daemon answered no tree: {answer.get('error', answer)}")
    return cast(SupervisorInfo, tree)
