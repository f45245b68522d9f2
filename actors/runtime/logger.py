"""The Logger: a thread-bound actor that owns the log file. Never writes stdout.

Rules:

* **stdout is the protocol** (native messaging frames), so nothing here touches fd 1: the file
  handler writes the log file only, and its ``handleError`` is silent (the stdlib one prints to
  stderr, and a logging call must never raise into the code that logged).
* **Secrets never reach the disk.** Every line goes through
  :func:`actors.runtime.redaction.redact` on the Logger's thread (what it knows is listed there).
* **Private.** The file is 0600 and its directory 0700, whatever the umask
  (:mod:`actors.runtime.private_files`).
* **Whole lines, appended.** Each record is one ``write`` of complete lines to a file opened for
  append, so two processes appending to one file (a relay) never interleave half-lines.
* **Rotation** (only the daemon rotates): before a write that would take the file past
  ``max_bytes``, ``host.log`` becomes ``host.log.1`` (replacing the previous one) and a new
  ``host.log`` is started: exactly one old copy is kept. The daemon's Logger also rotates the
  logs that other processes append to (``others``: ``relay.log``, which every relay appends to):
  on its own writes, at most once every ``check_every_s``, one over ``max_bytes`` is renamed to
  ``.1`` the same way; the next write of a relay starts the new file.
* **Appenders follow a rotation.** A Logger with ``rotate=False`` (a relay) checks before each
  write, with one ``stat``, that its path still names the file it has open; when the daemon has
  renamed it, it opens the new one, so nothing more is appended to the old copy.
* **Bounded.** The handler counts records in flight; past the bound it drops (and later reports
  how many were dropped) instead of growing memory or blocking the caller.
* **Supervised.** The Logger is a child of its process's supervision tree
(:mod:`supervisors.trees`):
  :meth:`LogSink.spawn` starts an incarnation and points the handler at it. Before the tree
  starts one, while it restarts one and after it stopped, the :class:`LogSink` appends each
  record to the file itself (redacted, one locked write), so nothing logged at start-up or exit
  is lost.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from actors.runtime.errors import ActorError
from actors.runtime.private_files import open_private_append, private_dir
from actors.runtime.redaction import redact
from actors.runtime.thread_actor import ThreadActor, ThreadHandle, start_thread_actor
from actors.runtime.threaded import ThreadedRef, spawn_threaded

__all__ = [
    "DEFAULT_MAX_BYTES",
    "OTHERS_CHECK_S",
    "Flush",
    "LogSink",
    "Logger",
    "LoggingHandle",
    "WriteLines",
    "install_logging",
]

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
#: How often (at most) the daemon's Logger looks at the size of the logs others append to.
OTHERS_CHECK_S = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteLines:
    """Append ``text`` (one or more lines; a final newline is added) after redaction."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Flush:
    """Answered once everything queued before it is on the OS."""


class Logger(ThreadActor[WriteLines | Flush]):
    """Owns the log file; runs on its own thread because writes and renames block."""

    crash_on_ask_error = False  # a failing write must not lose the logger

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        rotate: bool = True,
        others: tuple[Path, ...] = (),
        check_every_s: float = OTHERS_CHECK_S,
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.rotate = rotate
        self.others = others
        self.check_every_s = check_every_s
        self._file: IO[bytes] | None = None
        self._size = 0
        self._file_id = (0, 0)  # (st_dev, st_ino) of the open file
        self._next_check = 0.0

    def on_start(self) -> None:
        private_dir(self.path.parent)
        self._open()
        self._rotate_others()

    def on_stop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def on_failure(self, exc: BaseException) -> None:
        self.on_stop()

    def handle(self, msg: WriteLines | Flush) -> None:
        if isinstance(msg, Flush):
            if self._file is not None:
                self._file.flush()
            return
        data = (redact(msg.text).rstrip("\n") + "\n").encode("utf-8", "backslashreplace")
        if not self.rotate:
            self._follow_rotation()
        elif self._size > 0 and self._size + len(data) > self.max_bytes:
            self._rotate()
        assert self._file is not None
        self._file.write(data)  # one unbuffered write: whole lines, appended
        self._size += len(data)
        if self.others and time.monotonic() >= self._next_check:
            self._rotate_others()

    def _open(self) -> None:
        # Unbuffered append: each record reaches the OS in one write(2) with O_APPEND.
        self._file = open_private_append(self.path)
        st = os.fstat(self._file.fileno())
        self._size, self._file_id = st.st_size, (st.st_dev, st.st_ino)

    def _rotate(self) -> None:
        if self._file is not None:
            self._file.close()
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self._open()

    def _follow_rotation(self) -> None:
        try:
            st = os.stat(self.path)
            current = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            current = None  # renamed, and no other appender has started the new file yet
        if current != self._file_id:
            if self._file is not None:
                self._file.close()
            self._open()

    def _rotate_others(self) -> None:
        self._next_check = time.monotonic() + self.check_every_s
        for other in self.others:
            try:
                if os.stat(other).st_size > self.max_bytes:
                    # Appenders keep writing to the renamed file until their next write's check.
                    os.replace(other, other.with_name(other.name + ".1"))
            except FileNotFoundError:
                continue


