"""The daemon process: lifecycle, single instance, transports, handshake rules, idle exit."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from actors.link.link_stream import LinkRefusedError, LinkStream, client_handshake, peer_uid
from messages.link import (
    LinkChallenge,
    LinkControl,
    LinkData,
    LinkDecoder,
    LinkHello,
    LinkProof,
    LinkRefused,
    LinkWelcome,
    encode_link,
)
from nativehost.daemon.instance import daemon_status, is_running
from nativehost.daemon.process import start_daemon, stop_daemon
from nativehost.home import socket_path
from nativehost.link import UntrustedDaemon, open_link, query_daemon, tcp_endpoint_path
from tests.helpers.native_peer import RelayPeer, kill_daemon, wait_for


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "browy"
    home.mkdir()
    yield home
    kill_daemon(home)


def test_start_status_and_stop_a_detached_daemon(home: Path) -> None:
    os.environ["BROWY_IDLE_EXIT_SECONDS"] = "30"
    try:
        start_daemon(home)
    finally:
        del os.environ["BROWY_IDLE_EXIT_SECONDS"]
    status = daemon_status(home)
    assert status.running
    assert status.details["links"] == 0
    assert "running" in str(status)
    sock = socket_path(home)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600  # the link is open to its user only
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert stop_daemon(home) is True  # SIGTERM, then it exits and releases its lock
    assert not is_running(home)
    assert not sock.exists()
    assert "not running" in str(daemon_status(home))


def test_a_second_daemon_for_the_same_home_exits_at_once(home: Path) -> None:
    start_daemon(home)
    second = subprocess.run(
        [sys.executable, "-m", "nativehost.daemon.process", "--home", str(home)],
        capture_output=True,
        timeout=20,
        check=False,
    )
    assert second.returncode == 0
    assert is_running(home)  # the first one still serves
    stop_daemon(home)


async def test_an_idle_daemon_exits_after_its_idle_time(home: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nativehost.daemon.process", "--home", str(home), "--idle-exit", "0.5"
    )
    async with asyncio.timeout(20):
        assert await proc.wait() == 0
    assert not is_running(home)


async def test_the_tcp_link_proves_the_token_both_ways_and_serves_the_relay(home: Path) -> None:
    (home / "config.toml").write_text('[daemon]\nlink_transport = "tcp"\n')
    relay = await RelayPeer.start(home, BROWY_LINK_TRANSPORT="tcp")
    try:
        frames = await relay.handshake(1, "sp-1")
        assert frames[0]["type"] == "hello.ack"
        endpoint = tcp_endpoint_path(home)
        assert stat.S_IMODE(endpoint.stat().st_mode) == 0o600
        port = orjson.loads(endpoint.read_bytes())["port"]

        async def caller(hello: LinkHello, token: str | None) -> LinkRefusedError:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            stream = LinkStream(reader, writer)
            try:
                with pytest.raises(LinkRefusedError) as refused:
                    await client_handshake(stream, hello, timeout=5, token=token)
                return refused.value
            finally:
                stream.close()

        # Version 1 sent the token in the hello, to whoever listened: never accepted on TCP.
        v1 = LinkHello(
            min_version=1, max_version=1, role="cli", origin="", pid=1, package_version="x",
            token=orjson.loads(endpoint.read_bytes())["token"],
        )  # fmt: skip
        assert (await caller(v1, None)).code == "PROTOCOL_MISMATCH"
        # Version 2 with a wrong token: the daemon's proof does not match it, so the caller
        # stops before it proves anything.
        v2 = LinkHello(
            min_version=2, max_version=2, role="cli", origin="", pid=1, package_version="x",
            nonce="ab" * 16,
        )  # fmt: skip
        wrong = await caller(v2, "not-the-token")
        assert wrong.code == "ORIGIN_FORBIDDEN" and "prove" in wrong.message
        # A caller that answers the challenge with a bad proof is refused by the daemon.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        stream = LinkStream(reader, writer)
        stream.send(v2)
        await stream.drain()
        challenge = await stream.recv()
        assert isinstance(challenge, LinkChallenge)
        stream.send(LinkProof(proof="00" * 32))
        await stream.drain()
        refused = await stream.recv()
        assert isinstance(refused, LinkRefused) and refused.code == "ORIGIN_FORBIDDEN"
        stream.close()
        # And the real one, as the CLI opens it.
        os.environ["BROWY_LINK_TRANSPORT"] = "tcp"
        try:
            status = await query_daemon(home, "status")
        finally:
            del os.environ["BROWY_LINK_TRANSPORT"]
        assert status["links"] == 1
    finally:
        await relay.kill()
        os.environ["BROWY_LINK_TRANSPORT"] = "tcp"
        try:
            stop_daemon(home)
        finally:
            del os.environ["BROWY_LINK_TRANSPORT"]


async def test_a_stale_tcp_endpoint_held_by_another_listener_gets_only_a_hello(home: Path) -> None:
    # link.json names a port that a listener which is not our daemon now holds.
    received = bytearray()
    done = asyncio.Event()

    async def squatter(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.extend(await reader.read(65536))
        # It answers like a daemon that skips the proof.
        writer.write(encode_link(LinkWelcome(version=2, daemon_version="x", daemon_pid=1)))
        await writer.drain()
        with contextlib.suppress(ConnectionError):
            received.extend(await reader.read(65536))
        writer.close()
        done.set()

    server = await asyncio.start_server(squatter, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    run = home / "run"
    run.mkdir(mode=0o700)
    tcp_endpoint_path(home).write_bytes(orjson.dumps({"port": port, "token": "ours", "pid": 1}))
    os.environ["BROWY_LINK_TRANSPORT"] = "tcp"
    try:
        with pytest.raises(UntrustedDaemon):
            await open_link(home, role="cli")
    finally:
        del os.environ["BROWY_LINK_TRANSPORT"]
    async with asyncio.timeout(5):
        await done.wait()
    server.close()
    frames = LinkDecoder()
    frames.feed(bytes(received))
    events = frames.events()
    assert len(events) == 1 and isinstance(events[0], LinkHello)  # the hello, nothing more
    assert events[0].token is None and b"ours" not in received


async def test_a_stranger_cannot_make_the_daemon_buffer_a_large_frame_before_the_handshake(
    home: Path,
) -> None:
    await asyncio.to_thread(start_daemon, home)
    reader, writer = await asyncio.open_unix_connection(str(socket_path(home)))
    # Announce a 60 MiB frame and start sending it: the daemon refuses at the header.
    writer.write((60 * 1024 * 1024).to_bytes(4, "little") + b"\x00" * 65536)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    async with asyncio.timeout(5):
        rest = await reader.read()  # the daemon closed the link
    assert rest == b""
    writer.close()
    # The daemon still serves.
    assert (await query_daemon(home, "status"))["pid"] > 0


async def test_a_newer_relay_is_refused_clearly_and_the_old_daemon_makes_way(home: Path) -> None:
    await asyncio.to_thread(start_daemon, home)
    reader, writer = await asyncio.open_unix_connection(str(socket_path(home)))
    stream = LinkStream(reader, writer)
    hello = LinkHello(
        min_version=7, max_version=9, role="relay", origin="", pid=1, package_version="9.0"
    )
    with pytest.raises(LinkRefusedError) as refused:
        await client_handshake(stream, hello, timeout=5)
    assert refused.value.code == "PROTOCOL_MISMATCH"
    assert "exit when idle" in refused.value.message
    stream.close()
    await wait_for(lambda: not is_running(home), timeout=15)  # it made way for a newer one


async def test_the_link_answers_a_cli_status_and_reports_the_peer_as_our_user(home: Path) -> None:
    await asyncio.to_thread(start_daemon, home)
    status = await query_daemon(home, "status")
    assert status["pid"] > 0
    stream, welcome = await open_link(home, role="cli")
    assert welcome.version == 2
    assert peer_uid(stream.writer) == os.getuid()
    stream.send(LinkControl(op="status", args={}))
    stream.send(LinkData(b'{"type":"ping","id":3}'))  # as JSON.stringify writes it: the fast path
    stream.send(LinkData(b'{"type": "ping", "id": 4}'))  # the Connection's path
    await stream.drain()
    got: list[object] = []
    async with asyncio.timeout(5):
        while len(got) < 3:
            got.append(await stream.recv())
    assert any(isinstance(g, LinkControl) and g.op == "status" for g in got)
    assert LinkData(b'{"type":"pong","id":3}') in got
    assert LinkData(b'{"type":"pong","id":4}') in got
    stream.close()
    await asyncio.to_thread(stop_daemon, home)


def test_browy_daemon_tree_draws_the_running_daemons_supervision_tree(home: Path) -> None:
    from nativehost.cli.main import main as cli

    env = {"BROWY_HOME": str(home), "HOME": str(home.parent)}
    out = io.StringIO()
    assert cli(["daemon", "tree"], env=env, stdout=out, stderr=io.StringIO()) == 3
    assert "not running" in out.getvalue()
    start_daemon(home)
    out = io.StringIO()
    assert cli(["daemon", "tree"], env=env, stdout=out, stderr=io.StringIO()) == 0
    text = out.getvalue()
    for name in ("browyd", "logger", "journal", "agent", "session-router", "turn-scheduler",
                 "tool-worker", "turns", "links", "listener", "heap"):  # fmt: skip
        assert f" {name} " in f" {text} ".replace("─", " ").replace("\n", " "), name
    assert "rest_for_one" in text and "one_for_one, 5 restarts in 10 s" in text
    out = io.StringIO()
    assert cli(["daemon", "tree", "--json"], env=env, stdout=out, stderr=io.StringIO()) == 0
    tree = json.loads(out.getvalue())
    agent = next(c for c in tree["children"] if c["name"] == "agent")
    actors = {c["name"]: c for c in agent["supervisor"]["children"]}
    assert actors["turn-scheduler"]["kind"] == "actor"
    assert actors["turn-scheduler"]["state"] == "running"
    assert actors["turn-scheduler"]["mailbox_depth"] == 0
    assert actors["turns"]["kind"] == "supervisor"
    logger = next(c for c in tree["children"] if c["name"] == "logger")
    assert logger["kind"] == "thread"


async def test_a_link_opened_to_the_daemon_shows_in_its_tree_as_a_cdp_proxy_and_a_connection(
    home: Path,
) -> None:
    await asyncio.to_thread(start_daemon, home)
    peer = await RelayPeer.start(home)
    try:
        await peer.handshake(1, "sp-1")
        tree = (await query_daemon(home, "tree"))["tree"]
        links = next(c for c in tree["children"] if c["name"] == "links")["supervisor"]
        assert len(links["children"]) == 2  # the relay's, and the one asking
        for child in links["children"]:
            link = child["supervisor"]
            kinds = {
                c["name"].rsplit("-", 1)[0]: (c["kind"], c["restart"]) for c in link["children"]
            }
            assert kinds == {
                "cdp-proxy": ("actor", "permanent"),
                "connection": ("actor", "temporary"),
            }
    finally:
        await peer.close_stdin()
        await peer.wait_exit()


def test_browy_daemon_restart_replaces_the_running_daemon(home: Path) -> None:
    from nativehost.cli.main import main as cli
    from tests.helpers.native_peer import daemon_pid

    env = {"BROWY_HOME": str(home), "HOME": str(home.parent)}
    out = io.StringIO()
    assert cli(["daemon", "restart"], env=env, stdout=out, stderr=io.StringIO()) == 0
    assert "daemon started" in out.getvalue()  # none was running
    first = daemon_pid(home)
    out = io.StringIO()
    assert cli(["daemon", "restart"], env=env, stdout=out, stderr=io.StringIO()) == 0
    assert "daemon restarted" in out.getvalue() and "running" in out.getvalue()
    second = daemon_pid(home)
    assert first is not None and second is not None and second != first
    assert is_running(home)


async def test_the_options_page_restarts_the_host_and_the_relay_starts_the_next_daemon(
    home: Path,
) -> None:
    from tests.helpers.native_peer import daemon_pid

    peer = await RelayPeer.start(home)  # its first connection starts the daemon
    try:
        await peer.handshake(2, "opts-1")
        first = daemon_pid(home)
        assert first is not None
        await peer.send({"type": "daemon.restart"})
        # The daemon exits; the relay reconnects and starts the next one.
        await wait_for(
            lambda: daemon_pid(home) not in (None, first) and is_running(home), timeout=20
        )
        await peer.send({"type": "session.start", "sessionId": "opts-2", "capabilities": []})
        ready, _ = await peer.recv_until("session.ready", session_id="opts-2")
        assert ready["sessionId"] == "opts-2"
    finally:
        await peer.kill()
