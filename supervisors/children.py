"""What a supervisor supervises: a ``ChildSpec`` says how to start a child; a ``TaskChild`` is a
coroutine run as a child.

A child is anything that fits ``actors.runtime.ref.Child``: an actor's ref, a thread-bound
actor's ref, a nested ``Supervisor``, or a ``TaskChild``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import KW_ONLY, dataclass
from typing import Any

from actors.runtime.actor import Actor
from actors.runtime.backoff import Backoff
from actors.runtime.ref import Child
from supervisors.policy import RestartType

__all__ = ["ChildSpec", "StartFn", "TaskChild", "TaskFn"]

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
