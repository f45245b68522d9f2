"""Thread-bound actors, the asyncio side: a ``ThreadActor`` behind a ref shaped like ``ActorRef``.

Rules of the bridge (pykka and asyncio do not mix by themselves):

* **The loop never blocks and never waits on a pykka Future.** Each message carries a reply
  callback that runs on the actor's thread and crosses back with ``loop.call_soon_threadsafe``,
  guarded against a closed loop (the process is shutting down; nobody is waiting) and against an
  asyncio future that is already done (the asker timed out: the late reply is dropped).
* **Bounded.** pykka mailboxes are unbounded, so the ref counts messages in flight (sent, not yet
  finished) and applies the same overflow policy as a mailbox: wait for a slot or ``MailboxFull``.
* **Same semantics as ``actors.runtime.actor``.** ``ask`` has a mandatory deadline; a stop fails
  queued asks with ``ActorStopped`` and drops queued tells; a crash fails them with
  ``ActorCrashed`` and ``wait_stopped`` raises it (``actors.runtime.thread_actor``); generations
  likewise.
* **Stopping joins the thread** (with a timeout, off the loop) so that a process exits promptly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from actors.runtime.errors import (
    ActorError,
    ActorStopped,
    AskTimeout,
    MailboxFull,
    StaleActorRef,
)
from actors.runtime.ref import ActorCell, Overflow
from actors.runtime.thread_actor import OnDone, ThreadActor, ThreadHandle

__all__ = ["ThreadedRef", "spawn_threaded"]

M = TypeVar("M")
log = logging.getLogger(__name__)


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
