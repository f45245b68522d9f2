"""Who is on the other end of the link: the relay and the CLI refuse a daemon they cannot trust.

Reproduced before the fix: with ``BROWY_HOME`` long enough that the socket falls back to
``<runtime dir>/browy-<uid>/<hash>.sock``, another local user created that directory and a
listening socket first, and received the relay's hello (and could send it ``cdp.send``s). The
real attack needs a second uid (root can run a listener as ``nobody``); the unit tests fake the
``lstat`` and the peer uid so they run everywhere.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from nativehost import link as link_module
from nativehost.home import private_dir_problem, socket_path
from nativehost.link import UntrustedDaemon, open_link
from tests.helpers.native_peer import RelayPeer, kill_daemon


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "browy"
    home.mkdir()
    yield home
    kill_daemon(home)


# --- unit: the directory and the peer -----------------------------------------------------------


def test_a_private_directory_of_ours_is_trusted(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    assert private_dir_problem(d) is None


def test_a_directory_others_can_reach_or_a_symlink_is_not(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o755)
    assert "mode 0755" in (private_dir_problem(open_dir) or "")
    (tmp_path / "link").symlink_to(open_dir)
    assert "symlink" in (private_dir_problem(tmp_path / "link") or "")


def test_a_directory_of_another_user_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(d).st_uid + 1)  # a faked owner
    assert "belongs to uid" in (private_dir_problem(d) or "")


async def test_the_cli_refuses_a_socket_directory_it_cannot_trust_without_connecting(
    home: Path,
) -> None:
    run = home / "run"
    run.mkdir()
    run.chmod(0o755)  # others could have swapped the socket
    connected: list[str] = []
    server = await asyncio.start_unix_server(
        lambda r, w: connected.append("yes"), str(socket_path(home))
    )
    with pytest.raises(UntrustedDaemon) as refused:
        await open_link(home, role="cli")
    assert "mode 0755" in refused.value.message
    await asyncio.sleep(0.05)
    assert connected == []  # refused before connecting: no byte sent
    server.close()


async def test_the_cli_refuses_a_listener_that_runs_as_another_user(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = home / "run"
    run.mkdir(mode=0o700)
    received = bytearray()

    async def listener(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.extend(await reader.read(4096))
        writer.close()

    server = await asyncio.start_unix_server(listener, str(socket_path(home)))
    monkeypatch.setattr(link_module, "peer_uid", lambda _writer: 4242)  # a faked peer
    with pytest.raises(UntrustedDaemon) as refused:
        await open_link(home, role="cli")
    assert "uid 4242" in refused.value.message
    await asyncio.sleep(0.05)
    assert bytes(received) == b""  # not even the hello
    server.close()


# --- the real attack: a planted socket of another uid ------------------------------------------

#: A Python that another user may run (the test's own may sit under root's home).
SYSTEM_PYTHON = "/usr/bin/python3"
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs root (as nobody)"
)

PLANTED = textwrap.dedent(
    """
    import os, socket, sys, time
    path, report = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.dirname(path), mode=0o700)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(8)
    srv.settimeout(0.2)
    got = 0
    end = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < end:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        conn.settimeout(0.5)
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                got += len(data)
        except OSError:
            pass
        conn.close()
    open(report, "w").write(str(got))
    """
)


@needs_root
async def test_a_socket_planted_by_another_user_gets_no_byte_from_the_relay_or_the_cli(
    tmp_path: Path,
) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="browy-rt-", dir="/tmp"))
    try:
        os.chmod(runtime, 0o1777)  # like /tmp: anyone may create in it
        home = tmp_path / ("h" * 120)  # long: the socket falls back to the runtime dir
        home.mkdir()
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        try:
            sock = socket_path(home)
        finally:
            del os.environ["XDG_RUNTIME_DIR"]
        assert sock.parent.parent == runtime
        report = runtime / "report"
        planted = subprocess.Popen(  # noqa: ASYNC220 - waited for off the loop below
            [SYSTEM_PYTHON, "-c", PLANTED, str(sock), str(report), "6"],
            user="nobody",
            group="nogroup",
            env={"PATH": env["PATH"]},
            cwd="/",
        )
        for _ in range(100):
            if sock.exists():
                break
            await asyncio.sleep(0.05)
        assert sock.exists()
        # The relay Chrome would start: it must not talk to the planted "daemon".
        relay = await RelayPeer.start(home, XDG_RUNTIME_DIR=str(runtime), BROWY_RELAY_CONNECT_S="2")
        await relay.send({"type": "hello", "client": "extension", "protocol": 1})
        code = await relay.wait_exit(timeout=20)
        assert code != 0  # it gave up rather than serve the extension through a stranger
        log = (home / "logs" / "relay.log").read_text()
        assert "refusing the link" in log and "belongs to uid 65534" in log
        # The CLI likewise.
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        try:
            with pytest.raises(UntrustedDaemon):
                await open_link(home, role="cli")
            from nativehost.setup.doctor import _check_run_dir

            checks = {c.name: c for c in _check_run_dir(home)}
        finally:
            del os.environ["XDG_RUNTIME_DIR"]
        assert not checks["socket directory"].ok
        assert "belongs to uid 65534" in checks["socket directory"].detail
        assert "planted" in checks["socket directory"].fix
        assert not checks["daemon socket"].ok
        assert await asyncio.to_thread(planted.wait, 15) == 0
        assert report.read_text() == "0"  # not one byte reached the planted listener
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
