"""What a supervisor supervises: a ``ChildSpec`` says how to start a child; a ``TaskChild`` is a
coroutine run as a child; a ``ChildSlot`` is one child's place in its supervisor.

A child is anything that fits ``actors.runtime.ref.Child``: an actor's ref, a thread-bound
actor's ref, a nested ``Supervisor``, or a ``TaskChild``. The slot starts each incarnation into
the child's ``ActorCell`` (so refs of the previous one are stale), watches it, and reports an
end it did not cause as a ``ChildExited``; the supervisor's control task decides what follows.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import KW_ONLY, dataclass
from typing import Any

from actors.runtime.actor import Actor, spawn
from actors.runtime.backoff import Backoff
from actors.runtime.ref import ActorCell, BoundRef, Child, is_ref
from supervisors.introspection import RESTART_HISTORY, ChildInfo, ChildKind, Describable
from supervisors.policy import RestartType

__all__ = ["ChildExited", "ChildSlot", "ChildSpec", "StartFn", "TaskChild", "TaskFn"]

StartFn = Callable[[], Awaitable[Child] | Actor[Any]]
TaskFn = Callable[[], Coroutine[Any, Any, object]]


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """How to start a child: exactly one of ``start`` (returns a started Child, or an Actor to
    spawn) and ``task`` (a coroutine factory run as a supervised task)."""

    name: str
    _: KW_ONLY
    start: StartFn | None = None
    task: TaskFn | None = None
    restart: RestartType = RestartType.PERMANENT
    shutdown_timeout: float = 5.0
    backoff: Backoff | None = None

    def __post_init__(self) -> None:
        if (self.start is None) == (self.task is None):
            raise ValueError(f"child {self.name!r}: give exactly one of start= and task=")


class TaskChild:
    """A coroutine running as a supervised task; ``stop`` cancels it (a task has no mailbox)."""

    def __init__(self, name: str, task: asyncio.Task[object]) -> None:
        self._name = name
        self.task = task

    @property
    def name(self) -> str:
        return self._name

    @property
    def is_alive(self) -> bool:
        return not self.task.done()

    async def stop(self, timeout: float = 5.0) -> None:
        self.task.cancel()
        await asyncio.wait([self.task], timeout=timeout)
        if self.task.done() and not self.task.cancelled():
            self.task.exception()  # retrieved: the supervisor asked for this end

    async def wait_stopped(self) -> None:
        """Return on a normal end (including cancellation); raise the task's exception."""
        await asyncio.wait([self.task])
        if not self.task.cancelled() and (exc := self.task.exception()) is not None:
            raise exc


@dataclass(frozen=True, slots=True)
class ChildExited:
    """An incarnation ended by itself (``error``: its exception; None for a normal end)."""

    name: str
    instance: int
    error: Exception | None


class ChildSlot:
    """One child's place in a supervisor: its spec and cell, the running incarnation and its
    watcher, and its history for ``info``. ``instance`` is bumped on every start and every
    deliberate stop, so an exit reported for an earlier instance is one the supervisor caused,
    not a failure. ``clock`` is the supervisor's (monotonic seconds)."""

    __slots__ = (
        "attempt",
        "cell",
        "child",
        "clock",
        "instance",
        "kind",
        "restart_times",
        "restarting",
        "restarts",
        "spec",
        "started_at",
        "watcher",
    )

    def __init__(self, spec: ChildSpec, clock: Callable[[], float]) -> None:
        self.spec = spec
        self.clock = clock
        self.cell = ActorCell(spec.name)
        self.child: Child | None = None
        self.watcher: asyncio.Task[None] | None = None
        self.instance = 0
        self.attempt = 0  # consecutive restarts, for the backoff
        self.kind: ChildKind = "task" if spec.task is not None else "actor"  # set at each start
        self.started_at = 0.0  # the clock when the current incarnation started
        self.restarting = False  # set by the supervisor while it restarts this child
        self.restarts = 0
        self.restart_times: deque[float] = deque(maxlen=RESTART_HISTORY)

    async def start(self, on_exit: Callable[[ChildExited], None]) -> Child:
        """Start an incarnation; ``on_exit`` hears of its end unless ``stop`` caused it."""
        spec = self.spec
        child: Child
        if spec.task is not None:
            loop = asyncio.get_running_loop()
            child = TaskChild(spec.name, loop.create_task(spec.task(), name=f"task:{spec.name}"))
        else:
            assert spec.start is not None
            made = spec.start()
            if isinstance(made, Actor):
                child = await spawn(made, name=spec.name, cell=self.cell)
            else:
                child = await made
                if is_ref(child):
                    child = child.rebind(self.cell)  # old refs to this slot become stale
            self.kind = _kind_of(child)
        self.instance += 1
        self.child = child
        self.started_at = self.clock()
        self.restarting = False
        self.watcher = asyncio.get_running_loop().create_task(
            _watch(spec.name, self.instance, child, on_exit), name=f"watch:{spec.name}"
        )
        return child

    def ended(self) -> None:
        """The incarnation ended by itself (its ``ChildExited`` was handled)."""
        self.child, self.watcher = None, None

    def restarted(self, wall_time: float) -> None:
        """Count a restart that has started a new incarnation (``wall_time``: Unix seconds)."""
        self.restarts += 1
        self.restart_times.append(wall_time)

    async def stop(self) -> None:
        """Stop the incarnation, if one runs: its shutdown timeout, then cancellation."""
        child, self.child = self.child, None
        self.instance += 1  # the exit this stop causes is ours, not a failure
        if self.watcher is not None:
            self.watcher.cancel()
            self.watcher = None
        if child is not None:
            await child.stop(self.spec.shutdown_timeout)

    def info(self) -> ChildInfo:
        """What ``Supervisor.describe`` shows of this child now."""
        child = self.child
        running = child is not None
        return {
            "name": self.spec.name,
            "kind": self.kind,
            "restart": self.spec.restart.value,
            "state": "running" if running else "restarting" if self.restarting else "stopped",
            "mailbox_depth": child.mailbox_depth if is_ref(child) else None,
            "restarts": self.restarts,
            "restart_times": list(self.restart_times),
            "uptime_s": self.clock() - self.started_at if running else None,
            "supervisor": child.describe() if isinstance(child, Describable) else None,
        }


def _kind_of(child: Child) -> ChildKind:
    if isinstance(child, BoundRef):
        return child.kind
    if isinstance(child, Describable):
        return "supervisor"
    return "actor" if is_ref(child) else "task"


async def _watch(
    name: str, instance: int, child: Child, on_exit: Callable[[ChildExited], None]
) -> None:
    error: Exception | None = None
    try:
        await child.wait_stopped()
    except Exception as exc:
        error = exc
    on_exit(ChildExited(name, instance, error))
