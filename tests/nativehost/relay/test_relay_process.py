"""The real relay process, started with pipes as Chrome starts it, against a real daemon."""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from actors.relay.relay_marks import RelayMarks
from nativehost.daemon.instance import is_running
from nativehost.demo.model_server import ScriptedModelServer
from tests.helpers.model_script import step
from tests.helpers.native_peer import (
    OUR_ORIGIN,
    RelayPeer,
    daemon_pid,
    kill_daemon,
    play_browser,
    wait_for,
)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "browy"
    home.mkdir()
    yield home
    kill_daemon(home)


@pytest.fixture
async def peer(home: Path) -> AsyncIterator[RelayPeer]:
    relay = await RelayPeer.start(home)
    yield relay
    await relay.kill()


async def test_a_v1_hello_gets_a_v1_hello_ack(peer: RelayPeer) -> None:
    await peer.send({"type": "hello", "client": "extension", "protocol": 1})
    ack = await peer.recv()
    assert ack["type"] == "hello.ack"
    assert ack["protocol"] == 1
    assert "capabilities" not in ack  # v2-only fields never reach a v1 client


async def test_a_v2_hello_gets_capabilities_and_the_frame_limit(peer: RelayPeer) -> None:
    await peer.send(
        {
            "type": "hello",
            "client": "extension",
            "protocol": 2,
            "installId": "i",
            "capabilities": [],
        }
    )
    ack = await peer.recv()
    assert ack["protocol"] == 2
    assert ack["maxMessageBytes"] == 1_048_576


async def test_session_start_gets_ready_then_the_initial_push(peer: RelayPeer) -> None:
    frames = await peer.handshake(1, "sp-1")
    assert [f["type"] for f in frames] == [
        "hello.ack",
        "session.ready",
        "sdk.ready",
        "auth.status",
        "models.current",
        "models.list",
    ]
    assert frames[2]["ok"] is True


async def test_a_forbidden_origin_gets_one_error_frame_and_the_relay_exits(home: Path) -> None:
    relay = await RelayPeer.start(home, "chrome-extension://aaaabbbbccccddddeeeeffffgggghhhh/")
    error = await relay.recv()
    assert error["type"] == "error"
    assert error["code"] == "ORIGIN_FORBIDDEN"
    assert await relay.wait_exit() != 0
    assert not is_running(home)  # nothing was started for a forbidden caller


async def test_a_malformed_frame_is_reported_in_v2_and_the_next_frame_still_works(
    peer: RelayPeer,
) -> None:
    await peer.handshake(2)
    await peer.send(b'{"type": "session.start", "sessionId": 42}', raw=False)
    error = await peer.recv()
    assert error["type"] == "error"
    assert error["code"] == "INVALID_MESSAGE"
    assert "sessionId" in error["message"]
    await peer.send(b"\xff\xfe not json")
    assert (await peer.recv())["code"] == "INVALID_MESSAGE"
    await peer.send({"type": "ping", "id": 1})
    assert await peer.recv() == {"type": "pong", "id": 1}


async def test_an_oversize_declared_length_ends_the_relay_instead_of_reading_it(
    peer: RelayPeer,
) -> None:
    await peer.handshake(1)
    await peer.send(struct.pack("<I", 64 * 1024 * 1024 + 1), raw=True)
    assert await peer.wait_exit() == 0


async def test_eof_on_stdin_ends_the_relay_promptly(peer: RelayPeer) -> None:
    await peer.handshake(1, "sp-1")
    await peer.close_stdin()
    assert await peer.wait_exit(timeout=3.0) == 0


async def test_a_module_that_prints_after_start_up_cannot_corrupt_the_stream(home: Path) -> None:
    # Every module the relay imports after protecting stdout prints to fd 1 and to sys.stdout.
    noisy = (
        "import sys, os\n"
        "class Noisy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        print('noise from import of', name)\n"
        "        os.write(1, b'raw fd noise ')\n"
        "        return None\n"
        "from nativehost.relay import main as relay\n"
        "real = relay.protect_stdout\n"
        "def protect():\n"
        "    fd = real()\n"
        "    sys.meta_path.insert(0, Noisy())\n"
        "    return fd\n"
        "relay.protect_stdout = protect\n"
        "sys.exit(relay.main(sys.argv))\n"
    )
    relay = await RelayPeer.start(home, argv=[sys.executable, "-c", noisy, OUR_ORIGIN])
    try:
        frames = await relay.handshake(1, "sp-1")
        assert frames[0]["type"] == "hello.ack"
        assert frames[-1]["type"] == "models.list"
    finally:
        await relay.kill()


async def test_two_relays_starting_at_once_produce_exactly_one_daemon(home: Path) -> None:
    relays = await asyncio.gather(RelayPeer.start(home), RelayPeer.start(home))
    try:
        acks = await asyncio.gather(*(r.handshake(1, f"sp-{i}") for i, r in enumerate(relays)))
        assert all(a[0]["type"] == "hello.ack" for a in acks)
        pid = daemon_pid(home)
        assert pid is not None
        # Both relays are linked to the same daemon: it reports two links.
        from nativehost.link import query_daemon

        status = await query_daemon(home, "status")
        assert status["pid"] == pid
        assert status["links"] == 2
    finally:
        for relay in relays:
            await relay.kill()


