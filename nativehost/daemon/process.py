"""The browyd daemon process: detached start, stop, and its main (serving in the foreground).

One daemon per ``BROWY_HOME``, held by the lock of :mod:`nativehost.daemon.instance` for its whole
life: a daemon that finds the lock taken exits quietly, so exactly one serves.

Starting it (architecture.md section 1): detached in its own session, stdio on /dev/null, no
inherited descriptors — otherwise it would hold Chrome's pipe open or die with the relay's
process group. It inherits the caller's environment (the browser's, when a relay starts it).

Run ``python -m nativehost.daemon.process --home DIR`` to serve in the foreground.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from actors.runtime.private_files import write_private
from nativehost.daemon.instance import is_running, pid_path, read_pid, try_lock
from nativehost.daemon.standby import FIRST_LINK_WITHIN_S, standby_enabled, wait_for_takeover
from nativehost.home import browy_home, ensure_private_dir, host_log, log_dir, relay_log
from nativehost.link import query_daemon
from nativehost.version import VERSION

__all__ = [
    "main",
    "run_daemon",
    "spawn_detached",
    "start_daemon",
    "stop_daemon",
]


def spawn_detached(home: Path, *, standby: bool = False) -> None:
    """Start a daemon for *home* in its own session, stdio on /dev/null, no inherited fds
    (``standby``: a standby daemon, :mod:`nativehost.daemon.standby`).

    A double fork: ``/bin/sh`` starts the daemon in the background and exits at once, so the
    daemon is reparented to init — never a zombie child of a long-lived relay — and the caller
    waits for its direct child (no process is left unwaited).
    """
    env = dict(os.environ)
    env["BROWY_HOME"] = str(home)
    argv = [sys.executable, "-m", "nativehost.daemon.process", "--home", str(home)]
    if standby:
        argv.append("--standby")
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
    pid = read_pid(home)
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
    with try_lock(home) as lock:
        if lock is None:
            return 0
        return _serve_locked(home, idle_exit_s=idle_exit_s)


def run_standby(home: Path) -> int:
    """Wait as the standby of *home*; serve in its daemon's place if it dies (standby.py)."""
    held = wait_for_takeover(home, prepare=_import_daemon)
    if held is None:
        return 0
    try:
        return _serve_locked(home, idle_exit_s=None, first_link_within_s=FIRST_LINK_WITHIN_S)
    finally:
        os.close(held)


def _import_daemon() -> None:
    from nativehost.daemon import server  # noqa: F401  (what a daemon's start-up waits for)


def _start_standby(home: Path) -> None:
    # subprocess.run waits for /bin/sh (tens of ms): not on the event loop.
    threading.Thread(
        target=spawn_detached, args=(home,), kwargs={"standby": True}, name="start-standby"
    ).start()


def _serve_locked(
    home: Path, *, idle_exit_s: float | None, first_link_within_s: float | None = None
) -> int:
    """Serve *home*, its daemon lock held by the caller, until stopped or idle."""
    # The home's folders, private before anything is written into them (architecture.md
    # section 6): files 0600 and folders 0700, whatever the umask this process inherited.
    for directory in (home, home / "data", home / "sessions", log_dir(home)):
        ensure_private_dir(directory)
    write_private(pid_path(home), f"{os.getpid()}\n")
    # Imported here for start-up cost: the relay and the CLI import this module to start and
    # stop the daemon; only the daemon itself needs the server, the actors and pydantic.
    from actors.runtime.logger import install_logging
    from nativehost.config import load_config
    from nativehost.daemon.server import DaemonServer

    logging_handle = install_logging(host_log(home), others=(relay_log(home),))
    try:
        config = load_config(home)
        if idle_exit_s is not None:
            config = config.model_copy(
                update={
                    "daemon": config.daemon.model_copy(update={"idle_exit_seconds": idle_exit_s})
                }
            )
        server = DaemonServer(
            home,
            config,
            version=VERSION,
            log_sink=logging_handle.sink,
            on_relay_link=(lambda: _start_standby(home)) if standby_enabled() else None,
            first_link_within_s=first_link_within_s,
        )
        return asyncio.run(server.serve())
    finally:
        with contextlib.suppress(OSError):
            pid_path(home).unlink()
        logging_handle.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="browyd", description="The Browy daemon.")
    parser.add_argument("--home", type=Path, default=None, help="BROWY_HOME (default ~/.browy)")
    parser.add_argument("--idle-exit", type=float, default=None, help="seconds; 0 = never")
    parser.add_argument("--standby", action="store_true", help="wait to take over (standby.py)")
    args = parser.parse_args(argv)
    home = args.home.absolute() if args.home else browy_home()
    if args.standby:
        return run_standby(home)
    return run_daemon(home, idle_exit_s=args.idle_exit)


if __name__ == "__main__":
    sys.exit(main())
