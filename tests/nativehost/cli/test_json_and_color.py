"""Output for scripts and for terminals: ``run --json`` (JSON lines, then one result object),
``daemon status --json``, ``sessions list|show --json``, ``config show --json``; and no colour
when ``NO_COLOR`` is set, the terminal is dumb, or stdout is not a terminal."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from nativehost.cli.context import wants_color
from nativehost.cli.main import main
from nativehost.daemon.instance import try_lock
from tests.helpers.daemon_harness import DaemonHarness, FakeTab

ALLOW = 'allow_local_clients = true\n[tools]\napproval_mode = "never"\n'
NAV_SCRIPT = [
    {
        "text": "Opening it.",
        "tool_calls": [{"name": "navigate", "arguments": {"url": "https://example.test/next"}}],
    },
    {"text": "Opened the next page."},
]
FAILING_SCRIPT = [{"fault": {"kind": "status", "status": 401, "message": "bad key"}}]


class Terminal(io.StringIO):
    """What a terminal looks like to the code deciding on colours."""

    def isatty(self) -> bool:
        return True


@contextlib.asynccontextmanager
async def daemon_with_browser(
    home: Path, script: Any, config: str = ALLOW
) -> AsyncIterator[DaemonHarness]:
    """The daemon in this loop, a connected fake browser, and its lock held as a real daemon
    holds it (so ``browy`` sees a running daemon and drives the connected browser)."""
    async with DaemonHarness(home, script, config=config) as h:
        browser = await h.peer(browser=FakeTab())
        await browser.hello(1)
        with try_lock(home) as lock:
            assert lock is not None
            yield h


async def browy(
    home: Path, *argv: str, stdout: io.StringIO | None = None, **env: str
) -> tuple[int, str, str]:
    """``browy ARGV`` in a thread (it runs its own event loop), as from a shell."""
    out = stdout if stdout is not None else io.StringIO()
    err = io.StringIO()
    environ = {"BROWY_HOME": str(home), "HOME": str(home.parent), **env}
    code = await asyncio.to_thread(main, list(argv), env=environ, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# -- browy run --json ----------------------------------------------------------------------------


async def test_run_json_writes_only_json_lines_ending_with_one_result(tmp_path: Path) -> None:
    home = tmp_path / "h"
    async with daemon_with_browser(home, NAV_SCRIPT):
        code, out, err = await browy(home, "run", "--json", "open the next page")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "run.started"
    assert lines[0]["browser"].startswith("your connected browser")
    assert lines[0]["sessionId"].startswith("cli-")
    assert "chat.tool_call" in types and "chat.tool_result" in types
    assert types[-2:] == ["chat.done", "result"]
    assert types.count("result") == 1
    result = lines[-1]
    assert result["exitCode"] == 0
    assert result["ok"] is True and result["cancelled"] is False
    assert result["sessionId"] == lines[0]["sessionId"]
    assert result["text"].endswith("Opened the next page.")
    [tool] = result["tools"]
    assert (tool["tool"], tool["outcome"]) == ("navigate", "ok")
    assert tool["args"] == {"url": "https://example.test/next"}
    assert isinstance(tool["durationMs"], int)
    call = next(line for line in lines if line["type"] == "chat.tool_call")
    assert call["callId"] == tool["callId"]
    assert "\x1b[" not in out


async def test_run_json_reports_a_failed_turn_with_exit_code_1(tmp_path: Path) -> None:
    home = tmp_path / "h"
    async with daemon_with_browser(home, FAILING_SCRIPT):
        code, out, _ = await browy(home, "run", "--json", "anything")
    assert code == 1
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[-2]["type"] == "chat.error"
    result = lines[-1]
    assert result["type"] == "result"
    assert result["exitCode"] == 1
    assert result["ok"] is False
    assert result["code"] == lines[-2]["code"]
    assert result["error"]


async def test_run_json_that_runs_out_of_time_cancels_the_turn_and_says_so(
    tmp_path: Path,
) -> None:
    home = tmp_path / "h"
    slow = [{"text": "late", "fault": {"kind": "delay", "first_chunk_s": 30}}]
    async with daemon_with_browser(home, slow):
        code, out, err = await browy(home, "run", "--json", "--timeout", "0.5", "anything")
    assert code == 1, err
    result = json.loads(out.splitlines()[-1])
    assert result["type"] == "result" and result["exitCode"] == 1 and result["ok"] is False
    assert result["code"] == "REQUEST_TIMEOUT"
    assert result["error"] == "gave up after 0.5 s (--timeout): the turn was cancelled"


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
async def test_a_timeout_that_is_not_a_time_is_refused_before_anything_runs(
    tmp_path: Path, value: str
) -> None:
    code, out, err = await browy(tmp_path / "h", "run", "--json", "--timeout", value, "anything")
    assert code == 2 and out == ""
    assert "--timeout: " in err and ("seconds" in err)


async def test_run_json_that_cannot_start_still_ends_with_a_result_object(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-chromium")
    code, out, err = await browy(
        tmp_path / "h", "run", "--json", "--launch", "anything", BROWY_CHROMIUM=missing
    )
    assert code == 2 and err.startswith("browy: error: ")
    result = json.loads(out.splitlines()[-1])
    assert result["type"] == "result" and result["exitCode"] == 2 and result["ok"] is False
    assert result["error"] and result["error"] in err


async def test_run_json_keeps_approval_prompts_off_stdout(tmp_path: Path) -> None:
    home = tmp_path / "h"
    always = 'allow_local_clients = true\n[tools]\napproval_mode = "always"\n'
    async with daemon_with_browser(home, NAV_SCRIPT, always):
        code, out, err = await browy(home, "run", "--json", "--yes", "open the next page")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]  # every line is JSON
    [asked] = [line for line in lines if line["type"] == "approval.request"]
    assert asked["tool"] == "navigate"
    assert "Allow navigate" in err and "a (--yes)" in err
    assert lines[-1]["ok"] is True


async def test_run_without_json_streams_text(tmp_path: Path) -> None:
    home = tmp_path / "h"
    async with daemon_with_browser(home, NAV_SCRIPT):
        code, out, _ = await browy(home, "run", "open the next page")
    assert code == 0
    assert "→ navigate(url=https://example.test/next)" in out
    assert not out.lstrip().startswith("{")


# -- colour ----------------------------------------------------------------------------------------


async def test_a_terminal_gets_colours(tmp_path: Path) -> None:
    home = tmp_path / "h"
    async with daemon_with_browser(home, NAV_SCRIPT):
        code, out, _ = await browy(home, "run", "open the next page", stdout=Terminal())
    assert code == 0
    assert "\x1b[36m→ navigate\x1b[0m" in out


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"NO_COLOR": "yes"}, {"TERM": "dumb"}])
async def test_no_color_or_a_dumb_terminal_gets_no_escape_codes(
    tmp_path: Path, env: dict[str, str]
) -> None:
    home = tmp_path / "h"
    async with daemon_with_browser(home, NAV_SCRIPT):
        code, out, _ = await browy(home, "run", "open the next page", stdout=Terminal(), **env)
    assert code == 0
    assert "→ navigate(url=https://example.test/next)" in out
    assert "\x1b[" not in out


def test_colour_needs_a_terminal_and_no_no_color() -> None:
    assert wants_color(Terminal(), {})
    assert wants_color(Terminal(), {"NO_COLOR": ""})  # empty means unset (no-color.org)
    assert not wants_color(Terminal(), {"NO_COLOR": "0"})
    assert not wants_color(io.StringIO(), {})  # a pipe or a file


def test_the_demo_and_chat_take_colour_from_the_same_rule() -> None:
    from nativehost.cli.context import Context

    assert Context(env={}, stdout=Terminal(), stderr=io.StringIO()).color
    assert not Context(env={"NO_COLOR": "1"}, stdout=Terminal(), stderr=io.StringIO()).color


# -- daemon status, sessions, config show ----------------------------------------------------------


async def test_daemon_status_json_when_running_and_when_not(tmp_path: Path) -> None:
    home = tmp_path / "h"
    async with daemon_with_browser(home, NAV_SCRIPT):
        code, out, _ = await browy(home, "daemon", "status", "--json")
    assert code == 0
    status = json.loads(out)
    assert status["running"] is True
    assert status["socket"].endswith("browyd.sock")
    assert status["details"]["version"] == "test"
    assert status["details"]["links"] == 1
    code, out, _ = await browy(home, "daemon", "status", "--json")
    assert code == 3
    assert json.loads(out) == {
        "running": False,
        "pid": None,
        "socket": status["socket"],
        "details": {},
    }


async def test_sessions_list_and_show_json(tmp_path: Path) -> None:
    home = tmp_path / "h"
    async with daemon_with_browser(home, NAV_SCRIPT):
        code, _, _ = await browy(home, "run", "--session", "cli-json1", "open the next page")
        assert code == 0
        code, out, _ = await browy(home, "sessions", "list", "--json")
        assert code == 0
        [chat] = json.loads(out)
        assert chat["id"] == "cli-json1"
        assert isinstance(chat["modifiedTime"], int)
        code, out, _ = await browy(home, "sessions", "show", "cli-json1", "--json")
        assert code == 0
        rows = json.loads(out)
        assert [r["role"] for r in rows][:1] == ["user"]
        assert any(r["role"] == "tool" and r["name"] == "navigate" for r in rows)
        code, out, _ = await browy(home, "sessions", "show", "cli-nosuch", "--json")
        assert (code, json.loads(out)) == (1, [])


async def test_config_show_json_is_every_section_with_secrets_hidden(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text('[model]\nmodel = "m"\napi_key = "sk-hidden-1234"\n')
    code, out, _ = await browy(home, "config", "show", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"host", "daemon", "model", "tools", "files", "retention", "mcp"}
    assert data["model"]["model"] == "m"
    assert data["model"]["api_key"] == "***"
    assert "sk-hidden" not in out
