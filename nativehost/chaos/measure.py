"""What ``browy chaos`` measures and finds of processes: open descriptors, memory, liveness.

The ``flat`` invariant (:mod:`nativehost.chaos.checks`) compares open file descriptors and memory
at warm-up and at the end: of this process in in-process mode (:func:`_fds`, :func:`_rss`, less
what the harness's own records hold, :func:`deep_size`), of the daemon in process mode
(:func:`_proc_fds`, :func:`_proc_rss`). Process mode also finds its daemons and relays by pid
(:func:`pid_alive`, :func:`_cmdline`, :func:`_home_daemons`), never by name. They read Linux
``/proc``, with a fallback where the standard library has one.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import types
from pathlib import Path

__all__ = ["allocated", "deep_size", "object_graph_size", "pid_alive"]


def _fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def _rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def allocated(size: int) -> int:
    """The bytes an allocation of *size* bytes takes: CPython's small-object allocator hands out
    blocks in 16-byte steps up to 512 bytes; past that, malloc adds its 8-byte header and
    rounds to 16. (Counting ``sys.getsizeof`` alone leaves out about a tenth of what many
    small records cost, and that tenth would be counted as the daemon's growth.)"""
    if size <= 512:
        return (size + 15) & ~15
    return (size + 8 + 15) & ~15


def deep_size(root: object) -> int:
    """Bytes held by *root* and everything it reaches through containers and slotted records
    (each object counted once, as the allocator's block for it: :func:`allocated`; shared
    immortal objects such as None and small ints excluded)."""
    seen: set[int] = set()
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, bool):
            continue
        seen.add(id(obj))
        total += allocated(sys.getsizeof(obj))
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif hasattr(type(obj), "__slots__") and not isinstance(obj, str | bytes | int | float):
            slots: tuple[str, ...] = getattr(type(obj), "__slots__", ())
            stack.extend(getattr(obj, name, None) for name in slots)
    return total


#: What :func:`object_graph_size` does not walk into: code, classes and modules (shared by the
#: whole process), frames (a coroutine's locals are its task's, counted where the task is held),
#: event loops and threads.
_NOT_HELD = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
    asyncio.AbstractEventLoop,
    threading.Thread,
)


def object_graph_size(root: object, *, skip_modules: tuple[str, ...] = ()) -> int:
    """Bytes of every object reachable from *root* (``gc.get_referents``, each counted once as
    the allocator's block), leaving out what :data:`_NOT_HELD` lists and instances of classes
    defined in *skip_modules* (the harness's own objects). What a live daemon holds, with no
    tracing: a direct measure beside its RSS, which also moves with allocator fragmentation."""
    seen: set[int] = {id(root)}
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        total += allocated(sys.getsizeof(obj))
        for child in gc.get_referents(obj):
            if id(child) in seen or isinstance(child, _NOT_HELD):
                continue
            module = type(child).__module__
            if isinstance(module, str) and module.startswith(skip_modules):
                continue
            seen.add(id(child))
            stack.append(child)
    return total


def pid_alive(pid: int) -> bool:
    """True when *pid* runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return state != b"Z"


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _proc_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _proc_rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _home_daemons(home: Path, known: set[int]) -> list[int]:
    """Daemons of *home* that no pid file recorded (e.g. a second one), from /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.isdigit() and int(entry) not in known:
            line = _cmdline(int(entry))
            if (
                "nativehost.daemon.process" in line
                and f"--home {home}" in line
                and pid_alive(int(entry))
            ):
                found.append(int(entry))
    return found


def _harness_fds() -> int:
    return _proc_fds(os.getpid())
