"""Stopping cleanly whatever the signal: ``browy demo``, ``run`` and ``chat``.

These commands start things that outlive a killed Python process: a Chromium in its own process
group (so a Ctrl-C in the terminal does not reach it), the daemon that its relay starts (detached,
in its own session), servers. What they started is stopped by their ``finally`` blocks — so a stop
must arrive as a cancellation, never as the default action of a signal, which ends the process
on the spot.

:func:`run_stoppable` runs a command's coroutine like ``asyncio.run`` with :class:`StopSignals`
installed: the first SIGINT, SIGTERM or SIGHUP cancels the coroutine (its clean-up runs), later
ones are ignored so the clean-up finishes, and the exit code is then 128 + the signal's number
(130, 143, 129). A turn in progress may take SIGINT first (:meth:`StopSignals.sigint`): Ctrl-C
cancels the turn, not the command. Clean-up that must finish even if a signal arrives while it
runs goes through :func:`shielded`; a blocking start in a thread (launching Chromium) through
:func:`finish_in_thread`, which stops what the thread made if the caller was cancelled meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = [
    "STOP_SIGNALS",
    "StopSignals",
    "current",
    "finish_in_thread",
    "run_stoppable",
    "shielded",
]

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_ACTIVE: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, StopSignals] = (
    weakref.WeakKeyDictionary()
)


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP on *loop* cancel *task* once; :attr:`signum` says which came."""

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self._loop = loop
        self._task = task
        self._sigint: list[Callable[[], bool]] = []
        self._installed: list[signal.Signals] = []
        self.signum: int | None = None

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self._loop.add_signal_handler(sig, self._on_signal, sig)
                self._installed.append(sig)
        _ACTIVE[self._loop] = self

    def uninstall(self) -> None:
        for sig in self._installed:
            self._loop.remove_signal_handler(sig)
        self._installed.clear()
        if _ACTIVE.get(self._loop) is self:
            del _ACTIVE[self._loop]

    def _on_signal(self, sig: signal.Signals) -> None:
        if sig == signal.SIGINT and self._sigint and self._sigint[-1]():
            return  # a turn took it
        if self.signum is None:
            self.signum = int(sig)
            self._task.cancel()
        # Later signals: the clean-up that the first one started must be left to finish.

    @contextlib.contextmanager
    def sigint(self, handler: Callable[[], bool]) -> Iterator[None]:
        """While inside, SIGINT first calls *handler*; True means it was handled there."""
        self._sigint.append(handler)
        try:
            yield
        finally:
            self._sigint.remove(handler)


def current() -> StopSignals | None:
    """The :class:`StopSignals` of the running loop, if :func:`run_stoppable` installed one."""
    try:
        return _ACTIVE.get(asyncio.get_running_loop())
    except RuntimeError:
        return None


def run_stoppable(main: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """``asyncio.run(main())`` with :class:`StopSignals`: *main*'s exit code, or 128 + the
    number of the signal that stopped it (after its clean-up ran)."""

    async def runner() -> int:
        task = asyncio.current_task()
        assert task is not None
        stop = StopSignals(asyncio.get_running_loop(), task)
        stop.install()
        try:
            return await main()
        except asyncio.CancelledError:
            if stop.signum is None:
                raise
            return 128 + stop.signum
        finally:
            stop.uninstall()

    return asyncio.run(runner())


async def shielded(aw: Awaitable[T]) -> T:
    """Await *aw* to its end even if the caller is cancelled meanwhile, then let the
    cancellation go on: clean-up stopped half-way would leave processes behind."""
    task = asyncio.ensure_future(aw)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError()
    return result


async def finish_in_thread(fn: Callable[[], T], *, on_abandon: Callable[[T], object]) -> T:
    """``fn()`` in a thread. A thread cannot be cancelled: if the caller is, *fn* is let finish
    and what it made is handed to *on_abandon* (e.g. the Chromium it launched, closed) before
    the cancellation goes on."""
    task = asyncio.ensure_future(asyncio.to_thread(fn))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:

        async def abandon() -> None:
            with contextlib.suppress(Exception):
                made = await task
                await asyncio.to_thread(on_abandon, made)

        await shielded(abandon())
        raise
