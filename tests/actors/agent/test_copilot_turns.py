"""Turns with GitHub Copilot as the model, through the daemon's real link, the real
``github-copilot-sdk`` and a scripted stand-in for the CLI (:mod:`tests.helpers.copilot_standin`):
streaming, Browy's tools run by the ToolWorker, cancel, a CLI that dies mid-turn, sign-in."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.helpers.copilot_cli import StandinCli
from tests.helpers.daemon_harness import DaemonHarness, FakeTab


def copilot_harness(home: Path, cli: StandinCli, config: str = "") -> DaemonHarness:
    model = f'[model]\nprovider = "copilot"\nmodel = "gpt-4.1"\ncli_path = "{cli.path}"\n'
    return DaemonHarness(home, [], model_toml=model, config=config)


def of_type(seen: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in seen if m.get("type") == kind]


async def test_a_copilot_turn_streams_runs_browys_tool_and_ends_once(tmp_path: Path) -> None:
    turn = [
        {"text": ["Let me ", "note it."], "usage": [11, 4],
         "tools": [{"name": "note_set", "args": {"key": "k", "value": "v1"}}]},
        {"text": ["Saved", "."], "usage": [20, 2]},
    ]  # fmt: skip
    cli = StandinCli(tmp_path / "cli", turns=[turn])
    async with copilot_harness(tmp_path / "home", cli) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "remember k"})
        end, status, seen = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done", end
        assert status["event"] == "status.idle"
        assert end["text"] == "Let me note it.\n\nSaved."
        assert "".join(m["text"] for m in of_type(seen, "chat.delta")) == "Let me note it.Saved."
        (call,) = of_type(seen, "chat.tool_call")
        (result,) = of_type(seen, "chat.tool_result")
        assert call["tool"] == "note_set" and call["args"] == {"key": "k", "value": "v1"}
        assert result["callId"] == call["callId"] and result["outcome"] == "ok"
        assert [(u["inputTokens"], u["outputTokens"]) for u in of_type(seen, "usage")] == [
            (11, 4), (20, 2)]  # fmt: skip
        # The tool really ran (the note is there), and Copilot got its answer.
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "again"})
        await peer.turn_end("sp-1")
        await peer.send({"type": "chat.history", "id": "sp-1"})
        history, _ = await peer.until("chat.history.result")
    answer = cli.requests("session.tools.handlePendingToolCall")[0]["params"]["result"]
    assert answer["resultType"] == "success"
    roles = [m["role"] for m in history["messages"]]
    assert roles[:3] == ["user", "tool", "assistant"]
    assert history["messages"][1]["name"] == "note_set"
    # One Copilot session per chat, kept across its turns; only Browy's tools offered.
    create = cli.requests("session.create")
    assert len(create) == 1 and create[0]["params"]["sessionId"] == "install-1-sp-1"
    assert "bash" not in create[0]["params"]["availableTools"]
    assert "navigate" not in create[0]["params"]["availableTools"]  # no tab: no browser tools


async def test_cancel_during_a_page_changing_call_is_unknown_and_aborts_copilot(
    tmp_path: Path,
) -> None:
    tab = FakeTab()
    sent: list[str] = []

    def browser(msg: dict[str, Any]) -> Any:
        if msg.get("method") == "Page.navigate":
            sent.append(msg["params"]["url"])
            return None  # the page never answers
        return tab(msg)

    turn = [
        {"text": ["Going."], "tools": [{"name": "navigate", "args": {"url": "https://a.test/"}}]}
    ]
    cli = StandinCli(tmp_path / "cli", turns=[turn])
    config = '[tools]\napproval_mode = "never"\n'
    async with copilot_harness(tmp_path / "home", cli, config) as h:
        peer = await h.peer(browser)
        await peer.hello(2)
        await peer.start("sp-1", tabs=True)
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "go"})
        await peer.until("chat.tool_call", session_id="sp-1")
        async with asyncio.timeout(10):
            while not sent:
                await asyncio.sleep(0.02)
        await peer.send({"type": "chat.cancel", "sessionId": "sp-1"})
        end, status, seen = await peer.turn_end("sp-1")
    assert end["type"] == "chat.done" and status["event"] == "status.idle"
    (result,) = of_type(seen, "chat.tool_result")
    assert result["outcome"] == "unknown"
    assert sent == ["https://a.test/"]  # never sent again
    assert cli.requests("session.abort")


async def test_a_cli_that_dies_mid_turn_ends_it_and_the_next_turn_starts_a_new_one(
    tmp_path: Path,
) -> None:
    turns = [[{"text": ["half"], "tools": [{"name": "note_list"}]}, {"crash": True}],
             [{"text": ["I am back."]}]]  # fmt: skip
    cli = StandinCli(tmp_path / "cli", turns=turns)
    async with copilot_harness(tmp_path / "home", cli) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "one"})
        end, status, _ = await peer.turn_end("sp-1")
        assert end["type"] == "chat.error" and status["event"] == "status.error"
        assert end["code"] == "internal" and "stopped in the middle" in end["message"]
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "two"})
        end, status, _ = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done" and end["text"] == "I am back."
    assert cli.starts == 2
    # The new CLI had lost the chat: its first message carries the earlier words.
    sends = cli.requests("session.send")
    assert "(Earlier in this conversation:)" in sends[-1]["params"]["prompt"]
    assert "User: one" in sends[-1]["params"]["prompt"]


async def test_sign_in_from_the_panel_shows_the_code_then_ready(tmp_path: Path) -> None:
    cli = StandinCli(tmp_path / "cli", authed=False, models=["gpt-4.1", "o4-mini"])
    async with copilot_harness(tmp_path / "home", cli) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        status, _ = await peer.until("auth.status", state="unauth", timeout=15)
        assert "browy login copilot" in status["detail"]
        await peer.send({"type": "auth.signin"})
        banner, _ = await peer.until("auth.status", timeout=15, state="unauth",
                                     detail="To sign in to GitHub Copilot, open "
                                     "https://github.com/login/device and enter the code "
                                     "WDJB-MJHT.")  # fmt: skip
        assert banner
        await peer.until("auth.status", state="ready", timeout=15)
        await peer.send({"type": "models.list"})
        models, _ = await peer.until("models.list")
        assert [m["id"] for m in models["models"]] == ["gpt-4.1", "o4-mini"]
    assert cli.authed
