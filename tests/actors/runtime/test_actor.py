"""The asyncio actor runtime: asks, tells, mailboxes, stop, crash, generations."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from actors.runtime.actor import Actor, spawn
from actors.runtime.errors import (
    ActorCrashed,
    ActorError,
    ActorStopped,
    AskTimeout,
    MailboxFull,
    StaleActorRef,
)
from actors.runtime.ref import ActorCell, Overflow

WAIT = 2.0  # generous upper bound for things that should happen at once


async def let_tasks_run() -> None:
    """One loop turn: tasks created just before run up to their first wait (FIFO scheduling).

    Not a wait for a condition: it only lets a just-created ``ask`` task post its message.
    """
    await asyncio.sleep(0)


class Boom(Exception):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Echo:
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """Handled only when ``release`` is set; ``entered`` tells the test it is in flight."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fail:
    pass


class Probe(Actor[Echo | Block | Fail]):
    """An actor that echoes, blocks or crashes on cue, and records its hooks."""

    mailbox_size = 4

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.hooks: list[str] = []

    async def on_start(self) -> None:
        self.hooks.append("start")

    async def on_stop(self) -> None:
        self.hooks.append("stop")

    async def on_failure(self, exc: BaseException) -> None:
        self.hooks.append(f"failure:{type(exc).__name__}")

    async def handle(self, msg: Echo | Block | Fail) -> Any:
        if isinstance(msg, Block):
            msg.entered.set()
            await msg.release.wait()
            return "released"
        if isinstance(msg, Fail):
            raise Boom("internal detail")
        self.seen.append(msg.value)
        return msg.value


class FailFast(Probe):
    overflow = Overflow.FAIL


class Tolerant(Probe):
    crash_on_ask_error = False


async def test_spawn_returns_after_on_start_and_an_ask_gets_the_answer() -> None:
    probe = Probe()
    ref = await spawn(probe, name="probe")
    assert probe.hooks == ["start"]
    assert await ref.ask(Echo(value=42), timeout=WAIT) == 42
    await ref.stop()
    assert probe.hooks == ["start", "stop"]


async def test_a_failing_on_start_raises_to_the_spawner() -> None:
    class BadStart(Probe):
        async def on_start(self) -> None:
            raise Boom("no")

    with pytest.raises(Boom):
        await spawn(BadStart(), name="bad")


async def test_an_ask_without_reply_times_out_and_the_late_reply_is_dropped() -> None:
    ref = await spawn(Probe(), name="probe")
    block = Block()
    with pytest.raises(AskTimeout):
        await ref.ask(block, timeout=0.05)
    block.release.set()
    # The actor goes on: the late reply was dropped, the next ask is answered normally.
    assert await ref.ask(Echo(value="next"), timeout=WAIT) == "next"
    await ref.stop()


async def test_a_tell_to_a_stopped_actor_raises_actor_stopped() -> None:
    ref = await spawn(Probe(), name="probe")
    await ref.stop()
    assert not ref.is_alive
    with pytest.raises(ActorStopped):
        await ref.tell(Echo(value=1))
    with pytest.raises(ActorStopped):
        ref.tell_nowait(Echo(value=1))
    with pytest.raises(ActorStopped):
        await ref.ask(Echo(value=1), timeout=WAIT)


async def test_a_stop_finishes_the_current_message_then_fails_queued_asks_and_drops_tells() -> None:
    probe = Probe()
    ref = await spawn(probe, name="probe")
    block = Block()
    in_flight = asyncio.create_task(ref.ask(block, timeout=WAIT))
    await asyncio.wait_for(block.entered.wait(), WAIT)
    queued = asyncio.create_task(ref.ask(Echo(value="queued"), timeout=WAIT))
    ref.tell_nowait(Echo(value="dropped"))
    await let_tasks_run()
    stopping = asyncio.create_task(ref.stop())
    block.release.set()
    assert await asyncio.wait_for(in_flight, WAIT) == "released"
    with pytest.raises(ActorStopped):
        await asyncio.wait_for(queued, WAIT)
    await asyncio.wait_for(stopping, WAIT)
    assert probe.seen == []
    assert probe.hooks == ["start", "stop"]


async def test_a_stop_that_times_out_cancels_the_actor_and_fails_the_in_flight_ask() -> None:
    ref = await spawn(Probe(), name="probe")
    block = Block()
    in_flight = asyncio.create_task(ref.ask(block, timeout=WAIT))
    await asyncio.wait_for(block.entered.wait(), WAIT)
    await ref.stop(timeout=0.05)
    with pytest.raises(ActorStopped):
        await asyncio.wait_for(in_flight, WAIT)
    await ref.wait_stopped()  # a cancellation is a clean end, not a crash


async def test_a_crash_mid_ask_fails_the_caller_promptly_with_actor_crashed() -> None:
    probe = Probe()
    ref = await spawn(probe, name="probe")
    with pytest.raises(ActorCrashed) as info:
        await asyncio.wait_for(ref.ask(Fail(), timeout=60), WAIT)
    assert isinstance(info.value.cause, Boom)
    assert "internal detail" not in str(info.value)
    with pytest.raises(Boom):
        await asyncio.wait_for(ref.wait_stopped(), WAIT)
    assert probe.hooks == ["start", "failure:Boom"]


async def test_a_crash_fails_every_queued_ask_with_actor_crashed() -> None:
    ref = await spawn(Probe(), name="probe")
    block = Block()
    first = asyncio.create_task(ref.ask(block, timeout=WAIT))
    await asyncio.wait_for(block.entered.wait(), WAIT)
    ref.tell_nowait(Fail())
    queued = asyncio.create_task(ref.ask(Echo(value=1), timeout=60))
    await let_tasks_run()
    block.release.set()
    assert await first == "released"
    with pytest.raises(ActorCrashed):
        await asyncio.wait_for(queued, WAIT)
    outcomes: list[BaseException | None] = []
    ref.add_done_callback(outcomes.append)
    assert len(outcomes) == 1
    assert isinstance(outcomes[0], Boom)


