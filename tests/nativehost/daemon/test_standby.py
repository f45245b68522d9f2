"""The standby daemon (nativehost/daemon/standby.py): it serves when the daemon dies, it leaves
with a daemon that exits on purpose, and one standby waits per home."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nativehost.daemon.instance import is_running
from nativehost.daemon.process import stop_daemon
from nativehost.daemon.standby import standby_pid_path
from nativehost.link import DaemonUnavailable, query_daemon
from tests.helpers.native_peer import RelayPeer, daemon_pid, kill_daemon, relay_env, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "browy"
    home.mkdir()
    yield home
    standby = _standby_pid(home)  # first, so that it cannot take over from the one we kill
    if standby is not None:
        _kill(standby)
    kill_daemon(home)


def _standby_pid(home: Path) -> int | None:
    try:
        return int(standby_pid_path(home).read_text().strip())
    except (OSError, ValueError):
        return None


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _linked_with_a_standby(home: Path) -> tuple[RelayPeer, int, int]:
    """A relay linked to a daemon it started, and that daemon's standby, ready."""
    peer = await RelayPeer.start(home, BROWY_IDLE_EXIT_SECONDS="30")
    await peer.handshake(2, "sb-1")
    await wait_for(lambda: _standby_pid(home) is not None, timeout=30)
    daemon, standby = daemon_pid(home), _standby_pid(home)
    assert daemon is not None and standby is not None and daemon != standby
    return peer, daemon, standby


async def test_a_killed_daemon_is_replaced_by_its_standby_and_the_panel_keeps_working(
    home: Path,
) -> None:
    peer, daemon, standby = await _linked_with_a_standby(home)
    try:
        os.kill(daemon, signal.SIGKILL)
        await wait_for(lambda: daemon_pid(home) == standby and is_running(home), timeout=10)
        # It serves, and the relay links to it and re-registers the session by itself.
        async with asyncio.timeout(20):
            while True:
                with contextlib.suppress(DaemonUnavailable):
                    status = await query_daemon(home, "status")
                    if status["links"] >= 1:
                        break
                await asyncio.sleep(0.05)
        assert status["pid"] == standby
        await peer.send({"type": "session.start", "sessionId": "sb-2", "capabilities": []})
        ready, _ = await peer.recv_until("session.ready", session_id="sb-2")
        assert ready["sessionId"] == "sb-2"
    finally:
        await peer.kill()


async def test_a_daemon_that_exits_on_purpose_takes_its_standby_with_it(home: Path) -> None:
    peer, _daemon, standby = await _linked_with_a_standby(home)
    await peer.kill()  # else the relay would start the next daemon itself
    await asyncio.to_thread(stop_daemon, home)
    await wait_for(lambda: not _alive(standby), timeout=10)
    assert not is_running(home)
    assert daemon_pid(home) is None  # nobody took over


async def test_one_standby_waits_per_home(home: Path) -> None:
    peer, _daemon, standby = await _linked_with_a_standby(home)
    try:
        second = await asyncio.create_subprocess_exec(
            *[sys.executable, "-m", "nativehost.daemon.process", "--home", str(home)],
            "--standby",
            env=relay_env(home),
        )
        assert await asyncio.wait_for(second.wait(), 20) == 0  # left at once
        assert _alive(standby)
    finally:
        await peer.kill()
