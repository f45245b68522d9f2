"""Actor runtime throughput against a bare asyncio.Queue ping-pong measured in the same run.

Figures: ask round trips/s and tells/s through ``actors.runtime.actor``, each as a ratio of the bare
queue baseline (goal: an ask round trip within 2x of the bare ping-pong), and the ask rate through
the pykka bridge (``actors.runtime.threaded``), which crosses threads twice per round trip.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from actors.runtime.actor import Actor, spawn
from actors.runtime.thread_actor import ThreadActor
from actors.runtime.threaded import spawn_threaded

__all__ = ["main"]

DURATION = 1.5  # seconds per measurement


class _Echo(Actor[int]):
    mailbox_size = 1024

    async def handle(self, msg: int) -> int:
        return msg


class _Counter(Actor[int]):
    mailbox_size = 1024

    def __init__(self) -> None:
        self.count = 0

    async def handle(self, msg: int) -> None:
        self.count += 1


class _ThreadEcho(ThreadActor[int]):
    def handle(self, msg: int) -> int:
        return msg


async def _timed(step: Any, batch: int = 1000) -> float:
    """Operations per second of ``await step()``, over about DURATION seconds."""
    count = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < DURATION:
        for _ in range(batch):
            await step()
        count += batch
    return count / elapsed


async def _bare_ping_pong() -> float:
    requests: asyncio.Queue[int] = asyncio.Queue()
    replies: asyncio.Queue[int] = asyncio.Queue()

    async def server() -> None:
        while True:
            replies.put_nowait(await requests.get())

    task = asyncio.create_task(server())

    async def step() -> None:
        requests.put_nowait(1)
        await replies.get()

    rate = await _timed(step)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return rate


async def _bare_sends() -> float:
    queue: asyncio.Queue[int] = asyncio.Queue(1024)
    received = 0

    async def consumer() -> None:
        nonlocal received
        while True:
            await queue.get()
            received += 1

    task = asyncio.create_task(consumer())

    async def step() -> None:
        await queue.put(1)

    rate = await _timed(step)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return rate


async def _actor_asks() -> float:
    ref = await spawn(_Echo(), name="echo")

    async def step() -> None:
        await ref.ask(1, timeout=5.0)

    rate = await _timed(step)
    await ref.stop()
    return rate


async def _actor_tells() -> float:
    counter = _Counter()
    ref = await spawn(counter, name="counter")

    async def step() -> None:
        await ref.tell(1)

    rate = await _timed(step)
    await ref.stop()
    return rate


async def _bridge_asks() -> float:
    ref = await spawn_threaded(_ThreadEcho(), name="thread-echo")

    async def step() -> None:
        await ref.ask(1, timeout=5.0)

    rate = await _timed(step, batch=200)
    await ref.stop()
    return rate


async def _run() -> list[tuple[str, float, str]]:
    bare_rt = await _bare_ping_pong()
    bare_send = await _bare_sends()
    asks = await _actor_asks()
    tells = await _actor_tells()
    bridge = await _bridge_asks()
    return [
        ("bare queue ping-pong round trips/s", bare_rt, "1.00"),
        ("actor ask round trips/s", asks, f"{bare_rt / asks:.2f} (goal <= 2)"),
        ("bare queue sends/s", bare_send, "1.00"),
        ("actor tells/s", tells, f"{bare_send / tells:.2f}"),
        ("pykka bridge ask round trips/s", bridge, f"{bare_rt / bridge:.1f}"),
    ]


def main() -> None:
    rows = asyncio.run(_run())
    print("bench_actors")
    # cost = time per operation divided by the bare asyncio.Queue equivalent's (lower is better)
    print(f"{'measure':<38} {'ops/s':>12}  cost vs bare queue")
    for label, rate, ratio in rows:
        print(f"{label:<38} {rate:>12,.0f}  {ratio}")


if __name__ == "__main__":
    main()
