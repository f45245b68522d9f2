"""LiveRef through a restart: a message is delivered to the running incarnation, also when the
one the supervisor still lists has just stopped (its exit not handled yet)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actors.runtime.actor import Actor
from actors.runtime.errors import ActorStopped
from actors.runtime.live_ref import LiveRef
from supervisors.children import ChildSpec
from supervisors.policy import RestartType
from supervisors.supervisor import Supervisor

WAIT = 2.0


class Recorder(Actor[str]):
    """Keeps what it was told; answers ``"ping"`` with how many messages it has seen."""

    def __init__(self, seen: list[tuple[int, str]]) -> None:
        self.seen = seen

    async def handle(self, msg: str) -> Any:
        self.seen.append((id(self), msg))
        return len(self.seen)


async def test_a_tell_in_the_moment_between_a_stop_and_the_restart_reaches_the_next_one() -> None:
    seen: list[tuple[int, str]] = []
    sup = await Supervisor("root", [ChildSpec("r", start=lambda: Recorder(seen))]).start()
    live: LiveRef[str] = LiveRef("r").bind(sup)
    try:
        old = sup.ref("r")
        # Stopped from outside (as the chaos harness does): no longer alive at once, while its
        # supervisor, which hears of the exit a moment later, still lists it.
        stopping = asyncio.ensure_future(old.stop(timeout=WAIT))
        await asyncio.sleep(0)
        assert not old.is_alive and sup.ref("r") is old
        await live.tell("after the stop")  # used to raise ActorStopped: not running
        assert await live.ask("ping", timeout=WAIT) == 2
        assert [msg for _, msg in seen] == ["after the stop", "ping"]
        await stopping
    finally:
        await sup.stop()


async def test_a_child_that_is_not_restarted_still_ends_in_actor_stopped() -> None:
    seen: list[tuple[int, str]] = []
    spec = ChildSpec("r", start=lambda: Recorder(seen), restart=RestartType.TEMPORARY)
    sup = await Supervisor("root", [spec]).start()
    live: LiveRef[str] = LiveRef("r", restart_wait=0.3).bind(sup)
    try:
        stopping = asyncio.ensure_future(sup.ref("r").stop(timeout=WAIT))
        await asyncio.sleep(0)
        with pytest.raises(ActorStopped):
            await live.tell("too late")
        await stopping
        assert seen == []
    finally:
        await sup.stop()
