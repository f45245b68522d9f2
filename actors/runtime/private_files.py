"""Private files and directories: everything Browy writes under its home is the user's alone.

Rules (architecture.md section 6):

* **Files are 0600 and directories 0700, whatever the process umask.** A mode given to
  ``open(2)``/``mkdir(2)`` is only an upper bound (the umask takes bits away), and Python's own
  ``open()``/``Path.mkdir()`` ask for 0666/0777; so every file and directory under the home is
  created through this module, which asks for the private mode and then sets it exactly.
* **Existing files are made private when opened.** A log or a journal left 0644 by an older
  version (or another tool) gets 0600 the next time it is opened here: one ``fstat``, and a
  ``fchmod`` only when the mode is wrong.
* **Only what we create.** :func:`private_dir` creates the missing parents of a path 0700 and
  sets the path itself to 0700; existing parents (``~``, ``/tmp``) are left alone.
* **Whole or nothing.** :func:`write_private` writes a temporary file in the same directory and
  renames it over the target, so a reader never sees half a file (or a wider mode).

Standard library only, nothing heavy: the relay imports this on its start-up path.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "open_private",
    "open_private_append",
    "private_dir",
    "write_private",
]

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents, each 0700, and make ``path`` 0700. Returns it."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            os.mkdir(directory, PRIVATE_DIR_MODE)
        os.chmod(directory, PRIVATE_DIR_MODE)
    if not missing:
        mode = path.stat().st_mode
        if not stat.S_ISDIR(mode):
            raise NotADirectoryError(f"{path} is not a directory")
        if stat.S_IMODE(mode) != PRIVATE_DIR_MODE:
            os.chmod(path, PRIVATE_DIR_MODE)
    return path


def open_private(path: Path, flags: int) -> int:
    """``os.open`` with ``O_CREAT`` (and close-on-exec); the file is 0600 once this returns.

    The descriptor is the caller's to close."""
    fd = os.open(path, flags | os.O_CREAT | _CLOEXEC, PRIVATE_FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE_FILE_MODE:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private_append(path: Path) -> IO[bytes]:
    """An unbuffered binary file object appending to ``path`` (0600): each ``write`` is one
    ``write(2)`` with ``O_APPEND``."""
    return os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "ab", buffering=0)


def write_private(path: Path, data: bytes | str, *, fsync: bool = False) -> None:
    """Replace ``path`` with ``data`` (UTF-8 if text), atomically, 0600; its directory is made
    with :func:`private_dir` if missing."""
    if not path.parent.exists():
        private_dir(path.parent)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_EXCL)
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