class LogSink:
    """Where the logging handler's records go: the running Logger incarnation, else straight to
    the file (see the module docstring). Thread-safe."""

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int,
        rotate: bool,
        daemon: bool,
        others: tuple[Path, ...] = (),
    ) -> None:
        self.path = path
        self._max_bytes = max_bytes
        self._rotate = rotate
        self._others = others
        self._daemon = daemon
        self._handle: ThreadHandle | None = None
        self._lock = threading.Lock()

    def _logger(self) -> Logger:
        return Logger(
            self.path, max_bytes=self._max_bytes, rotate=self._rotate, others=self._others
        )

    def attach(self, handle: ThreadHandle) -> None:
        """Send records to ``handle`` from now on; a previous incarnation finishes its queue."""
        with self._lock:
            old, self._handle = self._handle, handle
        if old is not None and old is not handle:
            old.request_stop(drain=True)

    def start(self) -> None:
        """Start a Logger synchronously (before any event loop: the process's first lines)."""
        self.attach(start_thread_actor(self._logger(), name="logger", daemon=self._daemon))

    async def spawn(self) -> ThreadedRef[WriteLines | Flush]:
        """Start a Logger incarnation for the supervision tree and send records to it."""
        ref: ThreadedRef[WriteLines | Flush] = await spawn_threaded(
            self._logger(), name="logger", daemon=self._daemon
        )
        self.attach(ref.handle)
        return ref

    def post(self, text: str, on_done: Callable[[object, BaseException | None], None]) -> None:
        handle = self._handle
        if handle is not None and not handle.closing.is_set():

            def done(result: object, error: BaseException | None) -> None:
                # Refused because the Logger stopped with it still queued (a supervisor's
                # stop at exit): written here instead, so a last line is never lost.
                try:
                    if error is not None:
                        self.write_now(text)
                finally:
                    on_done(result, error)

            try:
                handle.post(WriteLines(text=text), done)
                return
            except ActorError:
                pass
        try:
            self.write_now(text)
        finally:
            on_done(None, None)

    def write_now(self, text: str) -> None:
        """Append one record on the caller's thread (no Logger running)."""
        data = (redact(text).rstrip("\n") + "\n").encode("utf-8", "backslashreplace")
        with self._lock, open_private_append(self.path) as fh:
            fh.write(data)

    def close(self, timeout: float = 5.0) -> None:
        """Write what the running Logger has queued and end its thread (blocking)."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            handle.stop_and_join(timeout, drain=True)


class _ActorHandler(logging.Handler):
    """Formats on the caller's thread, posts to the Logger; never raises, never prints."""

    def __init__(self, sink: LogSink, level: int, max_pending: int) -> None:
        super().__init__(level)
        self._sink = sink
        self._max_pending = max_pending
        self._pending = 0
        self._dropped = 0
        self._lock = threading.Lock()

    def _done(self, _result: object, _error: BaseException | None) -> None:
        with self._lock:
            self._pending -= 1

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            with self._lock:
                if self._pending >= self._max_pending:
                    self._dropped += 1
                    return
                self._pending += 1
                dropped, self._dropped = self._dropped, 0
            if dropped:
                text = f"[logger] {dropped} records dropped (backlog)\n{text}"
            self._sink.post(text, self._done)
        except Exception:
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:
        # The stdlib prints to stderr here; we must neither raise nor print. Counted instead.
        with self._lock:
            self._dropped += 1


@dataclass(slots=True)
class LoggingHandle:
    """What ``install_logging`` returns; ``close()`` flushes, detaches and ends the thread."""

    handler: logging.Handler
    sink: LogSink
    logger: logging.Logger

    def close(self, timeout: float = 5.0) -> None:
        """Blocking and idempotent: detach the handler, write what is queued, join the thread."""
        self.logger.removeHandler(self.handler)
        # A stop is handled after the lines queued before it, so nothing logged is lost.
        self.sink.close(timeout)


def install_logging(
    path: Path | str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    level: int = logging.INFO,
    rotate: bool = True,
    logger: logging.Logger | None = None,
    max_pending: int = 10_000,
    daemon: bool = False,
    others: tuple[Path, ...] = (),
) -> LoggingHandle:
    """Route ``logging`` (the root logger by default) to a Logger thread writing ``path``.

    ``rotate=False``: another process rotates ``path`` (a relay's ``relay.log``); ``others``:
    logs other processes append to, which this one rotates (the daemon: ``relay.log``)."""
    sink = LogSink(Path(path), max_bytes=max_bytes, rotate=rotate, daemon=daemon, others=others)
    sink.start()
    handler = _ActorHandler(sink, level, max_pending)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    target = logger if logger is not None else logging.getLogger()
    target.addHandler(handler)
    if target.level == logging.NOTSET or target.level > level:
        target.setLevel(level)
    return LoggingHandle(handler=handler, sink=sink, logger=target)
