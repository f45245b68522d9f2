"""An OTP-style supervisor on asyncio: it owns its children, restarts them, and fails upward.

Promises (tested in ``tests/supervisors/test_supervisor.py``):

* **Ordered, ready start.** ``await sup.start()`` starts the children in list order; a child
  counts as started after its ``on_start`` (``spawn`` returns only then). If one fails to start,
  the ones already started are stopped in reverse order and ``ChildStartFailed`` is raised.
* **Reverse-order shutdown.** ``await sup.stop()`` stops the children last-started first, each
  with its ``shutdown_timeout`` and then cancellation. Idempotent.
* **Restarts** follow ``supervisors.policy``: the strategy picks the children, the restart type
  says whether (only an ``Exception`` is abnormal; a return, a requested stop and a cancellation
  are normal), ``backoff`` spaces the restarts of a child that depends on the world outside.
  Siblings restarted by ONE_FOR_ALL / REST_FOR_ONE are stopped in reverse order and started again
  in start order; TEMPORARY siblings are stopped and not restarted.
* **Definite errors across a restart.** A restarted actor child is a new incarnation in the same
  ``ActorCell``: the old one failed what it held (``ActorCrashed``/``ActorStopped``, see
  ``actors.runtime.actor``), refs to it raise ``StaleActorRef``, and ``sup.ref(name)`` is the
  current one.
* **Escalation.** More restarts than the ``RestartIntensity`` allows: the supervisor stops every
  child and ends with ``SupervisorEscalation`` from ``wait_stopped()`` / ``run()``. A supervisor is
  itself a ``Child`` (``ChildSpec(name, start=Supervisor(...).start)``), so its parent treats an
  escalation as a crash: supervisors nest.
* **Observable.** An ``observer`` sees a ``supervisors.introspection.SupervisionEvent`` for
  every child exit it handles (``exited``, abnormal or not), every ``restarted`` child, and the
  ``escalated`` end; the fault harness checks restarts and escalations against the intensity
  with them.
* **No task without an owner.** Children's tasks, their watchers and the control task belong to
  the supervisor. ``CancelledError`` (and ``KeyboardInterrupt``) are not failures: cancelling
  ``run()`` stops the tree cleanly and propagates.

One control task makes every decision, in event order (exits, ``start_child``, ``stop``), so the
restart logic never races with itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from actors.runtime.ref import Child, Ref, is_ref
from supervisors.children import ChildExited, ChildSlot, ChildSpec
from supervisors.errors import ChildStartFailed, SupervisorError, SupervisorEscalation
from supervisors.introspection import SupervisionEvent, SupervisorInfo
from supervisors.policy import (
    RestartIntensity,
    RestartType,
    Strategy,
    children_to_restart,
    should_restart,
)

__all__ = ["Supervisor"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Request:
    op: str  # "start_child" | "terminate_child" | "stop"
    arg: Any
    reply: asyncio.Future[Any] = field(compare=False)


class _Escalate(Exception):
    def __init__(self, cause: BaseException | None, child: str) -> None:
        self.cause = cause
        self.child = child


class Supervisor:
    """Owns an ordered list of children and keeps them running (see the module docstring)."""

    def __init__(
        self,
        name: str,
        children: Sequence[ChildSpec] = (),
        *,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        intensity: RestartIntensity | None = None,
        clock: Callable[[], float] = time.monotonic,
        observer: Callable[[SupervisionEvent], None] | None = None,
    ) -> None:
        self._name = name
        self._observer = observer
        self._specs = list(children)
        self._strategy = strategy
        self._intensity = intensity if intensity is not None else RestartIntensity(3, 5.0)
        self._clock = clock
        self._slots: dict[str, ChildSlot] = {}  # insertion order is start order
        self._events: asyncio.Queue[ChildExited | _Request] = asyncio.Queue()
        self._stop_requested = asyncio.Event()
        self._done = asyncio.Event()
        self._outcome: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._watchers: list[asyncio.Future[None]] = []  # wait_for() callers

    # -- the Child interface, so that supervisors nest ------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def is_alive(self) -> bool:
        return self._task is not None and not self._done.is_set()

    @property
    def intensity(self) -> RestartIntensity:
        return self._intensity

    def _tell(
        self, child: str, kind: Literal["exited", "restarted", "escalated"], **kw: Any
    ) -> None:
        if self._observer is None:
            return
        try:
            self._observer(
                SupervisionEvent(
                    supervisor=self._name, child=child, kind=kind, at=self._clock(), **kw
                )
            )
        except Exception:  # an observer never takes the tree down
            log.exception("supervisor %r: the observer failed", self._name)

    async def start(self) -> Self:
        """Start the children in order; return once all have started (else ChildStartFailed)."""
        if self._task is not None:
            raise RuntimeError(f"supervisor {self._name!r} already started")
        try:
            for spec in self._specs:
                await self._add(spec)
        except BaseException as exc:
            await self._shutdown_all()
            self._done.set()
            if isinstance(exc, Exception):
                raise ChildStartFailed(f"supervisor {self._name!r}: a child failed") from exc
            raise
        self._task = asyncio.get_running_loop().create_task(
            self._control(), name=f"supervisor:{self._name}"
        )
        return self

    async def stop(self, timeout: float | None = None) -> None:
        """Stop every child in reverse start order; after ``timeout`` cancel the remainder."""
        if self._task is None or self._done.is_set():
            return
        self._stop_requested.set()
        self._events.put_nowait(_Request("stop", None, asyncio.get_running_loop().create_future()))
        try:
            async with asyncio.timeout(timeout):
                await self._done.wait()
        except TimeoutError:
            self._task.cancel()
            await asyncio.wait([self._task])

    async def wait_stopped(self) -> None:
        """Wait for the end; raise SupervisorEscalation if the supervisor gave up."""
        await self._done.wait()
        if self._outcome is not None:
            raise self._outcome

    async def run(self) -> None:
        """Start (if needed) and supervise until stopped; cancellation stops the tree cleanly."""
        if self._task is None:
            await self.start()
        try:
            await self.wait_stopped()
        except asyncio.CancelledError:
            await self.stop()
            raise

    # -- children ---------------------------------------------------------------------------------

    @property
    def children(self) -> list[str]:
        """The children's names in start order (including ones waiting to be restarted)."""
        return list(self._slots)

    def running(self, name: str) -> bool:
        slot = self._slots.get(name)
        return slot is not None and slot.child is not None

    def describe(self) -> SupervisorInfo:
        """A snapshot of this supervisor and its children (nested supervisors described in
        turn): plain, JSON-ready data; see ``supervisors.introspection``."""
        return {
            "name": self._name,
            "strategy": self._strategy.value,
            "max_restarts": self._intensity.max_restarts,
            "within_seconds": self._intensity.within_seconds,
            "children": [slot.info() for slot in self._slots.values()],
        }

    async def wait_for(
        self,
        predicate: Callable[[Supervisor], bool],
        *,
        timeout: float,
    ) -> None:
        """Wait until ``predicate(self)`` holds, re-checked after every change of the children
        (a start, a stop, an exit handled); TimeoutError after ``timeout``."""
        async with asyncio.timeout(timeout):
            while not predicate(self):
                waiter = asyncio.get_running_loop().create_future()
                self._watchers.append(waiter)
                await waiter

    async def wait_child(self, name: str, *, after: Child | None = None, timeout: float) -> Child:
        """The running incarnation of ``name`` other than ``after`` (e.g. once restarted)."""
        await self.wait_for(
            lambda s: s.running(name) and s._slots[name].child is not after, timeout=timeout
        )
        return self.child(name)

    def _changed(self) -> None:
        watchers, self._watchers = self._watchers, []
        for waiter in watchers:
            if not waiter.done():
                waiter.set_result(None)

    def child(self, name: str) -> Child:
        """The current incarnation of ``name`` (LookupError if it is not running)."""
        slot = self._slots.get(name)
        if slot is None or slot.child is None:
            raise LookupError(f"supervisor {self._name!r}: no running child {name!r}")
        return slot.child

    def ref(self, name: str) -> Ref[Any]:
        """The current ref of actor child ``name``; refs of earlier incarnations are stale."""
        child = self.child(name)
        if not is_ref(child):
            raise TypeError(f"child {name!r} is not an actor")
        return child

    async def start_child(self, spec: ChildSpec) -> Child:
        """Add and start a child (a turn: a TEMPORARY task child); return it once started."""
        return await self._request("start_child", spec)  # type: ignore[no-any-return]

    async def terminate_child(self, name: str) -> None:
        """Stop ``name`` (its shutdown timeout, then cancellation) and forget it."""
        await self._request("terminate_child", name)

    async def _request(self, op: str, arg: Any) -> Any:
        if self._task is None or self._done.is_set() or self._stop_requested.is_set():
            raise SupervisorError(f"supervisor {self._name!r} is not running")
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._events.put_nowait(_Request(op, arg, reply))
        return await reply

    # -- the control task ------------------------------------------------------------------------

    async def _control(self) -> None:
        outcome: BaseException | None = None
        try:
            while True:
                event = await self._events.get()
                if isinstance(event, ChildExited):
                    await self._on_exit(event)
                elif event.op == "stop":
                    break
                else:
                    await self._serve(event)
        except _Escalate as esc:
            log.error("supervisor %r: restart intensity exceeded, giving up", self._name)
            self._tell(esc.child, "escalated")
            outcome = SupervisorEscalation(self._name, esc.cause)
        except BaseException:
            await self._shutdown_all()  # cancelled: tear down cleanly, then propagate
            self._finish(None)
            raise
        await self._shutdown_all()
        self._finish(outcome)

    def _finish(self, outcome: BaseException | None) -> None:
        self._outcome = outcome
        self._done.set()
        self._changed()
        while not self._events.empty():  # requests that arrived too late get a definite answer
            event = self._events.get_nowait()
            if isinstance(event, _Request) and not event.reply.done():
                event.reply.set_exception(SupervisorError(f"supervisor {self._name!r} stopped"))

    async def _serve(self, request: _Request) -> None:
        try:
            if request.op == "start_child":
                result: Any = await self._add(request.arg)
            else:
                slot = self._slots.pop(request.arg, None)
                if slot is not None:
                    await self._stop_slot(slot)
                result = None
        except Exception as exc:
            if not request.reply.done():
                request.reply.set_exception(exc)
            return
        if not request.reply.done():
            request.reply.set_result(result)

    async def _add(self, spec: ChildSpec) -> Child:
        if spec.name in self._slots:
            raise ValueError(f"supervisor {self._name!r}: duplicate child {spec.name!r}")
        slot = ChildSlot(spec, self._clock)
        await self._start_slot(slot)
        self._slots[spec.name] = slot
        self._changed()
        assert slot.child is not None
        return slot.child

    async def _start_slot(self, slot: ChildSlot) -> None:
        await slot.start(self._events.put_nowait)
        self._changed()

    async def _stop_slot(self, slot: ChildSlot) -> None:
        await slot.stop()
        self._changed()

    async def _shutdown_all(self) -> None:
        for name in reversed(list(self._slots)):
            slot = self._slots[name]
            slot.restarting = False  # whatever was planned, it ends here
            try:
                await self._stop_slot(slot)
            except Exception:
                log.exception("supervisor %r: stopping %r failed", self._name, name)

    async def _on_exit(self, event: ChildExited) -> None:
        slot = self._slots.get(event.name)
        if slot is None or slot.instance != event.instance:
            return  # an incarnation we stopped ourselves
        slot.ended()
        abnormal = event.error is not None
        if abnormal:
            log.warning("supervisor %r: child %r failed", self._name, event.name)
        self._tell(event.name, "exited", abnormal=abnormal)
        if not should_restart(slot.spec.restart, abnormal):
            if slot.spec.restart is RestartType.TEMPORARY:
                del self._slots[event.name]
            self._changed()
            return
        if not self._intensity.record(self._clock()):
            raise _Escalate(event.error, event.name)
        names = children_to_restart(self._strategy, list(self._slots), event.name)
        for name in names:
            self._slots[name].restarting = True
        for name in reversed(names):
            await self._stop_slot(self._slots[name])
        for name in names:
            sibling = self._slots[name]
            if name != event.name and sibling.spec.restart is RestartType.TEMPORARY:
                del self._slots[name]  # OTP: a temporary sibling is never restarted
        if not await self._backoff(slot):
            return
        for name in names:
            if name in self._slots:
                await self._restart(self._slots[name])

    async def _restart(self, slot: ChildSlot) -> None:
        while True:
            try:
                await self._start_slot(slot)
                slot.restarted(time.time())
                self._tell(slot.spec.name, "restarted")
                return
            except Exception as exc:
                log.warning("supervisor %r: restarting %r failed", self._name, slot.spec.name)
                if not self._intensity.record(self._clock()):
                    raise _Escalate(exc, slot.spec.name) from exc
                if not await self._backoff(slot):
                    return

    async def _backoff(self, slot: ChildSlot) -> bool:
        """Wait the child's backoff delay; False if a stop was requested meanwhile."""
        if slot.spec.backoff is None:
            return not self._stop_requested.is_set()
        if self._intensity.recent <= 1:
            slot.attempt = 0  # the first restart in a quiet window starts a new series
        delay = slot.spec.backoff.delay(slot.attempt)
        slot.attempt += 1
        try:
            async with asyncio.timeout(delay):
                await self._stop_requested.wait()
        except TimeoutError:
            return True
        return False
