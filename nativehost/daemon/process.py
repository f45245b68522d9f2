"""The browyd daemon process: single instance, detached start, status, stop, and its main.

One daemon per ``BROWY_HOME`` (protocol.md section 6), held by an exclusive ``flock`` on
``run/browyd.lock`` for its whole life: a second daemon — e.g. two relays starting one at the
same moment — fails to take the lock and exits quietly, so exactly one serves. The lock is
released by the kernel when the process dies, even by SIGKILL, so a stale pid file never blocks
a new daemon.

Starting it (architecture.md section 1): detached in its own session, stdio on /dev/null, no
inherited descriptors — otherwise it would hold Chrome's pipe open or die with the relay's
process group. It inherits the caller's environment (the browser's, when a relay starts it).

Run ``python -m nativehost.daemon.process --home DIR`` to serve in the foreground.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from nativehost.home import browy_home, ensure_private_dir, log_dir, run_dir, socket_path

__all__ = [
    "DaemonStatus",
    "daemon_status",
    "lock_path",
    "main",
    "pid_path",
    "run_daemon",
    "start_daemon",
    "stop_daemon",
]

PACKAGE_VERSION = "0.1.0"


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
def _try_lock(home: Path) -> Iterator[IO[bytes] | None]:
    """Yield the open lock file when we got the lock, else None (another daemon holds it)."""
    ensure_private_dir(run_dir(home))
    fh = open(lock_path(home), "a+b")  # noqa: SIM115 - held for the daemon's lifetime
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
    with _try_lock(home) as fh:
        return fh is None


def _read_pid(home: Path) -> int | None:
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
    from nativehost.link import query_daemon

    try:
        details = asyncio.run(query_daemon(home, "status", timeout=3.0))
    except Exception as exc:  # any failure is reported, never raised at the user
        return DaemonStatus(
            running=True, pid=_read_pid(home), socket=sock, details={"error": str(exc)}
        )
    return DaemonStatus(running=True, pid=_read_pid(home), socket=sock, details=details)


def spawn_detached(home: Path) -> None:
    """Start a daemon for *home* in its own session, stdio on /dev/null, no inherited fds.

    A double fork: ``/bin/sh`` starts the daemon in the background and exits at once, so the
    daemon is reparented to init — never a zombie child of a long-lived relay — and the caller
    waits for its direct child (no process is left unwaited).
    """
    env = dict(os.environ)
    env["BROWY_HOME"] = str(home)
    argv = [sys.executable, "-m", "nativehost.daemon.process", "--home", str(home)]
    subprocess.run(
        ["/bin/sh", "-c", '"$@" &', "browyd", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
        env=env,
        cwd="/",
        check=False,
        timeout=10,
    )


def start_daemon(home: Path | None = None, *, timeout: float = 10.0) -> None:
    """Make sure a daemon serves *home*; returns when it answers. Raises TimeoutError."""
    home = home or browy_home()
    from nativehost.link import query_daemon

    if not is_running(home):
        spawn_detached(home)
    deadline = time.monotonic() + timeout
    delay = 0.02
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            asyncio.run(query_daemon(home, "status", timeout=2.0))
            return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(delay)
        delay = min(delay * 2, 0.25)
    raise TimeoutError(f"the daemon did not answer within {timeout:.0f} s: {last}")


def stop_daemon(home: Path | None = None, *, timeout: float = 10.0) -> bool:
    """SIGTERM the daemon of *home* and wait until it has exited. False if none was running."""
    home = home or browy_home()
    if not is_running(home):
        return False
    pid = _read_pid(home)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running(home):
            return True
        time.sleep(0.02)
    raise TimeoutError(f"browyd (pid {pid}) did not stop within {timeout:.0f} s")


def run_daemon(home: Path | None = None, *, idle_exit_s: float | None = None) -> int:
    """Serve in the foreground until SIGTERM/SIGINT or idle exit. Returns the exit code.

    Returns 0 at once, doing nothing, when another daemon already serves *home*.
    """
    home = home or browy_home()
    with _try_lock(home) as lock:
        if lock is None:
            return 0
        ensure_private_dir(log_dir(home))
        pid_path(home).write_text(f"{os.getpid()}\n")
        from actors.runtime.logger import install_logging
        from nativehost.config import load_config
        from nativehost.daemon.server import DaemonServer

        logging_handle = install_logging(log_dir(home) / "host.log")
        try:
            config = load_config(home)
            if idle_exit_s is not None:
                config = config.model_copy(
                    update={
                        "daemon": config.daemon.model_copy(
                            update={"idle_exit_seconds": idle_exit_s}
                        )
                    }
                )
            server = DaemonServer(home, config, version=PACKAGE_VERSION)
            return asyncio.run(server.serve())
        finally:
            with contextlib.suppress(OSError):
                pid_path(home).unlink()
            logging_handle.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="browyd", description="The Browy daemon.")
    parser.add_argument("--home", type=Path, default=None, help="BROWY_HOME (default ~/.browy)")
    parser.add_argument("--idle-exit", type=float, default=None, help="seconds; 0 = never")
    args = parser.parse_args(argv)
    home = args.home.absolute() if args.home else browy_home()
    return run_daemon(home, idle_exit_s=args.idle_exit)


if __name__ == "__main__":
    sys.exit(main())