async def test_with_crash_on_ask_error_off_the_asker_gets_the_exception_and_the_actor_lives() -> (
    None
):
    ref = await spawn(Tolerant(), name="tolerant")
    with pytest.raises(Boom):
        await ref.ask(Fail(), timeout=WAIT)
    assert await ref.ask(Echo(value="alive"), timeout=WAIT) == "alive"
    await ref.stop()


async def test_a_full_mailbox_with_fail_policy_raises_mailbox_full() -> None:
    ref = await spawn(FailFast(), name="fail-fast")
    block = Block()
    ref.tell_nowait(block)
    await asyncio.wait_for(block.entered.wait(), WAIT)
    for i in range(FailFast.mailbox_size):
        ref.tell_nowait(Echo(value=i))
    with pytest.raises(MailboxFull):
        ref.tell_nowait(Echo(value="one too many"))
    with pytest.raises(MailboxFull):
        await ref.tell(Echo(value="one too many"))
    block.release.set()
    await ref.stop()


async def test_a_full_mailbox_with_wait_policy_makes_tell_wait_for_space() -> None:
    probe = Probe()
    ref = await spawn(probe, name="probe")
    block = Block()
    ref.tell_nowait(block)
    await asyncio.wait_for(block.entered.wait(), WAIT)
    for i in range(Probe.mailbox_size):
        ref.tell_nowait(Echo(value=i))
    waiting = asyncio.create_task(ref.tell(Echo(value="waited")))
    with pytest.raises(MailboxFull):
        await ref.tell(Echo(value="gives up"), timeout=0.01)
    assert not waiting.done()
    block.release.set()
    await asyncio.wait_for(waiting, WAIT)
    assert await ref.ask(Echo(value="last"), timeout=WAIT) == "last"
    assert probe.seen == [0, 1, 2, 3, "waited", "last"]
    await ref.stop()


async def test_a_tell_waiting_for_space_fails_when_the_actor_stops() -> None:
    ref = await spawn(Probe(), name="probe")
    block = Block()
    ref.tell_nowait(block)
    await asyncio.wait_for(block.entered.wait(), WAIT)
    for i in range(Probe.mailbox_size):
        ref.tell_nowait(Echo(value=i))
    waiting = asyncio.create_task(ref.tell(Echo(value="never")))
    await let_tasks_run()
    stopping = asyncio.create_task(ref.stop())
    with pytest.raises(ActorStopped):
        await asyncio.wait_for(waiting, WAIT)
    block.release.set()
    await asyncio.wait_for(stopping, WAIT)


async def test_an_ask_waiting_for_space_counts_against_its_deadline() -> None:
    ref = await spawn(Probe(), name="probe")
    block = Block()
    ref.tell_nowait(block)
    await asyncio.wait_for(block.entered.wait(), WAIT)
    for i in range(Probe.mailbox_size):
        ref.tell_nowait(Echo(value=i))
    with pytest.raises(AskTimeout):
        await ref.ask(Echo(value="late"), timeout=0.02)
    block.release.set()
    await ref.stop()


async def test_mailbox_depth_counts_the_messages_queued_behind_the_one_in_hand() -> None:
    ref = await spawn(Probe(), name="probe")
    assert ref.mailbox_depth == 0
    block = Block()
    ref.tell_nowait(block)
    await asyncio.wait_for(block.entered.wait(), WAIT)
    assert ref.mailbox_depth == 0  # the blocking message is in hand, not queued
    ref.tell_nowait(Echo(value=1))
    ref.tell_nowait(Echo(value=2))
    assert ref.mailbox_depth == 2
    block.release.set()
    assert await ref.ask(Echo(value=3), timeout=WAIT) == 3
    assert ref.mailbox_depth == 0
    await ref.stop()


async def test_a_ref_of_a_replaced_incarnation_is_stale() -> None:
    cell = ActorCell("slot")
    old = await spawn(Probe(), name="slot", cell=cell)
    await old.stop()
    new = await spawn(Probe(), name="slot", cell=cell)
    assert (old.generation, new.generation) == (1, 2)
    with pytest.raises(StaleActorRef):
        await old.tell(Echo(value=1))
    with pytest.raises(StaleActorRef):
        await old.ask(Echo(value=1), timeout=WAIT)
    assert not old.is_alive
    assert await new.ask(Echo(value="new"), timeout=WAIT) == "new"
    await old.stop()  # stopping through a stale ref never touches the new incarnation
    assert new.is_alive
    await new.stop()


async def test_an_actor_can_stop_itself_as_a_normal_exit() -> None:
    class Quitter(Probe):
        async def handle(self, msg: Echo | Block | Fail) -> Any:
            self.stop_self()
            return "bye"

    ref = await spawn(Quitter(), name="quitter")
    assert await ref.ask(Echo(value=0), timeout=WAIT) == "bye"
    await asyncio.wait_for(ref.wait_stopped(), WAIT)
    assert not ref.is_alive


async def test_an_actor_instance_cannot_be_spawned_twice() -> None:
    probe = Probe()
    ref = await spawn(probe, name="once")
    with pytest.raises(RuntimeError):
        await spawn(probe, name="twice")
    await ref.stop()


def test_every_runtime_error_is_an_actor_error() -> None:
    for cls in (ActorStopped, AskTimeout, StaleActorRef, MailboxFull):
        assert issubclass(cls, ActorError)
    assert issubclass(ActorCrashed, ActorError)
