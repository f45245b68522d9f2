"""The rules of a clean stop (nativehost/cli/stopping.py): the first SIGINT, SIGTERM or SIGHUP
cancels the command and its clean-up runs to the end; later signals do not cut it short; a turn
takes SIGINT first; the exit code is 128 + the signal. (The end-to-end proof with real Chromium
is tests/nativehost/demo/test_stop_signals.py.)"""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

from nativehost.cli import stopping
from nativehost.cli.stopping import finish_in_thread, run_stoppable, shielded


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=str)
def test_a_stop_signal_cancels_the_command_after_which_its_clean_up_runs(
    sig: signal.Signals,
) -> None:
    cleaned: list[str] = []

    async def command() -> int:
        try:
            os.kill(os.getpid(), sig)
            await asyncio.sleep(30)
            return 0
        finally:
            await asyncio.sleep(0.01)  # clean-up that awaits still runs
            cleaned.append("stopped")

    assert run_stoppable(command) == 128 + sig
    assert cleaned == ["stopped"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handlers removed afterwards


def test_a_second_signal_does_not_cut_the_clean_up_short() -> None:
    cleaned: list[str] = []

    async def command() -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(30)
            return 0
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # impatient: Ctrl-C during the clean-up
            os.kill(os.getpid(), signal.SIGHUP)
            await asyncio.sleep(0.1)
            cleaned.append("all of it")

    assert run_stoppable(command) == 143
    assert cleaned == ["all of it"]


def test_a_command_that_ends_by_itself_gives_its_own_exit_code() -> None:
    async def command() -> int:
        return 7

    assert run_stoppable(command) == 7


def test_a_turn_takes_sigint_first_and_the_command_goes_on() -> None:
    taken: list[int] = []

    async def command() -> int:
        stop = stopping.current()
        assert stop is not None
        with stop.sigint(lambda: taken.append(1) is None):
            os.kill(os.getpid(), signal.SIGINT)
            async with asyncio.timeout(5):
                while not taken:
                    await asyncio.sleep(0.01)
        return 0

    assert run_stoppable(command) == 0
    assert taken == [1]


def test_sigint_the_turn_does_not_take_stops_the_command() -> None:
    async def command() -> int:
        stop = stopping.current()
        assert stop is not None
        with stop.sigint(lambda: False):  # no turn running
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(30)
        return 0

    assert run_stoppable(command) == 130


async def test_shielded_work_finishes_though_its_caller_is_cancelled() -> None:
    finished = asyncio.Event()

    async def clean_up() -> None:
        await asyncio.sleep(0.1)
        finished.set()

    task = asyncio.ensure_future(shielded(clean_up()))
    await asyncio.sleep(0.02)
    task.cancel()
    await asyncio.sleep(0.02)
    task.cancel()  # twice
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()


async def test_what_a_thread_made_after_its_caller_was_cancelled_is_stopped() -> None:
    started, release = threading.Event(), threading.Event()
    closed: list[str] = []

    def launch() -> str:
        started.set()
        release.wait(5)  # a slow Chromium start
        return "browser"

    task = asyncio.ensure_future(finish_in_thread(launch, on_abandon=closed.append))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done()  # waits for the launch to finish...
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == ["browser"]  # ...then closes what it made


async def test_finish_in_thread_returns_what_the_thread_made() -> None:
    assert await finish_in_thread(lambda: 41 + 1, on_abandon=print) == 42
