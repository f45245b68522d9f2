"""Thread-bound actors: a pykka ``ThreadingActor`` behind a ref shaped like ``ActorRef``.

For work that blocks (disk writes, fsync, log rotation). The actor's ``handle`` is synchronous and
runs on the actor's own thread, one message at a time.

Rules of the bridge (pykka and asyncio do not mix by themselves):

* **The loop never blocks and never waits on a pykka Future.** Each message carries a reply
  callback that runs on the actor's thread and crosses back with ``loop.call_soon_threadsafe``,
  guarded against a closed loop (the process is shutting down; nobody is waiting) and against an
  asyncio future that is already done (the asker timed out: the late reply is dropped).
* **Bounded.** pykka mailboxes are unbounded, so the ref counts messages in flight (sent, not yet
  finished) and applies the same overflow policy as a mailbox: wait for a slot or ``MailboxFull``.
* **Same semantics as ``actors.runtime.actor``.** ``ask`` has a mandatory deadline; a stop fails
queued
  asks with ``ActorStopped`` and drops queued tells; an ``Exception`` in ``handle`` crashes the
  actor (``ActorCrashed`` to the in-flight and queued asks, the outcome to ``wait_stopped``)
  unless ``crash_on_ask_error`` is False and an ask was being answered; generations likewise.
* **Stopping joins the thread** (with a timeout, off the loop) so that a process exits promptly:
  pykka threads are not daemon threads unless asked for (``daemon=True``).

``start_thread_actor`` is the synchronous core (usable without an event loop, e.g. by the logging
handler); ``spawn_threaded`` wraps it for asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import pykka

from actors.runtime.errors import (
    ActorCrashed,
    ActorError,
    ActorStopped,
    AskTimeout,
    MailboxFull,
    StaleActorRef,
)
from actors.runtime.ref import ActorCell, Overflow

__all__ = ["ThreadActor", "ThreadHandle", "ThreadedRef", "spawn_threaded", "start_thread_actor"]

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


class _Bridge:
    """Loop side of one incarnation: in-flight bound, pending asks, stop notification."""

    def __init__(self, handle: ThreadHandle, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self.handle = handle
        self.loop = loop
        self.limit = limit
        self.in_flight = 0
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.pending: set[asyncio.Future[Any]] = set()
        self.stopped = asyncio.Event()
        handle.add_stop_listener(lambda: self.from_thread(self._on_stopped))

    def from_thread(self, fn: Callable[..., None], *args: Any) -> None:
        # RuntimeError: the loop is closed, so nobody is left waiting for this.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(fn, *args)

    def on_done(self, reply: asyncio.Future[Any] | None) -> OnDone:
        def done(result: Any, error: BaseException | None) -> None:
            self.from_thread(self._settle, reply, result, error)

        return done

    def _settle(self, reply: asyncio.Future[Any] | None, result: Any, error: Any) -> None:
        self.in_flight -= 1
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break
        if reply is not None:
            self.pending.discard(reply)
            if not reply.done():
                reply.set_exception(error) if error is not None else reply.set_result(result)

    def _on_stopped(self) -> None:
        # Anything still unanswered was dropped by pykka's teardown: fail it definitely.
        for reply in self.pending:
            if not reply.done():
                reply.set_exception(self.handle.refusal(self.handle.name))
        self.pending.clear()
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)
        self.stopped.set()


class ThreadedRef(Generic[M]):
    """Same interface as ``actors.runtime.actor.ActorRef``, for a ``ThreadActor``."""

    def __init__(
        self, bridge: _Bridge, overflow: Overflow, cell: ActorCell, generation: int
    ) -> None:
        self._bridge = bridge
        self._overflow = overflow
        self._cell = cell
        self._generation = generation

    def __repr__(self) -> str:
        return f"<ThreadedRef {self._cell.name}#{self._generation}>"

    @property
    def name(self) -> str:
        return self._cell.name

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def is_alive(self) -> bool:
        closing = self._bridge.handle.closing.is_set()
        return not closing and self._generation == self._cell.generation

    @property
    def thread(self) -> threading.Thread | None:
        return self._bridge.handle.thread

    def rebind(self, cell: ActorCell) -> ThreadedRef[M]:
        return ThreadedRef(self._bridge, self._overflow, cell, cell.advance())

    def _check(self) -> _Bridge:
        if self._generation != self._cell.generation:
            raise StaleActorRef(self._cell.name, f"generation {self._generation} was replaced")
        bridge = self._bridge
        if bridge.handle.closing.is_set():
            raise ActorStopped(self._cell.name, "not running")
        return bridge

    def _send(self, bridge: _Bridge, msg: M, reply: asyncio.Future[Any] | None) -> None:
        bridge.handle.post(msg, bridge.on_done(reply))
        bridge.in_flight += 1
        if reply is not None:
            bridge.pending.add(reply)

    async def _acquire(self, bridge: _Bridge, deadline: float | None, err: ActorError) -> None:
        while bridge.in_flight >= bridge.limit:
            if self._overflow is Overflow.FAIL:
                raise MailboxFull(bridge.handle.name, "too many messages in flight")
            waiter: asyncio.Future[None] = bridge.loop.create_future()
            bridge.waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    await waiter
            except TimeoutError:
                raise err from None
            bridge = self._check()

    def tell_nowait(self, msg: M) -> None:
        bridge = self._check()
        if bridge.in_flight >= bridge.limit:
            raise MailboxFull(bridge.handle.name, "too many messages in flight")
        self._send(bridge, msg, None)

    async def tell(self, msg: M, *, timeout: float | None = None) -> None:
        bridge = self._check()
        deadline = None if timeout is None else bridge.loop.time() + timeout
        await self._acquire(bridge, deadline, MailboxFull(self.name, "no slot in time"))
        self._send(bridge, msg, None)

    async def ask(self, msg: M, *, timeout: float) -> Any:
        bridge = self._check()
        loop = bridge.loop
        deadline = loop.time() + timeout
        await self._acquire(bridge, deadline, AskTimeout(self.name, "no slot in time"))
        reply: asyncio.Future[Any] = loop.create_future()
        self._send(bridge, msg, reply)
        timer = loop.call_at(deadline, _expire, reply, self.name)
        try:
            return await reply
        finally:
            timer.cancel()

    async def stop(self, timeout: float = 5.0) -> None:
        """Finish the current message, refuse the rest, end the thread and join it (off-loop)."""
        bridge = self._bridge
        bridge.handle.request_stop()
        loop = bridge.loop
        deadline = loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                await bridge.stopped.wait()
        except TimeoutError:
            log.warning("thread actor %r did not stop within %.1fs", self.name, timeout)
            return
        thread = bridge.handle.thread
        if thread is not None and thread.is_alive():
            # on_stop has run; the thread is returning. Join off the loop, never on it.
            await asyncio.to_thread(thread.join, max(0.0, deadline - loop.time()))

    async def wait_stopped(self) -> None:
        await self._bridge.stopped.wait()
        if self._bridge.handle.outcome is not None:
            raise self._bridge.handle.outcome


def _expire(reply: asyncio.Future[Any], name: str) -> None:
    if not reply.done():
        reply.set_exception(AskTimeout(name, "no answer before the deadline"))


async def spawn_threaded(
    target: ThreadActor[M],
    *,
    name: str,
    max_in_flight: int = 64,
    overflow: Overflow = Overflow.WAIT,
    daemon: bool = False,
    cell: ActorCell | None = None,
    start_timeout: float = 10.0,
) -> ThreadedRef[M]:
    """Start ``target`` on its own thread; return once its ``on_start`` completed."""
    loop = asyncio.get_running_loop()
    started = asyncio.Event()
    handle = ThreadHandle(target, name, daemon, on_started=lambda: _set_threadsafe(loop, started))
    try:
        async with asyncio.timeout(start_timeout):
            await started.wait()
    except TimeoutError:
        handle.request_stop()
        raise ActorStopped(name, "did not start in time") from None
    if handle.start_error is not None:
        raise handle.start_error
    cell = cell if cell is not None else ActorCell(name)
    bridge = _Bridge(handle, loop, max_in_flight)
    return ThreadedRef(bridge, overflow, cell, cell.advance())


def _set_threadsafe(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed
        loop.call_soon_threadsafe(event.set)