async def test_the_daemon_killed_mid_session_is_restarted_and_the_panel_keeps_working(
    home: Path, peer: RelayPeer
) -> None:
    await peer.handshake(1, "sp-1")
    old_pid = daemon_pid(home)
    assert old_pid is not None
    os.kill(old_pid, signal.SIGKILL)
    # Until the relay has linked again, a chat.send gets the relay's own definite end; after,
    # the new daemon answers for the same session, which the relay registered again by itself.
    seen_all: list[dict[str, object]] = []
    async with asyncio.timeout(20.0):
        while True:
            await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "hello?"})
            error, seen = await peer.recv_until("chat.error", session_id="sp-1")
            status, more = await peer.recv_until("event.activity", session_id="sp-1")
            assert status["event"] == "status.error"
            seen_all += seen + more
            if "not reachable" not in str(error["message"]):
                break
            await asyncio.sleep(0.1)
    assert daemon_pid(home) not in (None, old_pid)
    assert "not registered" not in str(error["message"])  # the session was restored
    # The replies to the re-sent registrations were swallowed.
    assert not [m for m in seen_all if m.get("type") in ("hello.ack", "session.ready")]


async def test_the_relay_gives_up_and_exits_when_no_daemon_can_start(home: Path) -> None:
    # A config the daemon refuses (it exits at once); the relay's origin check still reads it.
    (home / "config.toml").write_text("[daemon]\nturn_concurrency = 0\n")
    relay = await RelayPeer.start(home, BROWY_RELAY_CONNECT_S="3")
    try:
        # The relay holds the hello while it tries; with no reachable daemon it gives up.
        await relay.send({"type": "hello", "client": "extension", "protocol": 1})
        assert await relay.wait_exit(timeout=20.0) != 0
    finally:
        await relay.kill()


async def test_a_v1_panel_gets_one_end_when_the_daemon_dies_and_then_its_relay(home: Path) -> None:
    # The double fault of protocol.md section 6: the daemon dies mid-turn, the relay ends the
    # turn itself, then the relay dies before it can tell the next daemon. A v1 panel cannot
    # drop a second end by turnId, so the next daemon must not send one.
    script = [step(fault={"kind": "hang"}), step("back again")]
    async with ScriptedModelServer(script) as model:
        (home / "config.toml").write_text(
            f'[model]\nbase_url = "{model.base_url}"\nmodel = "m"\napi_key = "sk-test"\n'
        )
        first = await RelayPeer.start(home)
        try:
            await first.handshake(1, "sp-1")
            await first.send({"type": "chat.send", "sessionId": "sp-1", "text": "go"})
            await play_browser(first, when=lambda: model.request_count >= 1)  # the turn runs
            pid = daemon_pid(home)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            error, _ = await first.recv_until("chat.error", session_id="sp-1")
            assert "not reachable" in str(error["message"])  # the relay's own end
            marks = RelayMarks.for_home(home)
            await wait_for(lambda: any(marks.directory.glob("*.json")))
        finally:
            await first.kill()  # before it links to a daemon again
        second = await RelayPeer.start(home)
        try:
            seen = await second.handshake(1, "sp-1")
            await second.send({"type": "chat.send", "sessionId": "sp-1", "text": "again"})
            done, more = await play_browser(
                second, until=lambda m: m.get("type") in ("chat.done", "chat.error")
            )
        finally:
            await second.kill()
    ends = [m for m in seen + more if m.get("type") == "chat.error"]
    assert ends == []  # was: "This turn was interrupted ..." for the turn already ended
    assert done is not None and done["type"] == "chat.done", done
    assert "back again" in str(done["text"])
    assert not any(marks.directory.glob("*.json"))  # the mark was spent


async def test_the_daemon_rotates_relay_log_and_a_running_relay_follows_it(home: Path) -> None:
    logs = home / "logs"
    logs.mkdir(mode=0o700)
    relay_log = logs / "relay.log"
    relay_log.write_bytes(b"x" * (5 * 1024 * 1024) + b"\n")  # past the 5 MB of a rotation
    peer = await RelayPeer.start(home)  # its first connection attempt starts the daemon
    try:
        await peer.handshake(1, "sp-1")
        # The daemon's Logger rotated the full relay.log (with the relay's first lines) when it
        # started.
        assert (logs / "relay.log.1").stat().st_size > 5 * 1024 * 1024
        await wait_for(relay_log.exists)  # the relay's next line starts the new file
        assert relay_log.stat().st_size < 4096
        # A rotation under a running relay: its next lines go to the new file.
        relay_log.rename(logs / "relay.log.1")
        await peer.close_stdin()
        assert await peer.wait_exit() == 0
    finally:
        await peer.kill()
    assert "stdin closed" in relay_log.read_text()
    assert "stdin closed" not in (logs / "relay.log.1").read_text()
