"""Copy a file the browser downloaded into the files sandbox, and nothing else.

The source is only ever a path from a ``download.done{state: complete}`` frame of our extension
(:mod:`actors.browser.downloads`): Chrome chose it inside the user's download folder, from a
name the page may have suggested but Chrome sanitised. Even so the host trusts nothing about the
file on disk:

- the path must be absolute, and its last component is opened with ``O_NOFOLLOW`` (a symlink
  there is refused, never followed) and checked on the open descriptor to be a regular file
  (``fstat``: no FIFO, device or directory), so what is read is what was checked;
- its size must be what Chrome reported (when it reported one) and at most the sandbox's
  ``max_file_bytes``; reading stops one byte past the cap whatever the file claims;
- the copy goes to ``downloads/<name>`` in the sandbox: the name is Chrome's file name reduced
  to letters, digits and ``. _ -``, and an existing file is never overwritten — the copy gets
  ``name-2.ext``, ``name-3.ext``, …; it is written to a private temporary file first
  and then linked into place (``os.link`` fails rather than replace).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path, PurePosixPath

from actors.runtime.private_files import private_dir
from actors.tools.files import FileSandbox
from actors.tools.tool_def import ToolError

__all__ = ["DOWNLOADS_FOLDER", "copy_download", "safe_name"]

#: Where copies go, inside the files sandbox.
DOWNLOADS_FOLDER = "downloads"
_MAX_NAME = 120
_MAX_TRIES = 1000


def safe_name(name: str, fallback: str = "download") -> str:
    """A file name that is one plain path component, without spaces (a model quotes nothing):
    no separators, no leading dots, Chrome's own `` (1)`` suffix dropped (we number ours)."""
    base = PurePosixPath(name.replace("\\", "/")).name
    base = re.sub(r" \(\d+\)(?=\.[^.]*$|$)", "", base)
    base = re.sub(r"[^\w.\-]+", "_", base).strip(" ._")
    if len(base) > _MAX_NAME:
        stem, dot, ext = base.rpartition(".")
        base = (stem[: _MAX_NAME - len(ext) - 1] + dot + ext) if dot and len(ext) < 16 else base
        base = base[:_MAX_NAME]
    return base or fallback


def _read_checked(source: str, *, expected: int, limit: int) -> bytes:
    if not source or not os.path.isabs(source):
        raise ToolError("the browser did not say where it saved the download")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(source, flags)
    except FileNotFoundError:
        raise ToolError("the downloaded file is gone from the download folder") from None
    except OSError as exc:  # ELOOP: a symlink where the file should be
        raise ToolError(f"the downloaded file cannot be read safely ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ToolError("the download's path is not a regular file: not copied")
        if info.st_size > limit:
            raise ToolError(
                f"the download is {info.st_size} bytes, over the files folder's limit of "
                f"{limit} bytes: it stays in the browser's download folder"
            )
        if expected > 0 and info.st_size != expected:
            raise ToolError(
                f"the file on disk has {info.st_size} bytes, the browser reported {expected}: "
                "not copied"
            )
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ToolError(f"the download grew past the limit of {limit} bytes: not copied")
    return data


def _place(folder: Path, name: str, data: bytes) -> Path:
    private_dir(folder)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)  # 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        stem, dot, ext = name.rpartition(".")
        if not stem:  # ".bashrc"-like names were stripped already; "x" has no extension
            stem, dot, ext = name, "", ""
        for n in range(1, _MAX_TRIES + 1):
            candidate = folder / (name if n == 1 else f"{stem}-{n}{dot}{ext}")
            try:
                os.link(tmp, candidate)  # fails if it exists: never overwrites
            except FileExistsError:
                continue
            return candidate
        raise ToolError(f"too many files named like {name!r} in the files folder")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def copy_download(
    box: FileSandbox, source: str, *, expected_bytes: int, name: str, wanted: str | None = None
) -> Path:
    """Copy the file Chrome wrote at ``source`` into ``box`` (blocking: run it in a thread).

    ``name`` is Chrome's file name; ``wanted`` a sandbox-relative path the model asked for
    (its folder is used, its name sanitised, and still never overwritten). Returns the new
    file's path; :class:`ToolError` says why a file was not copied.
    """
    data = _read_checked(source, expected=expected_bytes, limit=box.max_file_bytes)
    if wanted:
        rel = PurePosixPath(wanted.replace("\\", "/"))
        parent = str(rel.parent) if str(rel.parent) not in ("", ".") else DOWNLOADS_FOLDER
        folder = box.resolve(parent)  # inside the sandbox, or ToolError
        filename = safe_name(rel.name, safe_name(name))
    else:
        folder = box.resolve(DOWNLOADS_FOLDER)
        filename = safe_name(name)
    if folder.exists() and not folder.is_dir():
        raise ToolError(f"{box.relative(folder)!r} is a file, not a folder")
    return _place(folder, filename, data)
