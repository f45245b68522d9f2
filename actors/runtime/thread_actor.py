"""Thread-bound actors, the synchronous side: a ``ThreadActor`` hosted by a pykka thread.

For work that blocks (disk writes, fsync, log rotation). The actor's ``handle`` is synchronous and
runs on the actor's own thread, one message at a time; its hooks run there too.

* **Same semantics as ``actors.runtime.actor``.** A stop fails queued asks with ``ActorStopped``
  and drops queued tells; an ``Exception`` in ``handle`` crashes the actor (``ActorCrashed`` to
  the in-flight and queued asks, the outcome to the owner) unless ``crash_on_ask_error`` is False
  and an ask was being answered.
* **Never blocks the poster.** ``ThreadHandle.post`` is thread-safe and returns at once; the
  answer comes back through the ``on_done(result, error)`` callback, on the actor's thread.
* **Threads end.** pykka threads are not daemon threads unless asked for (``daemon=True``), so
  every owner stops its thread actors on shutdown (``request_stop``, ``stop_and_join``).

``start_thread_actor`` is usable without an event loop (e.g. by the logging handler);
``actors.runtime.threaded.spawn_threaded`` puts the same handle behind an asyncio ref.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import pykka

from actors.runtime.errors import ActorCrashed, ActorError, ActorStopped

__all__ = ["OnDone", "ThreadActor", "ThreadHandle", "start_thread_actor"]

M = TypeVar("M")
log = logging.getLogger(__name__)

OnDone = Callable[[Any, BaseException | None], None]


class ThreadActor(Generic[M]):
    """Subclass and override ``handle`` (synchronous, may block). Hooks run on the thread."""

    crash_on_ask_error: ClassVar[bool] = True

    def on_start(self) -> None:
        """Runs on the new thread before the first message; an exception fails the spawn."""

    def on_stop(self) -> None:
        """Runs on the thread after a requested stop (not after a crash)."""

    def on_failure(self, exc: BaseException) -> None:
        """Runs on the thread after a crash. Must not raise."""

    def handle(self, msg: M) -> Any:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class _Call:
    msg: Any
    on_done: OnDone | None


class _Host(pykka.ThreadingActor):
    """The pykka actor hosting one ThreadActor; all of this runs on its thread."""

    def __init__(self, target: ThreadActor[Any], handle: ThreadHandle) -> None:
        super().__init__()
        self.target = target
        self.handle_ = handle

    def on_start(self) -> None:
        self.handle_.thread = threading.current_thread()
        try:
            self.target.on_start()
        except Exception as exc:
            self.handle_.closing.set()
            self.handle_.refusal = lambda n: ActorStopped(n, "failed to start")
            self.handle_.notify_started(exc)
            self.stop()
            return
        self.handle_.notify_started(None)

    def on_receive(self, message: Any) -> None:
        if not isinstance(message, _Call):
            return
        h = self.handle_
        if h.closing.is_set():  # stopping or crashed: what is still queued is refused
            if message.on_done is not None:
                message.on_done(None, h.refusal(h.name))
            return
        try:
            result = self.target.handle(message.msg)
        except Exception as exc:
            crash = message.on_done is None or self.target.crash_on_ask_error
            if message.on_done is not None:
                message.on_done(None, ActorCrashed(h.name, exc) if crash else exc)
            if crash:
                log.error("thread actor %r crashed", h.name, exc_info=exc)
                h.outcome = exc
                h.refusal = functools.partial(ActorCrashed, cause=exc)
                h.closing.set()
                try:
                    self.target.on_failure(exc)
                except Exception:
                    log.exception("thread actor %r: on_failure failed", h.name)
                self.stop()
            return
        if message.on_done is not None:
            message.on_done(result, None)

    def on_stop(self) -> None:
        h = self.handle_
        h.closing.set()
        if h.outcome is None and h.started_ok:
            try:
                self.target.on_stop()
            except Exception as exc:
                log.exception("thread actor %r: on_stop failed", h.name)
                h.outcome = exc
        h.notify_stopped()


class _DaemonHost(_Host):
    use_daemon_thread = True  # a wedged disk write must not keep the process alive


class ThreadHandle:
    """The synchronous side of one thread-bound incarnation; thread-safe ``post``."""

    def __init__(
        self,
        target: ThreadActor[Any],
        name: str,
        daemon: bool,
        on_started: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._on_started = on_started
        self.thread: threading.Thread | None = None
        self.closing = threading.Event()  # set by a stop request or a crash
        self.refusal: Callable[[str], ActorError] = lambda n: ActorStopped(n, "stopped")
        self.outcome: BaseException | None = None
        self.started_ok = False
        self.started = threading.Event()
        self.start_error: BaseException | None = None
        self.stopped = threading.Event()
        self.listeners: list[Callable[[], None]] = []  # called on the thread when it stops
        self._lock = threading.Lock()
        self._pykka = (_DaemonHost if daemon else _Host).start(target, self)

    def notify_started(self, error: BaseException | None) -> None:
        self.start_error, self.started_ok = error, error is None
        self.started.set()
        if self._on_started is not None:
            self._on_started()

    def notify_stopped(self) -> None:
        with self._lock:
            self.stopped.set()
            listeners = list(self.listeners)
        for listener in listeners:
            listener()

    def add_stop_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            if not self.stopped.is_set():
                self.listeners.append(listener)
                return
        listener()

    @property
    def queued(self) -> int:
        """Messages waiting on the thread behind the one in hand (thread-safe).

        pykka's ``ThreadingActor`` inbox is a ``queue.Queue``; its size is what is queued.
        """
        inbox = self._pykka.actor_inbox
        return inbox.qsize() if isinstance(inbox, queue.Queue) else 0

    def post(self, msg: Any, on_done: OnDone | None = None) -> None:
        """Queue ``msg``; ``on_done(result, error)`` runs on the actor's thread. Never blocks."""
        if self.closing.is_set():
            raise self.refusal(self.name)
        try:
            self._pykka.tell(_Call(msg, on_done))
        except pykka.ActorDeadError:
            raise ActorStopped(self.name, "not running") from None

    def request_stop(self, *, drain: bool = False) -> None:
        """End the thread after the current message, refusing what is queued; never blocks.

        With ``drain`` the messages queued before the request are handled first (a logger
        flushing on exit); the caller must have stopped posting.
        """
        if not drain:
            self.closing.set()
        with contextlib.suppress(pykka.ActorDeadError):
            self._pykka.stop(block=False)

    def stop_and_join(self, timeout: float = 5.0, *, drain: bool = False) -> bool:
        """Blocking stop for code off the event loop; True if the thread ended in time."""
        self.request_stop(drain=drain)
        thread = self.thread
        self.stopped.wait(timeout)
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return self.stopped.is_set()


def start_thread_actor(
    target: ThreadActor[Any], *, name: str, daemon: bool = False, start_timeout: float = 10.0
) -> ThreadHandle:
    """Start ``target`` on a new thread and wait (blocking) for its ``on_start``."""
    handle = ThreadHandle(target, name, daemon)
    if not handle.started.wait(start_timeout):
        handle.request_stop()
        raise ActorStopped(name, "did not start in time")
    if handle.start_error is not None:
        raise handle.start_error
    return handle
