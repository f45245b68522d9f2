"""JournalSyncer: the thread-bound actor that fsyncs the chat journals, off the event loop.

Each journal record reaches the OS before the action it describes (an ``O_APPEND`` write on the
loop, cheap); ``fsync`` — the slow part — happens once per turn end, here, on this actor's own
thread (architecture.md section 2, "session store"). One job at a time, in order.

A failing ``fsync`` (the disk) answers the ask with its exception (``crash_on_ask_error`` is
False): the store logs it and the turn still ends (a journal that cannot record an end must never
cost the panel its end). Supervised in the daemon's tree as ``journal``; a restart loses nothing
— the data is on the OS already, and the next turn end syncs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from actors.runtime.thread_actor import ThreadActor

__all__ = ["JournalSyncer", "SyncJob"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncJob:
    """Run ``job`` (an fsync of one journal's new records) on the syncer's thread."""

    job: Callable[[], None]


class JournalSyncer(ThreadActor[SyncJob]):
    crash_on_ask_error = False

    def handle(self, msg: SyncJob) -> None:
        msg.job()
