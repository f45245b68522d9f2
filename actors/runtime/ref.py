"""What a sender holds: a ref bound to one incarnation of a named slot, and the seams it fits.

* **Generations.** A name's *slot* is an ``ActorCell``; each incarnation spawned into (or
  ``rebind``-ed to) the cell advances its generation and gets a ref stamped with it. A ref whose
  generation is no longer the cell's raises ``StaleActorRef`` on ``tell``/``ask`` instead of
  reaching the new incarnation, so a restart can never deliver a message meant for the old state.
* **Seams.** ``Child`` is what a supervisor needs from anything it supervises; ``Ref`` is a child
  that takes messages. ``actors.runtime.actor.ActorRef`` (an asyncio actor) and
  ``actors.runtime.threaded.ThreadedRef`` (a thread-bound one) both fit ``Ref``.
* **Overflow.** Mailboxes are bounded; ``Overflow`` says what a ``tell`` does when one is full.
* **One shape for both kinds.** ``BoundRef`` holds what every ref does the same way — the
  generation check, ``tell_nowait``/``tell``/``ask`` against a bounded mailbox with deadlines,
  ``wait_stopped``, ``rebind``, ``mailbox_depth`` — over an ``Incarnation``: the asyncio
  actor's core or the pykka bridge. Each kind adds how it stops, and what is its own alone
  (``ActorRef.add_done_callback``, ``ThreadedRef.thread``).
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from collections.abc import Callable
from typing import (
    Any,
    ClassVar,
    Generic,
    Literal,
    Protocol,
    Self,
    TypeGuard,
    TypeVar,
    runtime_checkable,
)

from actors.runtime.errors import ActorError, ActorStopped, AskTimeout, MailboxFull, StaleActorRef

__all__ = ["ActorCell", "BoundRef", "Child", "Incarnation", "Overflow", "Ref", "is_ref"]

M = TypeVar("M")
M_contra = TypeVar("M_contra", contravariant=True)
IncT = TypeVar("IncT", bound="Incarnation[Any]")


class Overflow(enum.Enum):
    """What a ``tell`` does when the mailbox is full."""

    WAIT = "wait"
    FAIL = "fail"


class ActorCell:
    """A named slot whose occupant changes across restarts; its generation counts incarnations."""

    __slots__ = ("generation", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.generation = 0

    def advance(self) -> int:
        """Start a new incarnation: every ref of the previous ones becomes stale."""
        self.generation += 1
        return self.generation


@runtime_checkable
class Child(Protocol):
    """What a supervisor needs from a child: a name, a stop and a way to learn the outcome."""

    @property
    def name(self) -> str: ...

    @property
    def is_alive(self) -> bool: ...

    async def stop(self, timeout: float = 5.0) -> None: ...

    async def wait_stopped(self) -> None: ...


@runtime_checkable
class Ref(Child, Protocol[M_contra]):
    """A messaging child: ``ActorRef`` and ``actors.runtime.threaded.ThreadedRef`` both fit."""

    @property
    def generation(self) -> int: ...

    async def tell(self, msg: M_contra, *, timeout: float | None = None) -> None: ...

    def tell_nowait(self, msg: M_contra) -> None: ...

    async def ask(self, msg: M_contra, *, timeout: float) -> Any: ...

    def rebind(self, cell: ActorCell) -> Ref[M_contra]: ...

    @property
    def mailbox_depth(self) -> int: ...


#: Whether each class fits :class:`Ref`. ``isinstance`` against a runtime-checkable protocol
#: looks up every member of it (evaluating the properties) at each call, and a supervisor asks
#: at every ``ref()`` (several times per turn); the answer depends on the class alone.
_REF_CLASSES: dict[type, bool] = {}


def is_ref(child: object) -> TypeGuard[Ref[Any]]:
    """``isinstance(child, Ref)``, answered once per class."""
    cls = type(child)
    fits = _REF_CLASSES.get(cls)
    if fits is None:
        fits = _REF_CLASSES[cls] = isinstance(child, Ref)
    return fits


class Incarnation(Protocol[M_contra]):
    """One incarnation as its refs see it: a bounded mailbox on a loop, and an outcome.

    ``space_waiters`` are senders waiting for room; the incarnation wakes one per freed slot
    and all of them when it stops (they then find it not alive and raise ``ActorStopped``).
    """

    @property
    def name(self) -> str: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def overflow(self) -> Overflow: ...

    @property
    def alive(self) -> bool: ...

    @property
    def space_waiters(self) -> deque[asyncio.Future[None]]: ...

    @property
    def stopped(self) -> asyncio.Event: ...

    @property
    def outcome(self) -> BaseException | None: ...

    def has_room(self) -> bool: ...

    def depth(self) -> int: ...

    def put(self, msg: M_contra, reply: asyncio.Future[Any] | None) -> None: ...

    def wake_one_putter(self) -> None: ...


def _expire(reply: asyncio.Future[Any], name: str) -> None:
    if not reply.done():
        reply.set_exception(AskTimeout(name, "no answer before the deadline"))


class BoundRef(Generic[M, IncT]):
    """A ref bound to one incarnation ``IncT`` and generation; subclasses say how to ``stop``."""

    __slots__ = ("_cell", "_generation", "_inc")
    #: What runs behind the ref (shown by a supervisor's ``describe``).
    kind: ClassVar[Literal["actor", "thread"]]

    def __init__(self, inc: IncT, cell: ActorCell, generation: int) -> None:
        self._inc = inc
        self._cell = cell
        self._generation = generation

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._cell.name}#{self._generation}>"

    @property
    def name(self) -> str:
        return self._cell.name

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def is_alive(self) -> bool:
        return self._inc.alive and self._generation == self._cell.generation

    @property
    def mailbox_depth(self) -> int:
        """Messages queued for this incarnation and not yet taken up (for introspection)."""
        return self._inc.depth()

    def rebind(self, cell: ActorCell) -> Self:
        """A ref to the same incarnation as the newest occupant of ``cell`` (for supervisors)."""
        return type(self)(self._inc, cell, cell.advance())

    def _checked(self) -> IncT:
        if self._generation != self._cell.generation:
            raise StaleActorRef(self._cell.name, f"generation {self._generation} was replaced")
        inc = self._inc
        if not inc.alive:
            raise ActorStopped(inc.name, "not running")
        return inc

    def tell_nowait(self, msg: M) -> None:
        inc = self._checked()
        if not inc.has_room():
            raise MailboxFull(inc.name, "mailbox full")
        inc.put(msg, None)

    async def tell(self, msg: M, *, timeout: float | None = None) -> None:
        """Queue ``msg``; under ``Overflow.WAIT`` wait for space (``timeout`` -> MailboxFull)."""
        inc = self._checked()
        if inc.has_room():
            inc.put(msg, None)
            return
        deadline = None if timeout is None else inc.loop.time() + timeout
        await self._put_waiting(msg, None, deadline, lambda: MailboxFull(inc.name, "full"))

    async def ask(self, msg: M, *, timeout: float) -> Any:
        """Send ``msg`` and return the answer; the deadline covers waiting for mailbox space."""
        inc = self._checked()
        loop = inc.loop
        reply: asyncio.Future[Any] = loop.create_future()
        deadline = loop.time() + timeout
        if inc.has_room():
            inc.put(msg, reply)
        else:
            await self._put_waiting(
                msg, reply, deadline, lambda: AskTimeout(inc.name, "no mailbox space in time")
            )
        timer = loop.call_at(deadline, _expire, reply, inc.name)
        try:
            return await reply
        finally:
            timer.cancel()

    async def _put_waiting(
        self,
        msg: M,
        reply: asyncio.Future[Any] | None,
        deadline: float | None,
        on_timeout: Callable[[], ActorError],
    ) -> None:
        inc = self._inc
        if inc.overflow is Overflow.FAIL:
            raise MailboxFull(inc.name, "mailbox full")
        while True:
            waiter: asyncio.Future[None] = inc.loop.create_future()
            inc.space_waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    await waiter
            except BaseException as exc:
                if waiter.done() and not waiter.cancelled():
                    inc.wake_one_putter()  # pass on a wake-up we can no longer use
                waiter.cancel()
                if isinstance(exc, TimeoutError):
                    raise on_timeout() from None
                raise
            inc = self._checked()  # woken by a stop: raise ActorStopped
            if inc.has_room():
                inc.put(msg, reply)
                return

    async def stop(self, timeout: float = 5.0) -> None:
        """Each kind says how its incarnation stops (within ``timeout``, then by force)."""
        raise NotImplementedError

    async def wait_stopped(self) -> None:
        """Wait until this incarnation has ended; raise the crash if it crashed."""
        await self._inc.stopped.wait()
        if self._inc.outcome is not None:
            raise self._inc.outcome
