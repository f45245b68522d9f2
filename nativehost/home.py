"""Where Browy keeps its files, and the one function that names the daemon's socket.

Everything lives under ``BROWY_HOME`` (default ``~/.browy``) so tests can point it at a temporary
folder (architecture.md section 6)::

    config.toml        settings
    data/files/        sandbox of the file tools
    data/notes.json    notes
    sessions/          chat journals
    logs/host.log      the daemon's log (+ host.log.1)
    logs/relay.log     the relays' log (+ relay.log.1; the daemon rotates it too)
    run/               0700: lock, pid file, socket (when its path is short enough), link token

Every file is 0600 and every directory 0700, whatever the umask: they are all made through
:mod:`actors.runtime.private_files`.

This module is imported by the relay, so it must stay light: standard library only (and
:mod:`actors.runtime.private_files`, which is).
"""

from __future__ import annotations

import os
from pathlib import Path

from actors.runtime.private_files import private_dir

__all__ = [
    "MAX_UNIX_SOCKET_PATH",
    "browy_home",
    "ensure_private_dir",
    "host_log",
    "log_dir",
    "private_dir_problem",
    "relay_log",
    "run_dir",
    "socket_path",
]

# sun_path is 108 bytes on Linux and 104 on macOS, including the terminating NUL.
MAX_UNIX_SOCKET_PATH = 103


def browy_home(env: dict[str, str] | None = None) -> Path:
    """Return ``BROWY_HOME`` from *env* (default: ``os.environ``), else ``~/.browy``; absolute."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    raw = env.get("BROWY_HOME") if env is not None else None
    home = Path(raw).expanduser() if raw else Path.home() / ".browy"
    return home.absolute()


def run_dir(home: Path) -> Path:
    return home / "run"


def log_dir(home: Path) -> Path:
    return home / "logs"


def host_log(home: Path) -> Path:
    """The daemon's log; the daemon rotates it (``host.log.1``)."""
    return log_dir(home) / "host.log"


def relay_log(home: Path) -> Path:
    """The log every relay appends to; the daemon rotates it too (``relay.log.1``)."""
    return log_dir(home) / "relay.log"


def ensure_private_dir(path: Path) -> Path:
    """Create *path* and its missing parents, each 0700 whatever the umask, and make *path* 0700
    (:func:`actors.runtime.private_files.private_dir`). Returns *path*.

    Raises ``PermissionError`` when *path* exists but is not ours (or is a symlink): another
    user made it first, and nothing of ours goes in it (architecture.md section 7)."""
    import stat  # only here: keeps the relay's start-up lean

    if os.path.lexists(path):
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            raise PermissionError(f"{path} is not ours: {private_dir_problem(path)}")
    return private_dir(path)


def private_dir_problem(path: Path) -> str | None:
    """Why *path* cannot hold our socket, or None when it can: it must be a real directory (not
    a symlink), owned by us, and private (mode 0700: nobody else may create or swap a file in
    it). Checked by the relay and the CLI before they connect (protocol.md section 6)."""
    import stat

    try:
        st = path.lstat()
    except FileNotFoundError:
        return f"{path} does not exist"
    except OSError as exc:
        return f"{path} cannot be read: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} belongs to uid {st.st_uid}, not to us ({os.getuid()})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        return f"{path} has mode {mode:04o}: others may reach it"
    return None


def _runtime_root() -> Path:
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg)
    import tempfile  # only for long BROWY_HOME paths: keeps the relay's start-up lean

    return Path(tempfile.gettempdir())


def socket_path(home: Path) -> Path:
    """The daemon's Unix socket for *home* (protocol.md section 6).

    ``home/run/browyd.sock`` when that path fits in ``sun_path``; otherwise
    ``<runtime dir>/browy-<uid>/<hash of home>.sock``, the directory being 0700. The relay, the
    daemon and the CLI all call this, so they always agree.
    """
    preferred = run_dir(home) / "browyd.sock"
    if len(os.fsencode(preferred)) <= MAX_UNIX_SOCKET_PATH:
        return preferred
    import hashlib

    digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:16]
    return _runtime_root() / f"browy-{os.getuid()}" / f"{digest}.sock"
