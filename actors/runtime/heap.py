"""Giving freed memory back to the system, now and then, in a long-running process.

CPython returns its small-object arenas to the system when they empty, but what it asks of the C
allocator (every object over 512 bytes: frames' payloads, dict and list tables, buffers) goes
to glibc's ``malloc``, which keeps the free space at the top of its heaps and in its per-thread
arenas for reuse. In a daemon that runs for days with bursts of traffic (a batch of turns, a
large snapshot, a reconnect storm) that retained space is most of its RSS growth while what it
can reach stays flat (``browy chaos`` measures both). ``malloc_trim(0)`` hands it back.

:func:`trim` does it once where the C library has it (glibc; a no-op elsewhere: macOS's
allocator returns memory itself), :func:`keep_trimmed` every so often, off the event loop: the
call goes through ``ctypes``, which lets go of the GIL while glibc walks its heaps.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import Callable

__all__ = ["TRIM_EVERY_S", "keep_trimmed", "trim"]

log = logging.getLogger(__name__)

#: How often the daemon hands freed memory back. A trim walks the heap (a few milliseconds for
#: a daemon's tens of MiB, on a worker thread), so once a minute costs nothing measurable.
TRIM_EVERY_S = 60.0


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, from the C library already loaded in this process (no search
    for it on disk: ``ctypes.util.find_library`` would run ``ldconfig``); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # a Python built without _ctypes has none: trimming is then skipped

        fn = ctypes.CDLL(None).malloc_trim  # glibc only: musl has no such symbol
    except (ImportError, OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def trim() -> bool:
    """Hand the C allocator's free memory back to the system; True when some was released,
    False when nothing was, or where the C library has no ``malloc_trim``."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False


async def keep_trimmed(every_s: float = TRIM_EVERY_S) -> None:
    """Trim every *every_s* seconds, on a worker thread, until cancelled (a task child of the
    daemon's tree, whose root restarts nothing: so this never raises — a trim that fails is
    logged and trimming stops, the daemon goes on)."""
    if await asyncio.to_thread(_malloc_trim) is None:  # looked up off the loop, once
        log.debug("no malloc_trim here: the allocator is left to return memory itself")
        await asyncio.Event().wait()
    while True:
        await asyncio.sleep(every_s)
        try:
            await asyncio.to_thread(trim)
        except Exception:  # a memory nicety must not end the daemon
            log.warning("malloc_trim failed; memory is no longer trimmed", exc_info=True)
            await asyncio.Event().wait()
