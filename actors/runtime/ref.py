"""What a sender holds: a ref bound to one incarnation of a named slot, and the seams it fits.

* **Generations.** A name's *slot* is an ``ActorCell``; each incarnation spawned into (or
  ``rebind``-ed to) the cell advances its generation and gets a ref stamped with it. A ref whose
  generation is no longer the cell's raises ``StaleActorRef`` on ``tell``/``ask`` instead of
  reaching the new incarnation, so a restart can never deliver a message meant for the old state.
* **Seams.** ``Child`` is what a supervisor needs from anything it supervises; ``Ref`` is a child
  that takes messages. ``actors.runtime.actor.ActorRef`` (an asyncio actor) and
  ``actors.runtime.threaded.ThreadedRef`` (a thread-bound one) both fit ``Ref``.
* **Overflow.** Mailboxes are bounded; ``Overflow`` says what a ``tell`` does when one is full.
"""

from __future__ import annotations

import enum
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["ActorCell", "Child", "Overflow", "Ref"]

M_contra = TypeVar("M_contra", contravariant=True)


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
