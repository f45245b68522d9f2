"""The chat journal on disk: torn-tail repair, safe file names, appends, fsync.

The semantics of the records (turns, rows, model messages) live in :mod:`actors.store.chat_store`;
their framing (and its reader) in :mod:`actors.store.journal_records`; this module only knows
files, so its rules can be tested byte by byte.

Repair, in :meth:`Journal.load`. Appends are the only writes, so a crash can only leave a *torn
tail* (a record cut mid-write): it is cut off, and every complete record before it survives.
Anything else is *damage* (a bad disk, another program): the original file is first kept aside in
a new private ``<name>.journal.corrupt`` (``.corrupt.1``, ... — never overwritten), what was lost
is logged (how many bytes, at which offset), and the journal is rewritten with its whole records
only — the reader resynchronises after damaged bytes (:func:`scan_journal`), so one damaged range
loses only the records it touches. ``browy doctor`` lists the kept copies.

Durability (architecture.md section 2, session store): each record is handed to the OS with
``os.write`` on an ``O_APPEND`` descriptor before the action it records, so a *process* crash
loses nothing; :meth:`Journal.sync_job` returns the fsync to run once per turn end on a worker
thread, so no hot path waits for the disk. Everything else here runs on the caller's thread.

File names: :func:`safe_name` maps any id (an extension install id, a session id) to one path
component that cannot climb out of its directory, and stays distinct on case-insensitive file
systems (macOS): only ``[a-z0-9_-]`` and non-leading ``.`` are kept, every other character becomes
``%XX`` escapes of its UTF-8 bytes (upper-case hex), and very long names end in a hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.runtime.private_files import open_private, private_dir, write_private
from actors.store.journal_records import JournalScan, StoreError, encode_record, scan_journal

__all__ = [
    "CORRUPT_SUFFIX",
    "JOURNAL_SUFFIX",
    "Journal",
    "Redact",
    "keep_damaged_copy",
    "redact_tree",
    "safe_name",
]

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".journal"
#: A damaged journal's original bytes are kept next to it in ``<name>.journal.corrupt[.N]``.
CORRUPT_SUFFIX = ".corrupt"
_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_MAX_NAME = 120  # well under the 255-byte limit of common file systems, suffix included


def safe_name(raw: str) -> str:
    """One safe path component for ``raw`` (injective, case-insensitively too). See module doc."""
    if not raw:
        raise StoreError("an empty id cannot name a file")
    parts: list[str] = []
    for index, char in enumerate(raw):
        if char in _SAFE_CHARS or (char == "." and index > 0):
            parts.append(char)
        else:
            parts.extend(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))
    name = "".join(parts)
    if len(name) > _MAX_NAME:
        # "~" never appears in an unhashed name, so the two kinds cannot collide.
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        name = f"{name[:80]}~{digest}"
    return name


def keep_damaged_copy(path: Path, data: bytes) -> Path:
    """Write ``data`` to a new private ``<journal>.corrupt`` (``.corrupt.1``, ... when one exists:
    a copy is never overwritten) and return its path."""
    for n in range(10_000):
        copy = path.with_name(path.name + CORRUPT_SUFFIX + (f".{n}" if n else ""))
        try:
            fd = open_private(copy, os.O_WRONLY | os.O_EXCL)
        except FileExistsError:
            continue
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        return copy
    raise StoreError(f"too many damaged copies of {path.name}")


FsyncFn = Callable[[int], None]


class Journal:
    """One journal file: load (with repair), append, hand out fsync jobs, close.

    Not thread-safe: one owner (the event loop thread) calls everything except the job returned
    by :meth:`sync_job`, which holds its own duplicate descriptor and may run on any thread.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = 0  # bytes of whole records in the file
        self._fd: int | None = None
        self._dirty = False  # written since the last sync job
        self._new_dirs: list[Path] = []  # directories created for this file: fsync them too
        self._closed = False

    def load(self) -> list[dict[str, Any]]:
        """Read every whole record, repairing the file first (see the module docstring)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self.size = 0
            return []
        except OSError as exc:
            raise StoreError(f"cannot read {self.path.name}: {exc}") from exc
        scan = scan_journal(data)
        try:
            if scan.damaged:
                self._repair(data, scan)
            elif scan.end < len(data):
                log.warning(
                    "journal %s: cut %d bytes of torn tail after %d whole records",
                    self.path.name,
                    len(data) - scan.end,
                    len(scan.records),
                )
                os.truncate(self.path, scan.end)
        except OSError as exc:
            raise StoreError(f"cannot repair {self.path.name}: {exc}") from exc
        self.size = sum(stop - start for start, stop in scan.spans)
        return scan.records

    def _repair(self, data: bytes, scan: JournalScan) -> None:
        """Keep the damaged file aside, log what is lost, and leave only the whole records."""
        copy = keep_damaged_copy(self.path, data)
        for start, stop in scan.skipped:
            log.warning(
                "journal %s: skipped %d damaged bytes at offset %d (after %d whole records); "
                "the original file is kept in %s",
                self.path.name,
                stop - start,
                start,
                sum(1 for s, _ in scan.spans if s < start),
                copy.name,
            )
        if scan.end < len(data):
            log.warning(
                "journal %s: cut %d damaged bytes at offset %d (the end, after %d whole records); "
                "the original file is kept in %s",
                self.path.name,
                len(data) - scan.end,
                scan.end,
                len(scan.records),
                copy.name,
            )
        if self._fd is not None:  # an open descriptor would go on appending to the old file
            os.close(self._fd)
            self._fd = None
        write_private(self.path, b"".join(data[s:e] for s, e in scan.spans), fsync=True)

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Hand one record to the OS (``os.write``, ``O_APPEND``), all of it or none of it.

        Returns the record as written (see :func:`encode_record`)."""
        if self._closed:
            raise StoreError(f"journal {self.path.name} is closed")
        data, record = encode_record(record)
        fd = self._open_fd()
        view = memoryview(data)
        written = 0
        try:
            while written < len(data):
                written += os.write(fd, view[written:])
        except OSError as exc:
            # Take back a partial record so the next append does not follow a torn one.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self.size)
            raise StoreError(f"cannot write {self.path.name}: {exc}") from exc
        self.size += len(data)
        self._dirty = True
        return record

    def _open_fd(self) -> int:
        if self._fd is None:
            parent = self.path.parent
            missing = [p for p in (parent.parent, parent) if not p.exists()]
            try:
                private_dir(parent)
                existed = self.path.exists()
                self._fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
            except OSError as exc:
                raise StoreError(f"cannot open {self.path.name}: {exc}") from exc
            # A new file (or directory) is durable only once its directory entry is synced.
            self._new_dirs = [*([] if existed else [parent]), *(p.parent for p in missing)]
        return self._fd

    @property
    def closed(self) -> bool:
        """Closed (the store let its chat go, or the store closed): appends raise."""
        return self._closed

    @property
    def dirty(self) -> bool:
        """Written since the last fsync job was handed out."""
        return self._dirty

    def sync_job(self, fsync: FsyncFn) -> Callable[[], None] | None:
        """The fsync for what was written so far, to run off the loop; None if nothing to do.

        The job owns a duplicate descriptor (closed when it finishes), so closing or deleting the
        journal meanwhile is safe. fsync errors are logged, not raised: the turn is over and
        nobody could act on them.
        """
        if self._fd is None or not self._dirty:
            return None
        fd, dirs, name = os.dup(self._fd), self._new_dirs, self.path.name
        self._dirty, self._new_dirs = False, []

        def job() -> None:
            try:
                fsync(fd)
                for directory in dict.fromkeys(dirs):
                    dir_fd = os.open(directory, os.O_RDONLY)
                    try:
                        fsync(dir_fd)
                    finally:
                        os.close(dir_fd)
            except OSError:
                log.exception("journal %s: fsync failed", name)
            finally:
                os.close(fd)

        return job

    def close(self) -> None:
        """Close the descriptor (idempotent); later appends raise :class:`StoreError`."""
        self._closed = True
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.close(fd)

    def delete(self) -> None:
        """Close and remove the file."""
        self.close()
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot delete {self.path.name}: {exc}") from exc


#: Replaces the secrets in a string (the log redaction, :mod:`actors.runtime.redaction`).
Redact = Callable[[str], str]


def redact_tree(value: Any, redact: Redact) -> Any:
    """``value`` with ``redact`` applied to every string in it (dicts and lists walked)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_tree(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v, redact) for v in value]
    return value
