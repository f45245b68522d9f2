"""The terminal client (``browy run`` / ``chat`` / ``sessions``) against the in-process daemon:
streaming, Ctrl-C -> ``chat.cancel``, a second Ctrl-C, no browser, the stored chats."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from nativehost.cli.main import main
from nativehost.cli.terminal import run_task, sessions_command
from nativehost.cli.terminal_client import TerminalClient, TurnAborted
from tests.helpers.daemon_harness import DaemonHarness, FakeTab

ALLOW = 'allow_local_clients = true\n[tools]\napproval_mode = "never"\n'
NAV_SCRIPT = [
    {
        "text": "Opening it.",
        "tool_calls": [{"name": "navigate", "arguments": {"url": "https://example.test/next"}}],
    },
    {"text": "Opened the next page."},
]
# Streams two words, then hangs until the client (the cancelled turn) goes away.
HANG_SCRIPT = [{"text": "Working on it", "fault": {"kind": "hang", "after_chunks": 3}}]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "h"


async def _browser(h: DaemonHarness, tab: FakeTab | None = None) -> None:
    browser = await h.peer(browser=tab or FakeTab())
    await browser.hello(1)


async def _when(out: io.StringIO, needle: str, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while needle not in out.getvalue():
            await asyncio.sleep(0.01)


async def test_a_turn_streams_text_tool_calls_with_timings_and_the_outcome(home: Path) -> None:
    async with DaemonHarness(home, NAV_SCRIPT, config=ALLOW) as h:
        tab = FakeTab()
        await _browser(h, tab)
        out = io.StringIO()
        client = await TerminalClient.connect(h.home, out)
        try:
            assert client.can_drive_browser
            result = await client.run_turn("open the next page", timeout=20)
        finally:
            await client.close()
    assert result.ok and not result.cancelled
    assert tab.url == "https://example.test/next"
    assert [t.tool for t in result.tools] == ["navigate"]
    assert result.tools[0].outcome == "ok"
    assert result.tools[0].duration_ms is not None
    text = out.getvalue()
    assert "→ navigate(url=https://example.test/next)" in text
    assert "✓ ok" in text and " ms" in text
    assert "Opened the next page." in text
    assert "done in" in text and "1 tool call(s)" in text


async def test_ctrl_c_sends_chat_cancel_and_the_turn_ends_with_the_partial_text(
    home: Path,
) -> None:
    async with DaemonHarness(home, HANG_SCRIPT, config=ALLOW) as h:
        await _browser(h)
        out = io.StringIO()
        client = await TerminalClient.connect(h.home, out)
        try:
            with client.sigint_cancels_turns():
                turn = asyncio.ensure_future(client.run_turn("do something long", timeout=20))
                await _when(out, "Working")
                os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, handled by the loop
                result = await turn
            # The session is still usable afterwards.
            assert client.session_id
        finally:
            await client.close()
    assert result.ok and result.cancelled
    assert result.text.startswith("Working")
    assert "stopping…" in out.getvalue()
    assert "cancelled in" in out.getvalue()
    assert h.model.client_disconnected.is_set()


async def test_a_second_ctrl_c_gives_up_on_the_turn(home: Path) -> None:
    async with DaemonHarness(home, HANG_SCRIPT, config=ALLOW) as h:
        await _browser(h)
        out = io.StringIO()
        client = await TerminalClient.connect(h.home, out)
        # The first interrupt's cancel is swallowed: the turn cannot end on its own.
        sent: list[dict[str, Any]] = []
        real_send = client.send

        async def spy(msg: dict[str, Any]) -> None:
            sent.append(msg)
            if msg["type"] != "chat.cancel":
                await real_send(msg)

        client.send = spy  # type: ignore[method-assign]
        try:
            turn = asyncio.ensure_future(client.run_turn("do something long", timeout=20))
            await _when(out, "Working")
            assert client.interrupt()
            await _when(out, "stopping…")
            assert client.interrupt()
            with pytest.raises(TurnAborted):
                await turn
        finally:
            await client.close()
    assert [m["type"] for m in sent] == ["chat.send", "chat.cancel"]
    assert "aborted" in out.getvalue()


async def test_without_a_browser_the_session_cannot_drive_tabs(home: Path) -> None:
    async with DaemonHarness(home, [{"text": "ok"}], config=ALLOW) as h:
        client = await TerminalClient.connect(h.home, io.StringIO())
        try:
            assert not client.can_drive_browser
            assert not client.interrupt()  # no turn: Ctrl-C has nothing to stop
        finally:
            await client.close()


async def test_sessions_list_show_delete_the_terminal_chats(home: Path) -> None:
    async with DaemonHarness(home, NAV_SCRIPT, config=ALLOW) as h:
        await _browser(h)
        client = await TerminalClient.connect(h.home, io.StringIO(), session_id="cli-test1")
        try:
            assert (await client.run_turn("open the next page", timeout=20)).ok
        finally:
            await client.close()
        out = io.StringIO()
        assert await sessions_command(h.home, "list", None, out, ensure_daemon=False) == 0
        assert "cli-test1" in out.getvalue()
        out = io.StringIO()
        assert await sessions_command(h.home, "show", "cli-test1", out, ensure_daemon=False) == 0
        shown = out.getvalue()
        assert "user: open the next page" in shown
        assert "✓ navigate" in shown
        assert "assistant: " in shown
        out = io.StringIO()
        assert await sessions_command(h.home, "delete", "cli-test1", out, ensure_daemon=False) == 0
        out = io.StringIO()
        await sessions_command(h.home, "list", None, out, ensure_daemon=False)
        assert "cli-test1" not in out.getvalue()


def test_the_new_commands_are_wired(capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("demo", "run", "chat", "repl", "sessions"):
        assert main([name, "--help"]) == 0
    assert main(["model-server", "--help"]) == 0  # the model server's own options
    assert "--script" in capsys.readouterr().out
    assert main(["model-server", "--no-such-option"]) == 2
    err = io.StringIO()
    assert main(["run"], stderr=err) == 2  # TASK is required
    assert "TASK" in err.getvalue()


async def test_browy_run_without_a_browser_gets_only_the_tools_that_need_no_tab(
    home: Path,
) -> None:
    script = [
        {"tool_calls": [{"name": "note_set", "arguments": {"key": "k", "value": "v"}}]},
        {"text": "Noted, without a browser."},
    ]
    async with DaemonHarness(home, script) as h:
        out = io.StringIO()
        code = await run_task(
            "keep a note", user_home=h.home, env={}, out=out, no_browser=True, interactive=False
        )
        first = h.model.requests[0]
    assert code == 0
    text = out.getvalue()
    assert "browser: none — this run gets only the tools that need no tab" in text
    assert "Noted, without a browser." in text
    offered = {t["function"]["name"] for t in first["tools"]}
    assert {"note_set", "list_files", "get_skill", "ask_user"} <= offered
    assert not offered & {"navigate", "inspect_page", "click_index", "screenshot"}
    # The model is told there is no tab, rather than left to guess.
    assert "No browser tab is available" in first["messages"][-1]["content"]
