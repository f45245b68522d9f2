"""The asyncio actor runtime: one task per actor, a bounded mailbox, refs with generations.

Promises (each one is tested in ``tests/actors/runtime/test_actor.py``):

* **One message at a time.** An actor's ``handle`` is never re-entered; its hooks run on the same
  task: ``on_start`` before the first message, ``on_stop`` after a requested stop, ``on_failure``
  after a crash (instead of ``on_stop``, as in pykka).
* **spawn() returns a ready actor.** ``await spawn(actor, name=...)`` returns only after
  ``on_start`` completed; an exception from ``on_start`` is raised to the spawner.
* **Bounded mailboxes.** ``Actor.mailbox_size`` messages at most. When full, ``tell`` waits for
  space (``Overflow.WAIT``) or raises ``MailboxFull`` (``Overflow.FAIL``); ``tell_nowait`` always
  raises ``MailboxFull``. The mailbox is a deque with an explicit bound rather than an
  ``asyncio.Queue`` because a stop must overtake queued messages and must not need a free slot.
* **No caller ever hangs.** Every ``ask`` has a deadline (``AskTimeout``; a late reply is dropped).
  A stop lets the current message finish, then fails every queued ask with ``ActorStopped`` and
  drops queued tells. A crash fails the in-flight ask and every queued ask with ``ActorCrashed``.
  A dead actor refuses new messages with ``ActorStopped``.
* **Crashes.** An ``Exception`` escaping ``handle`` crashes the actor. If it was answering an ask,
  the asker receives ``ActorCrashed`` whose ``cause`` (and ``__cause__``) is the original
  exception; its text names the actor only, so nothing internal reaches the wire. With
  ``crash_on_ask_error = False`` the exception is the ask's answer and the actor lives on.
  The owner learns the outcome from ``wait_stopped()`` (raises the crash) or a done-callback.
* **Cancellation is not a crash.** ``CancelledError`` (a forced stop) and ``KeyboardInterrupt``
  fail what the actor holds with ``ActorStopped`` and propagate; the outcome is a clean stop.
* **Generations** (``actors.runtime.ref``): each incarnation spawned into a cell gets a ref
  stamped with the cell's new generation; refs of the previous ones raise ``StaleActorRef``.

A deadline is part of every call's contract (``ask(msg, timeout=...)``), hence the ``timeout``
parameters that ruff's ASYNC109 would rather see as ``asyncio.timeout`` blocks. The errors are
drawn in ``actors.runtime.errors``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from actors.runtime.errors import (
    ActorCrashed,
    ActorError,
    ActorStopped,
)
from actors.runtime.ref import ActorCell, BoundRef, Overflow

__all__ = ["Actor", "ActorRef", "spawn"]

M = TypeVar("M")

log = logging.getLogger(__name__)

DoneCallback = Callable[[BaseException | None], None]


class Actor(Generic[M]):
    """Subclass and override ``handle``; the hooks are optional. Reached only through a ref."""

    mailbox_size: ClassVar[int] = 64
    overflow: ClassVar[Overflow] = Overflow.WAIT
    crash_on_ask_error: ClassVar[bool] = True
    _core: _Core[M] | None = None

    async def on_start(self) -> None:
        """Runs before the first message; an exception here fails ``spawn``."""

    async def on_stop(self) -> None:
        """Runs after a requested stop, once the current message is finished."""

    async def on_failure(self, exc: BaseException) -> None:
        """Runs after a crash, before queued asks are failed. Must not raise."""

    async def handle(self, msg: M) -> Any:
        """Handle one message; the return value answers an ask (ignored for a tell)."""
        raise NotImplementedError

    def stop_self(self) -> None:
        """Ask the runtime to stop this actor after the current message (a normal exit)."""
        if self._core is not None:
            self._core.request_stop()


class _Core(Generic[M]):
    """One incarnation: its mailbox, task and outcome. Shared by every ref to that incarnation."""

    def __init__(self, actor: Actor[M], name: str, loop: asyncio.AbstractEventLoop) -> None:
        self.actor = actor
        self.name = name
        self.loop = loop
        self.mailbox: deque[tuple[M, asyncio.Future[Any] | None]] = deque()
        self.maxsize = actor.mailbox_size
        self.overflow = actor.overflow
        self.alive = True  # accepting messages
        self.stopping = False
        self.idle: asyncio.Future[None] | None = None
        self.space_waiters: deque[asyncio.Future[None]] = deque()
        self.current: asyncio.Future[Any] | None = None
        self.stopped = asyncio.Event()
        self.outcome: BaseException | None = None
        self.callbacks: list[DoneCallback] = []
        self.task: asyncio.Task[None] | None = None

    def has_room(self) -> bool:
        return len(self.mailbox) < self.maxsize

    def depth(self) -> int:
        return len(self.mailbox)

    def put(self, msg: M, reply: asyncio.Future[Any] | None) -> None:
        self.mailbox.append((msg, reply))
        if self.idle is not None and not self.idle.done():
            self.idle.set_result(None)

    def request_stop(self) -> None:
        self.alive = False
        self.stopping = True
        if self.idle is not None and not self.idle.done():
            self.idle.set_result(None)
        self._wake_all_putters()

    def wake_one_putter(self) -> None:
        while self.space_waiters:
            waiter = self.space_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all_putters(self) -> None:
        while self.space_waiters:
            waiter = self.space_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def run(self, started: asyncio.Future[None]) -> None:
        try:
            await self.actor.on_start()
        except BaseException as exc:
            self._fail_held(lambda: ActorStopped(self.name, "failed to start"))
            self._finish(exc if isinstance(exc, Exception) else None)
            if not started.done():
                started.set_exception(exc) if isinstance(exc, Exception) else started.cancel()
            if not isinstance(exc, Exception):
                raise
            return
        if not started.done():
            started.set_result(None)
        try:
            await self._loop()
        except Exception as exc:
            await self._crash(exc)
            return
        except BaseException:
            # Cancellation (a forced stop after the shutdown timeout) or KeyboardInterrupt: a
            # teardown, not a crash. Fail what we hold so that nobody waits, then propagate.
            self._fail_held(lambda: ActorStopped(self.name, "cancelled"))
            self._finish(None)
            raise
        outcome: BaseException | None = None
        try:
            await self.actor.on_stop()
        except Exception as exc:
            log.exception("actor %r: on_stop failed", self.name)
            outcome = exc
        self._fail_held(lambda: ActorStopped(self.name, "stopped before handling the message"))
        self._finish(outcome)

    async def _loop(self) -> None:
        actor, mailbox = self.actor, self.mailbox
        while not self.stopping:
            if not mailbox:
                self.idle = self.loop.create_future()
                await self.idle
                self.idle = None
                continue
            msg, reply = mailbox.popleft()
            if self.space_waiters:
                self.wake_one_putter()
            if reply is None:
                await actor.handle(msg)
                continue
            self.current = reply
            try:
                result = await actor.handle(msg)
            except Exception as exc:
                if actor.crash_on_ask_error:
                    raise
                if not reply.done():
                    reply.set_exception(exc)
            else:
                # done() is true when the asker timed out or was cancelled: drop the late reply.
                if not reply.done():
                    reply.set_result(result)
            self.current = None

    async def _crash(self, exc: Exception) -> None:
        self.alive = False
        log.error("actor %r crashed", self.name, exc_info=exc)
        if self.current is not None and not self.current.done():
            self.current.set_exception(ActorCrashed(self.name, exc))
        self.current = None
        try:
            await self.actor.on_failure(exc)
        except Exception:
            log.exception("actor %r: on_failure failed", self.name)
        self._fail_held(lambda: ActorCrashed(self.name, exc))
        self._finish(exc)

    def _fail_held(self, error: Callable[[], ActorError]) -> None:
        self.alive = False
        if self.current is not None and not self.current.done():
            self.current.set_exception(error())
        self.current = None
        dropped = 0
        while self.mailbox:
            _, reply = self.mailbox.popleft()
            if reply is None:
                dropped += 1
            elif not reply.done():
                reply.set_exception(error())
        if dropped:
            log.info("actor %r: dropped %d queued tells", self.name, dropped)
        self._wake_all_putters()

    def _finish(self, outcome: BaseException | None) -> None:
        self.alive = False
        self.outcome = outcome
        self.stopped.set()
        for callback in self.callbacks:
            try:
                callback(outcome)
            except Exception:
                log.exception("actor %r: done-callback failed", self.name)
        self.callbacks.clear()


class ActorRef(BoundRef[M, "_Core[M]"]):
    """The only way to reach an actor. Cheap to copy; bound to one incarnation and generation."""

    __slots__ = ()
    kind = "actor"

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop after the current message; after ``timeout`` the task is cancelled. Idempotent.

        Acts on this ref's own incarnation only, so it is safe through a stale ref. Called from
        the actor's own task it only requests the stop (waiting would wait for itself).
        """
        core = self._inc
        if core.stopped.is_set():
            return
        core.request_stop()
        task = core.task
        if task is None or task is asyncio.current_task():
            return
        try:
            await asyncio.wait_for(core.stopped.wait(), timeout)
        except TimeoutError:
            log.warning("actor %r did not stop within %.1fs: cancelling", core.name, timeout)
            task.cancel()
            await asyncio.wait([task], timeout=timeout)

    def add_done_callback(self, callback: DoneCallback) -> None:
        """Call ``callback(outcome)`` on the loop when the incarnation ends (now if it has)."""
        if self._inc.stopped.is_set():
            callback(self._inc.outcome)
        else:
            self._inc.callbacks.append(callback)


async def spawn(actor: Actor[M], *, name: str, cell: ActorCell | None = None) -> ActorRef[M]:
    """Start ``actor`` on its own task; return its ref once ``on_start`` has completed.

    ``cell`` is the slot the actor occupies (a supervisor passes its child's cell, so refs of
    the previous incarnation become stale); by default the actor gets a fresh one.
    """
    if actor._core is not None:
        raise RuntimeError(f"actor {name!r}: an Actor instance can be spawned once")
    loop = asyncio.get_running_loop()
    core = _Core(actor, name, loop)
    actor._core = core
    cell = cell if cell is not None else ActorCell(name)
    generation = cell.advance()
    started: asyncio.Future[None] = loop.create_future()
    # The core holds the task (no task without an owner); the ref's owner stops it.
    core.task = loop.create_task(core.run(started), name=f"actor:{name}#{generation}")
    try:
        await started
    except asyncio.CancelledError:
        core.task.cancel()
        raise
    return ActorRef(core, cell, generation)
