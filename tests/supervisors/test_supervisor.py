"""The supervisor: ordered start, reverse shutdown, restarts per strategy, escalation."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from actors.runtime.actor import Actor
from actors.runtime.backoff import Backoff, Jitter
from actors.runtime.errors import ActorCrashed, StaleActorRef
from supervisors.children import ChildSpec
from supervisors.errors import ChildStartFailed, SupervisorEscalation
from supervisors.introspection import SupervisionEvent
from supervisors.policy import RestartIntensity, RestartType, Strategy
from supervisors.supervisor import Supervisor

WAIT = 2.0


class Journal:
    """Shared record of hooks across incarnations, with an event per new entry."""

    def __init__(self) -> None:
        self.entries: list[str] = []
        self.changed = asyncio.Event()

    def add(self, entry: str) -> None:
        self.entries.append(entry)
        self.changed.set()

    async def wait_for(self, entry: str, count: int = 1) -> None:
        async with asyncio.timeout(WAIT):
            while self.entries.count(entry) < count:
                self.changed.clear()
                await self.changed.wait()


class Crashable(Actor[str]):
    """Answers ``"ping"``; crashes on ``"crash"``; ``"hang"`` never answers."""

    def __init__(self, name: str, journal: Journal) -> None:
        self.name = name
        self.journal = journal

    async def on_start(self) -> None:
        self.journal.add(f"start:{self.name}")

    async def on_stop(self) -> None:
        self.journal.add(f"stop:{self.name}")

    async def handle(self, msg: str) -> Any:
        if msg == "crash":
            raise RuntimeError("crash on cue")
        if msg == "hang":
            await asyncio.Event().wait()
        return f"pong:{self.name}"


def specs(journal: Journal, names: list[str], **kwargs: Any) -> list[ChildSpec]:
    def factory(name: str) -> Any:
        return lambda: Crashable(name, journal)

    return [ChildSpec(name, start=factory(name), **kwargs) for name in names]


async def crash(sup: Supervisor, name: str) -> None:
    with pytest.raises(ActorCrashed):
        await sup.ref(name).ask("crash", timeout=WAIT)


async def test_children_start_in_order_and_stop_in_reverse_order() -> None:
    journal = Journal()
    sup = await Supervisor("root", specs(journal, ["a", "b", "c"])).start()
    assert journal.entries == ["start:a", "start:b", "start:c"]
    assert sup.children == ["a", "b", "c"]
    await sup.stop()
    assert journal.entries[3:] == ["stop:c", "stop:b", "stop:a"]
    await sup.wait_stopped()


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (Strategy.ONE_FOR_ONE, ["start:b"]),
        (Strategy.ONE_FOR_ALL, ["stop:c", "stop:a", "start:a", "start:b", "start:c"]),
        (Strategy.REST_FOR_ONE, ["stop:c", "start:b", "start:c"]),
    ],
)
async def test_each_strategy_restarts_exactly_the_right_children_in_the_right_order(
    strategy: Strategy, expected: list[str]
) -> None:
    journal = Journal()
    sup = await Supervisor("root", specs(journal, ["a", "b", "c"]), strategy=strategy).start()
    before = len(journal.entries)
    old = {name: sup.child(name) for name in sup.children}
    await crash(sup, "b")
    await sup.wait_child("b", after=old["b"], timeout=WAIT)
    if strategy is not Strategy.ONE_FOR_ONE:
        await sup.wait_child("c", after=old["c"], timeout=WAIT)
    assert journal.entries[before:] == expected
    assert await sup.ref("b").ask("ping", timeout=WAIT) == "pong:b"
    await sup.stop()


async def test_a_restarted_child_gets_a_new_generation_and_old_refs_are_stale() -> None:
    journal = Journal()
    sup = await Supervisor("root", specs(journal, ["a"])).start()
    old = sup.ref("a")
    await crash(sup, "a")
    await sup.wait_child("a", after=old, timeout=WAIT)
    new = sup.ref("a")
    assert new.generation == old.generation + 1
    with pytest.raises(StaleActorRef):
        await old.ask("ping", timeout=WAIT)
    assert await new.ask("ping", timeout=WAIT) == "pong:a"
    await sup.stop()


async def test_a_restart_fails_everything_the_old_incarnation_had_in_flight() -> None:
    journal = Journal()
    sup = await Supervisor("root", specs(journal, ["a"])).start()
    ref = sup.ref("a")
    hanging = asyncio.create_task(ref.ask("hang", timeout=60))
    queued = asyncio.create_task(ref.ask("ping", timeout=60))
    crashing = asyncio.create_task(ref.ask("crash", timeout=60))
    # "hang" is in flight and never returns: stopping it is what a sibling restart would do.
    await asyncio.sleep(0)  # one loop turn: the three asks reach the mailbox
    await ref.stop(timeout=0.05)
    results = await asyncio.wait_for(
        asyncio.gather(hanging, queued, crashing, return_exceptions=True), WAIT
    )
    assert all(isinstance(r, Exception) for r in results)
    await journal.wait_for("start:a", count=2)  # permanent: restarted after the stop
    await sup.stop()


async def test_intensity_exceeded_stops_all_children_and_escalates() -> None:
    journal = Journal()
    sup = await Supervisor(
        "root",
        specs(journal, ["a", "b"]),
        intensity=RestartIntensity(max_restarts=2, within_seconds=60.0),
    ).start()
    for _ in range(2):
        old = sup.child("b")
        await crash(sup, "b")
        await sup.wait_child("b", after=old, timeout=WAIT)
    await crash(sup, "b")
    with pytest.raises(SupervisorEscalation) as info:
        await asyncio.wait_for(sup.wait_stopped(), WAIT)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert journal.entries[-1] == "stop:a"
    assert not sup.is_alive


async def test_an_observer_sees_each_exit_restart_and_the_escalation() -> None:
    journal = Journal()
    seen: list[SupervisionEvent] = []
    sup = await Supervisor(
        "root",
        specs(journal, ["a", "b"]),
        intensity=RestartIntensity(max_restarts=1, within_seconds=60.0),
        observer=seen.append,
    ).start()
    old = sup.child("b")
    await crash(sup, "b")
    await sup.wait_child("b", after=old, timeout=WAIT)
    await crash(sup, "b")
    with pytest.raises(SupervisorEscalation):
        await asyncio.wait_for(sup.wait_stopped(), WAIT)
    assert [(e.child, e.kind, e.abnormal) for e in seen] == [
        ("b", "exited", True),
        ("b", "restarted", False),
        ("b", "exited", True),
        ("b", "escalated", False),
    ]
    assert {e.supervisor for e in seen} == {"root"}


async def test_a_nested_supervisor_escalation_is_a_crash_its_parent_restarts() -> None:
    journal = Journal()

    def make_inner() -> Any:
        inner = Supervisor(
            "inner",
            specs(journal, ["x"]),
            intensity=RestartIntensity(max_restarts=0, within_seconds=60.0),
        )
        return inner.start()

    parent = await Supervisor("parent", [ChildSpec("inner", start=make_inner)]).start()
    inner = parent.child("inner")
    assert isinstance(inner, Supervisor)
    await crash(inner, "x")
    # The inner supervisor gave up; its parent restarted the whole inner tree.
    new_inner = await parent.wait_child("inner", after=inner, timeout=WAIT)
    assert isinstance(new_inner, Supervisor)
    assert await new_inner.ref("x").ask("ping", timeout=WAIT) == "pong:x"
    assert journal.entries.count("start:x") == 2
    await parent.stop()


async def test_a_transient_child_exiting_normally_is_not_restarted() -> None:
    done = asyncio.Event()
    runs = 0

    async def work() -> None:
        nonlocal runs
        runs += 1
        done.set()

    sup = await Supervisor(
        "root", [ChildSpec("job", task=work, restart=RestartType.TRANSIENT)]
    ).start()
    await asyncio.wait_for(done.wait(), WAIT)
    await sup.wait_for(lambda s: not s.running("job"), timeout=WAIT)
    assert sup.children == ["job"]  # kept, not running, not restarted
    assert runs == 1
    await sup.stop()


async def test_a_transient_task_child_that_fails_is_restarted() -> None:
    journal = Journal()
    runs = 0

    async def work() -> None:
        nonlocal runs
        runs += 1
        journal.add("run")
        if runs == 1:
            raise RuntimeError("first run fails")
        await asyncio.Event().wait()

    sup = await Supervisor(
        "root", [ChildSpec("job", task=work, restart=RestartType.TRANSIENT)]
    ).start()
    await journal.wait_for("run", count=2)
    await sup.stop()


async def test_temporary_children_added_dynamically_are_never_restarted() -> None:
    sup = await Supervisor("root").start()
    started = asyncio.Event()

    async def turn() -> None:
        started.set()
        raise RuntimeError("turn failed")

    child = await sup.start_child(ChildSpec("turn-1", task=turn, restart=RestartType.TEMPORARY))
    await asyncio.wait_for(started.wait(), WAIT)
    with pytest.raises(RuntimeError):
        await child.wait_stopped()
    await sup.wait_for(lambda s: s.children == [], timeout=WAIT)
    await sup.stop()


async def test_a_child_that_fails_to_start_fails_the_start_and_stops_the_others() -> None:
    journal = Journal()

    class BadStart(Crashable):
        async def on_start(self) -> None:
            raise RuntimeError("cannot start")

    children = [*specs(journal, ["a"]), ChildSpec("bad", start=lambda: BadStart("bad", journal))]
    with pytest.raises(ChildStartFailed):
        await Supervisor("root", children).start()
    assert journal.entries == ["start:a", "stop:a"]


async def test_cancelling_run_tears_the_tree_down_cleanly() -> None:
    journal = Journal()
    sup = Supervisor("root", specs(journal, ["a", "b"]))
    runner = asyncio.create_task(sup.run())
    await sup.wait_for(lambda s: s.is_alive, timeout=WAIT)
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert journal.entries[-2:] == ["stop:b", "stop:a"]
    await sup.wait_stopped()  # a clean end: no escalation


async def test_backoff_delays_the_restart_and_a_stop_interrupts_it() -> None:
    journal = Journal()
    backoff = Backoff(initial=30.0, max_delay=30.0, jitter=Jitter.NONE, rng=random.Random(1))
    sup = await Supervisor("root", specs(journal, ["a"], backoff=backoff)).start()
    await crash(sup, "a")
    # The restart waits 30 s; the stop must not.
    await asyncio.wait_for(sup.stop(), WAIT)
    assert journal.entries.count("start:a") == 1


async def test_a_stopped_supervisor_refuses_new_children() -> None:
    sup = await Supervisor("root").start()
    await sup.stop()

    async def noop() -> None:
        return None

    with pytest.raises(Exception, match="not running"):
        await sup.start_child(ChildSpec("late", task=noop))
