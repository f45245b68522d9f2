"""LiveRef: the current incarnation of a supervised actor, found by name at each use.

A supervisor restarts a crashed child as a new incarnation; refs to the old one become stale
(:class:`~actors.runtime.actor.StaleActorRef`). Components that talk to a supervised actor for
their whole life hold a :class:`LiveRef` instead: it asks the supervisor (any :class:`Directory`)
for the running incarnation at every call and, in the middle of a restart, waits for it (bounded).

It is handed down at construction, before the tree starts: ``LiveRef("turn-scheduler")`` and,
once the supervisor exists, ``ref.bind(supervisor)``. Using it unbound raises ``LookupError``.

Delivery rules (conventions rule 5: no caller ever hangs):

* :meth:`tell_again` delivers to the next incarnation if the current one stops or crashes before
  taking the message — only for messages that are safe to deliver twice (cancel, drop, slot
  bookkeeping). :meth:`tell` and :meth:`ask` deliver at most once and raise the runtime's errors.
* Waiting for a restart is bounded by ``restart_wait`` seconds; then ``ActorStopped`` is raised.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

from actors.runtime.errors import ActorError, ActorStopped
from actors.runtime.ref import Child, Ref

__all__ = ["Directory", "LiveRef"]

M = TypeVar("M")

#: How long a call waits for a restarting actor's next incarnation.
RESTART_WAIT_S = 5.0


class Directory(Protocol):
    """Where the running incarnation of a named child is found (a supervisor)."""

    @property
    def is_alive(self) -> bool: ...

    def ref(self, name: str) -> Ref[Any]: ...

    async def wait_child(
        self, name: str, *, after: Child | None = None, timeout: float
    ) -> Child: ...


class LiveRef(Generic[M]):
    """The running incarnation of the actor called ``name`` in a :class:`Directory`."""

    __slots__ = ("_directory", "name", "restart_wait")

    def __init__(self, name: str, *, restart_wait: float = RESTART_WAIT_S) -> None:
        self.name = name
        self.restart_wait = restart_wait
        self._directory: Directory | None = None

    def __repr__(self) -> str:
        return f"<LiveRef {self.name}>"

    def bind(self, directory: Directory) -> LiveRef[M]:
        """Look the actor up in ``directory`` from now on (its supervisor). Returns self."""
        self._directory = directory
        return self

    @property
    def bound(self) -> bool:
        return self._directory is not None

    def now(self) -> Ref[M]:
        """The running incarnation; ``LookupError`` when there is none at this moment."""
        if self._directory is None:
            raise LookupError(f"{self.name}: not bound to a supervisor yet")
        ref: Ref[M] = self._directory.ref(self.name)
        return ref

    async def current(self) -> Ref[M]:
        """The running incarnation, waiting (bounded) through a restart. An incarnation that has
        stopped but that its supervisor has not replaced yet (its exit is still on the way) is
        waited past too: a message told to it would only raise ``ActorStopped``."""
        dead: Ref[M] | None = None
        try:
            ref = self.now()
            if ref.is_alive:
                return ref
            dead = ref
        except LookupError:
            if self._directory is None:
                raise
        assert self._directory is not None
        if not self._directory.is_alive:
            raise ActorStopped(self.name, "its supervisor has stopped")
        try:
            await self._directory.wait_child(self.name, after=dead, timeout=self.restart_wait)
        except (TimeoutError, LookupError):
            raise ActorStopped(self.name, "not running (no restart in time)") from None
        return self.now()

    async def tell(self, msg: M, *, timeout: float | None = None) -> None:
        await (await self.current()).tell(msg, timeout=timeout)

    def tell_nowait(self, msg: M) -> None:
        """Queue ``msg`` now; raises ``LookupError`` mid-restart and the runtime's errors."""
        self.now().tell_nowait(msg)

    async def tell_again(self, msg: M) -> None:
        """Tell; if that incarnation is gone before taking it, tell the next one (once)."""
        try:
            await (await self.current()).tell(msg)
        except ActorError:
            await (await self.current()).tell(msg)

    async def ask(self, msg: M, *, timeout: float) -> Any:
        return await (await self.current()).ask(msg, timeout=timeout)

    async def ask_again(self, msg: M, *, timeout: float) -> Any:
        """Ask; if that incarnation stops or crashes first, ask the next one (once). Only for
        requests that are safe to handle twice."""
        try:
            return await (await self.current()).ask(msg, timeout=timeout)
        except ActorError:
            return await (await self.current()).ask(msg, timeout=timeout)
