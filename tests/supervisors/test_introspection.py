"""What a supervision tree shows outside: ``Supervisor.describe()``, plain data for the CLI."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from actors.runtime.actor import Actor
from actors.runtime.backoff import Backoff, Jitter
from actors.runtime.errors import ActorCrashed
from actors.runtime.thread_actor import ThreadActor
from actors.runtime.threaded import spawn_threaded
from supervisors.children import ChildSlot, ChildSpec
from supervisors.introspection import RESTART_HISTORY, ChildInfo
from supervisors.policy import RestartIntensity, RestartType, Strategy
from supervisors.supervisor import Supervisor

WAIT = 2.0


class Crashable(Actor[str]):
    """Answers ``"ping"``; crashes on ``"crash"``; ``"hold"`` waits until ``release`` is set."""

    def __init__(self) -> None:
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def handle(self, msg: str) -> Any:
        if msg == "crash":
            raise RuntimeError("crash on cue")
        if msg == "hold":
            self.held.set()
            await self.release.wait()
        return "pong"


class Echo(ThreadActor[str]):
    def handle(self, msg: str) -> Any:
        return msg


async def forever() -> None:
    await asyncio.Event().wait()


def child_of(info: Any, name: str) -> ChildInfo:
    (child,) = [c for c in info["children"] if c["name"] == name]
    return child  # type: ignore[no-any-return]


async def test_describe_gives_the_strategy_the_intensity_and_the_children_in_start_order() -> None:
    sup = await Supervisor(
        "root",
        [ChildSpec("a", start=Crashable), ChildSpec("b", start=Crashable)],
        strategy=Strategy.REST_FOR_ONE,
        intensity=RestartIntensity(max_restarts=4, within_seconds=7.5),
    ).start()
    try:
        info = sup.describe()
        assert json.loads(json.dumps(info)) == info  # plain data, through JSON as it is
        assert {k: v for k, v in info.items() if k != "children"} == {
            "name": "root",
            "strategy": "rest_for_one",
            "max_restarts": 4,
            "within_seconds": 7.5,
        }
        assert [c["name"] for c in info["children"]] == ["a", "b"]
        a = child_of(info, "a")
        assert a["uptime_s"] is not None
        assert 0.0 <= a["uptime_s"] < WAIT
        assert {k: v for k, v in a.items() if k != "uptime_s"} == {
            "name": "a",
            "kind": "actor",
            "restart": "permanent",
            "state": "running",
            "mailbox_depth": 0,
            "restarts": 0,
            "restart_times": [],
            "supervisor": None,
        }
    finally:
        await sup.stop()


async def test_a_crashed_child_shows_its_restart() -> None:
    sup = await Supervisor(
        "root", [ChildSpec("a", start=Crashable), ChildSpec("b", start=Crashable)]
    ).start()
    try:
        old = sup.child("b")
        before = time.time()
        with pytest.raises(ActorCrashed):
            await sup.ref("b").ask("crash", timeout=WAIT)
        await sup.wait_child("b", after=old, timeout=WAIT)
        after = time.time()
        info = sup.describe()
        b = child_of(info, "b")
        assert (b["state"], b["restarts"], len(b["restart_times"])) == ("running", 1, 1)
        assert before <= b["restart_times"][0] <= after
        a = child_of(info, "a")
        assert (a["restarts"], a["restart_times"]) == (0, [])  # one_for_one: a was left alone
        assert b["uptime_s"] is not None
        assert a["uptime_s"] is not None
        assert b["uptime_s"] <= a["uptime_s"]  # the new incarnation's uptime
    finally:
        await sup.stop()


async def test_a_nested_supervisor_appears_nested() -> None:
    def inner() -> Any:
        return Supervisor(
            "inner",
            [ChildSpec("x", start=Crashable)],
            strategy=Strategy.ONE_FOR_ALL,
            intensity=RestartIntensity(max_restarts=1, within_seconds=2.0),
        ).start()

    sup = await Supervisor("root", [ChildSpec("inner", start=inner)]).start()
    try:
        nested = child_of(sup.describe(), "inner")
        assert (nested["kind"], nested["state"], nested["mailbox_depth"]) == (
            "supervisor",
            "running",
            None,
        )
        described = nested["supervisor"]
        assert described is not None
        assert (described["name"], described["strategy"], described["max_restarts"]) == (
            "inner",
            "one_for_all",
            1,
        )
        assert child_of(described, "x")["kind"] == "actor"
    finally:
        await sup.stop()


async def test_a_task_child_has_no_mailbox_depth() -> None:
    sup = await Supervisor("root", [ChildSpec("job", task=forever)]).start()
    try:
        job = child_of(sup.describe(), "job")
        assert (job["kind"], job["state"], job["mailbox_depth"]) == ("task", "running", None)
    finally:
        await sup.stop()


async def test_a_thread_child_shows_its_kind_and_mailbox_depth() -> None:
    def start() -> Any:
        return spawn_threaded(Echo(), name="disk")

    sup = await Supervisor("root", [ChildSpec("disk", start=start)]).start()
    try:
        disk = child_of(sup.describe(), "disk")
        assert (disk["kind"], disk["mailbox_depth"]) == ("thread", 0)
    finally:
        await sup.stop()


async def test_an_actor_child_shows_the_messages_queued_behind_the_one_in_hand() -> None:
    actor = Crashable()
    sup = await Supervisor("root", [ChildSpec("a", start=lambda: actor)]).start()
    try:
        ref = sup.ref("a")
        ref.tell_nowait("hold")
        await asyncio.wait_for(actor.held.wait(), WAIT)
        ref.tell_nowait("ping")
        ref.tell_nowait("ping")
        assert child_of(sup.describe(), "a")["mailbox_depth"] == 2
        actor.release.set()
    finally:
        await sup.stop()


async def test_a_child_waiting_out_its_backoff_is_restarting_until_the_supervisor_stops() -> None:
    backoff = Backoff(initial=30.0, max_delay=30.0, jitter=Jitter.NONE)
    sup = await Supervisor("root", [ChildSpec("a", start=Crashable, backoff=backoff)]).start()
    with pytest.raises(ActorCrashed):
        await sup.ref("a").ask("crash", timeout=WAIT)
    await sup.wait_for(lambda s: not s.running("a"), timeout=WAIT)
    a = child_of(sup.describe(), "a")
    assert (a["state"], a["mailbox_depth"], a["uptime_s"], a["restarts"]) == (
        "restarting",
        None,
        None,
        0,  # not restarted yet
    )
    await asyncio.wait_for(sup.stop(), WAIT)
    assert child_of(sup.describe(), "a")["state"] == "stopped"


async def test_a_transient_child_that_ended_normally_is_stopped() -> None:
    async def work() -> None:
        return None

    sup = await Supervisor(
        "root", [ChildSpec("job", task=work, restart=RestartType.TRANSIENT)]
    ).start()
    try:
        await sup.wait_for(lambda s: not s.running("job"), timeout=WAIT)
        job = child_of(sup.describe(), "job")
        assert (job["state"], job["restarts"], job["uptime_s"]) == ("stopped", 0, None)
    finally:
        await sup.stop()


def test_a_child_keeps_the_times_of_its_last_64_restarts() -> None:
    slot = ChildSlot(ChildSpec("job", task=forever), clock=lambda: 0.0)
    for n in range(RESTART_HISTORY + 6):
        slot.restarted(1000.0 + n)
    info = slot.info()
    assert info["restarts"] == RESTART_HISTORY + 6
    assert info["restart_times"] == [1000.0 + n for n in range(6, RESTART_HISTORY + 6)]
