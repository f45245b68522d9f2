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
from typing import Any, TypeVar

from actors.runtime.errors import ActorStopped
from actors.runtime.ref import ActorCell, BoundRef, Overflow
from actors.runtime.thread_actor import OnDone, ThreadActor, ThreadHandle

__all__ = ["ThreadedRef", "spawn_threaded"]

M = TypeVar("M")
log = logging.getLogger(__name__)


class _Bridge:
    """Loop side of one incarnation (an ``Incarnation``): in-flight bound, pending asks, stop."""

    def __init__(
        self,
        handle: ThreadHandle,
        loop: asyncio.AbstractEventLoop,
        limit: int,
        overflow: Overflow,
    ) -> None:
        self.handle = handle
        self.loop = loop
        self.limit = limit
        self.overflow = overflow
        self.in_flight = 0
        self.space_waiters: deque[asyncio.Future[None]] = deque()
        self.pending: set[asyncio.Future[Any]] = set()
        self.stopped = asyncio.Event()
        handle.add_stop_listener(lambda: self.from_thread(self._on_stopped))

    @property
    def name(self) -> str:
        return self.handle.name

    @property
    def alive(self) -> bool:
        return not self.handle.closing.is_set()

    @property
    def outcome(self) -> BaseException | None:
        return self.handle.outcome

    def has_room(self) -> bool:
        return self.in_flight < self.limit

    def depth(self) -> int:
        return self.handle.queued

    def put(self, msg: Any, reply: asyncio.Future[Any] | None) -> None:
        self.handle.post(msg, self.on_done(reply))
        self.in_flight += 1
        if reply is not None:
            self.pending.add(reply)

    def wake_one_putter(self) -> None:
        while self.space_waiters:
            waiter = self.space_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

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
        self.wake_one_putter()
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
        for waiter in self.space_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self.stopped.set()


class ThreadedRef(BoundRef[M, _Bridge]):
    """Same interface as ``actors.runtime.actor.ActorRef``, for a ``ThreadActor``."""

    __slots__ = ()
    kind = "thread"

    @property
    def thread(self) -> threading.Thread | None:
        return self._inc.handle.thread

    @property
    def handle(self) -> ThreadHandle:
        """The synchronous side of this incarnation (``post`` from any thread)."""
        return self._inc.handle

    async def stop(self, timeout: float = 5.0) -> None:
        """Finish the current message, refuse the rest, end the thread and join it (off-loop)."""
        bridge = self._inc
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
    bridge = _Bridge(handle, loop, max_in_flight, overflow)
    return ThreadedRef(bridge, cell, cell.advance())


def _set_threadsafe(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed
        loop.call_soon_threadsafe(event.set)
