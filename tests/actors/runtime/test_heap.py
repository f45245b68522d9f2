"""The daemon hands the C allocator's freed memory back to the system (``actors.runtime.heap``)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from actors.runtime import heap

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc_trim")


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


@linux_only
def test_trim_gives_back_what_was_freed_while_the_survivors_stay() -> None:
    # Objects over 512 bytes come from malloc; freeing most of them leaves the space with glibc
    # (a survivor every so often keeps the heap's top from shrinking by itself).
    blocks = [bytearray(1000) for _ in range(100_000)]
    survivors = blocks[::500]
    del blocks
    before = _rss_mib()
    assert heap.trim() is True
    after = _rss_mib()
    assert before - after > 40, (before, after)  # of the ~100 MiB freed
    assert all(len(b) == 1000 for b in survivors)


async def test_the_daemons_heap_child_trims_every_period_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    threads: list[str] = []
    monkeypatch.setattr(heap, "trim", lambda: threads.append(threading.current_thread().name))
    monkeypatch.setattr(heap, "_malloc_trim", lambda: print)
    task = asyncio.ensure_future(heap.keep_trimmed(0.01))
    async with asyncio.timeout(5):
        while len(threads) < 3:
            await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert threading.main_thread().name not in threads


async def test_without_malloc_trim_the_child_waits_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(heap, "trim", lambda: calls.append(1))
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    task = asyncio.ensure_future(heap.keep_trimmed(0.01))
    await asyncio.sleep(0.1)
    assert not task.done() and calls == []
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_trim_that_fails_stops_trimming_and_never_ends_the_daemon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def broken() -> bool:
        calls.append(1)
        raise OSError("no heap for you")

    monkeypatch.setattr(heap, "trim", broken)
    monkeypatch.setattr(heap, "_malloc_trim", lambda: print)
    task = asyncio.ensure_future(heap.keep_trimmed(0.01))
    await asyncio.sleep(0.2)
    assert not task.done() and calls == [1]  # tried once, then waits quietly until cancelled
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
