"""Everything Browy writes under its home is private (files 0600, directories 0700), whatever the
umask of the process that writes it."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from nativehost.config import set_config_value
from nativehost.daemon.process import start_daemon, stop_daemon
from nativehost.demo.model_server import ScriptedModelServer
from tests.helpers.model_script import step, tool_call
from tests.helpers.native_peer import RelayPeer, kill_daemon, play_browser


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The most permissive umask: a file made with open()'s default mode would be 0666."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def modes_under(home: Path) -> dict[str, str]:
    """Every file and directory under *home* (itself included) that is not private."""
    wrong: dict[str, str] = {}
    for path in [home, *home.rglob("*")]:
        st = path.lstat()
        mode = stat.S_IMODE(st.st_mode)
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_ISSOCK(st.st_mode):
            continue  # the socket is checked by the daemon tests; stop_daemon removes it
        if mode != want:
            wrong[str(path.relative_to(home.parent))] = f"{mode:04o}"
    return wrong


async def test_every_file_a_daemon_run_creates_under_its_home_is_private(
    tmp_path: Path, open_umask: None
) -> None:
    home = tmp_path / "browy"  # not there yet: the first write makes it
    script = [
        step(
            tool_calls=[
                tool_call("note_set", {"key": "k", "value": "v"}),
                tool_call("save_file", {"path": "sub/dir/a.txt", "content": "x"}),
            ]
        ),
        step("done"),
    ]
    try:
        async with ScriptedModelServer(script) as model:
            set_config_value(home, "model.base_url", model.base_url)
            set_config_value(home, "model.model", "m")
            set_config_value(home, "model.api_key", "sk-test")
            await asyncio.to_thread(start_daemon, home)
            relay = await RelayPeer.start(home)
            try:
                await relay.handshake(1, "sp-1")
                await relay.send({"type": "chat.send", "sessionId": "sp-1", "text": "go"})
                end, _ = await play_browser(
                    relay, until=lambda m: m.get("type") in ("chat.done", "chat.error")
                )
                assert end is not None and end["type"] == "chat.done", end
            finally:
                await relay.kill()
            assert await asyncio.to_thread(stop_daemon, home)
    finally:
        kill_daemon(home)
    created = {str(p.relative_to(home)) for p in home.rglob("*")}
    for expected in [
        "config.toml",
        "logs/host.log",
        "logs/relay.log",
        "run/browyd.lock",
        "data/notes.json",
        "data/files/sub/dir/a.txt",
    ]:
        assert expected in created, sorted(created)
    assert any(p.endswith(".journal") for p in created), sorted(created)
    wrong = modes_under(home)
    assert not wrong, sorted(wrong.items())
