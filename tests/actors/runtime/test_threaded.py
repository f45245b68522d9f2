"""The pykka bridge: thread-bound actors behind an ActorRef-shaped ref."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from actors.runtime.errors import ActorCrashed, ActorStopped, AskTimeout, MailboxFull
from actors.runtime.ref import ActorCell, Overflow
from actors.runtime.thread_actor import ThreadActor, start_thread_actor
from actors.runtime.threaded import spawn_threaded

WAIT = 2.0


class Boom(Exception):
    pass


class Worker(ThreadActor[Any]):
    """Echoes; ``"block"`` waits on a threading.Event; ``"fail"`` raises."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.thread_names: list[str] = []
        self.stopped = False

    def on_stop(self) -> None:
        self.stopped = True

    def handle(self, msg: Any) -> Any:
        self.thread_names.append(threading.current_thread().name)
        if msg == "block":
            self.entered.set()
            self.gate.wait(WAIT)
            return "unblocked"
        if msg == "fail":
            raise Boom("thread detail")
        return msg


async def entered(worker: Worker) -> None:
    """Wait (off the loop) until the worker is inside a blocking message."""
    assert await asyncio.to_thread(worker.entered.wait, WAIT)


async def test_an_ask_is_answered_from_the_actor_thread_without_blocking_the_loop() -> None:
    worker = Worker()
    ref = await spawn_threaded(worker, name="worker")
    pending = asyncio.create_task(ref.ask("block", timeout=WAIT))
    await entered(worker)
    # The loop is free while the thread blocks: another coroutine runs to completion.
    ticks = 0
    for _ in range(3):
        await asyncio.sleep(0)
        ticks += 1
    assert ticks == 3
    assert not pending.done()
    worker.gate.set()
    assert await asyncio.wait_for(pending, WAIT) == "unblocked"
    assert worker.thread_names[0] != threading.current_thread().name
    await ref.stop()


async def test_stop_joins_the_actor_thread() -> None:
    worker = Worker()
    ref = await spawn_threaded(worker, name="worker")
    assert await ref.ask("hello", timeout=WAIT) == "hello"
    thread = ref.thread
    assert thread is not None
    assert thread.is_alive()
    await ref.stop(timeout=WAIT)
    assert not thread.is_alive()
    assert worker.stopped
    with pytest.raises(ActorStopped):
        await ref.ask("after", timeout=WAIT)


async def test_a_threaded_ask_times_out_and_the_late_reply_is_dropped() -> None:
    worker = Worker()
    ref = await spawn_threaded(worker, name="worker")
    with pytest.raises(AskTimeout):
        await ref.ask("block", timeout=0.05)
    worker.gate.set()
    assert await ref.ask("next", timeout=WAIT) == "next"
    await ref.stop()


async def test_the_bridge_bounds_messages_in_flight() -> None:
    worker = Worker()
    ref = await spawn_threaded(worker, name="worker", max_in_flight=2, overflow=Overflow.FAIL)
    ref.tell_nowait("block")
    await entered(worker)
    queued = asyncio.create_task(ref.ask("queued", timeout=WAIT))
    await asyncio.sleep(0)  # one loop turn: the task posts its message
    with pytest.raises(MailboxFull):
        ref.tell_nowait("one too many")
    worker.gate.set()
    assert await asyncio.wait_for(queued, WAIT) == "queued"
    assert await ref.ask("after", timeout=WAIT) == "after"
    await ref.stop()


async def test_mailbox_depth_counts_the_messages_waiting_on_the_thread() -> None:
    worker = Worker()
    ref = await spawn_threaded(worker, name="worker")
    assert ref.mailbox_depth == 0
    ref.tell_nowait("block")
    await entered(worker)
    assert ref.mailbox_depth == 0  # the blocking message is in hand, not queued
    ref.tell_nowait("one")
    ref.tell_nowait("two")
    assert ref.mailbox_depth == 2
    worker.gate.set()
    assert await ref.ask("three", timeout=WAIT) == "three"
    assert ref.mailbox_depth == 0
    await ref.stop()


async def test_a_stop_fails_the_asks_still_queued_on_the_thread() -> None:
    worker = Worker()
    ref = await spawn_threaded(worker, name="worker")
    first = asyncio.create_task(ref.ask("block", timeout=WAIT))
    await entered(worker)
    queued = asyncio.create_task(ref.ask("queued", timeout=WAIT))
    await asyncio.sleep(0)  # one loop turn: the task posts its message
    stopping = asyncio.create_task(ref.stop(timeout=WAIT))
    await asyncio.sleep(0)  # one loop turn: the stop request reaches the thread's flag
    worker.gate.set()
    assert await asyncio.wait_for(first, WAIT) == "unblocked"
    with pytest.raises(ActorStopped):
        await asyncio.wait_for(queued, WAIT)
    await asyncio.wait_for(stopping, WAIT)


async def test_a_crash_on_the_thread_fails_the_asker_and_reports_to_the_owner() -> None:
    ref = await spawn_threaded(Worker(), name="worker")
    with pytest.raises(ActorCrashed) as info:
        await asyncio.wait_for(ref.ask("fail", timeout=60), WAIT)
    assert isinstance(info.value.cause, Boom)
    with pytest.raises(Boom):
        await asyncio.wait_for(ref.wait_stopped(), WAIT)
    await ref.stop()


async def test_a_failing_thread_on_start_fails_the_spawn() -> None:
    class BadStart(Worker):
        def on_start(self) -> None:
            raise Boom("no")

    with pytest.raises(Boom):
        await spawn_threaded(BadStart(), name="bad")


async def test_a_rebound_threaded_ref_makes_the_old_one_stale() -> None:
    from actors.runtime.errors import StaleActorRef

    ref = await spawn_threaded(Worker(), name="worker", cell=ActorCell("worker"))
    cell = ActorCell("slot")
    current = ref.rebind(cell)
    newer = current.rebind(cell)
    with pytest.raises(StaleActorRef):
        current.tell_nowait("x")
    assert await newer.ask("ok", timeout=WAIT) == "ok"
    await newer.stop()


def test_the_synchronous_handle_posts_and_stops_without_an_event_loop() -> None:
    worker = Worker()
    handle = start_thread_actor(worker, name="sync")
    got = threading.Event()
    results: list[Any] = []

    def done(result: Any, error: BaseException | None) -> None:
        results.append((result, error))
        got.set()

    handle.post("ping", done)
    assert got.wait(WAIT)
    assert results == [("ping", None)]
    assert handle.stop_and_join(WAIT)
