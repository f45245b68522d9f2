"""The Copilot gateway on the real ``github-copilot-sdk``, against a scripted stand-in for the CLI
(:mod:`tests.helpers.copilot_standin`, started by the SDK through its CLI path)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from actors.model.copilot_events import (
    ModelSpoke,
    RunEnded,
    RunEvent,
    RunFailed,
    TextArrived,
    TokensUsed,
    ToolWanted,
    tool_answer,
)
from actors.model.copilot_gateway import CopilotGateway, CopilotRun
from actors.model.types import ModelError, ModelSettings
from tests.helpers.copilot_cli import StandinCli

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "note_set",
            "description": "Keep a note.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {"name": "grep", "description": "Search files.", "parameters": {}},
    },
]


def gateway(cli: StandinCli | Path, model: str = "gpt-4.1") -> CopilotGateway:
    path = cli.path if isinstance(cli, StandinCli) else cli
    return CopilotGateway(
        ModelSettings(
            provider="copilot",
            base_url="",
            api_key=None,
            model=model,
            cli_path=str(path),
            stream_idle_timeout=20.0,
        )
    )


async def events_until_end(run: CopilotRun, answer: str = "noted") -> list[RunEvent]:
    seen: list[RunEvent] = []
    async with asyncio.timeout(20):
        while True:
            event = await run.next()
            seen.append(event)
            if isinstance(event, ToolWanted):
                event.reply.set_result(tool_answer(True, answer))
            if isinstance(event, RunEnded | RunFailed):
                return seen


async def test_a_signed_in_cli_is_ready_and_lists_its_models(tmp_path: Path) -> None:
    cli = StandinCli(tmp_path / "cli", models=["gpt-4.1", "claude-sonnet-4.5"])
    gw = gateway(cli)
    try:
        assert (await gw.check_auth()).state == "ready"
        models = await gw.list_models()
        assert [(m.id, m.name, m.vendor) for m in models] == [
            ("gpt-4.1", "GPT-4.1", "GitHub Copilot"),
            ("claude-sonnet-4.5", "CLAUDE-SONNET-4.5", "GitHub Copilot"),
        ]
    finally:
        await gw.aclose()


async def test_a_cli_nobody_signed_in_to_says_how_to_sign_in(tmp_path: Path) -> None:
    gw = gateway(StandinCli(tmp_path / "cli", authed=False))
    try:
        auth = await gw.check_auth()
        assert auth.state == "unauth"
        assert auth.detail is not None and "browy login copilot" in auth.detail
        with pytest.raises(ModelError) as caught:
            await gw.list_models()
        assert caught.value.code.value == "AUTH"
    finally:
        await gw.aclose()


async def test_no_cli_at_all_says_how_to_install_it(tmp_path: Path) -> None:
    gw = gateway(tmp_path / "nowhere" / "copilot")
    auth = await gw.check_auth()
    assert auth.state == "unauth"
    assert auth.detail is not None and "npm install -g @github/copilot" in auth.detail
    await gw.aclose()


async def test_a_streamed_turn_calls_browys_tools_and_gets_their_answers(tmp_path: Path) -> None:
    script = [
        {
            "text": ["Let me ", "note it."],
            "tools": [{"name": "note_set", "args": {"key": "k"}}],
            "usage": [11, 4],
        },
        {"text": ["Done", "."], "usage": [20, 2]},
    ]
    cli = StandinCli(tmp_path / "cli", turns=[script])
    gw = gateway(cli)
    try:
        run = await gw.open_run("sp-1", TOOLS, "You are Browy.")
        assert run.fresh
        await run.send("remember k")
        seen = await events_until_end(run, answer="note k kept")
        run.close()
    finally:
        await gw.aclose()
    texts = [e.text for e in seen if isinstance(e, TextArrived)]
    assert texts == ["Let me ", "note it.", "Done", "."]
    spoke = [e for e in seen if isinstance(e, ModelSpoke)]
    assert [s.text for s in spoke] == ["Let me note it.", "Done."]
    assert [(c.name, c.arguments) for c in spoke[0].calls] == [("note_set", {"key": "k"})]
    wanted = [e for e in seen if isinstance(e, ToolWanted)]
    assert [w.call.id for w in wanted] == [spoke[0].calls[0].id]
    assert [(u.input_tokens, u.output_tokens) for u in seen if isinstance(u, TokensUsed)] == [
        (11, 4),
        (20, 2),
    ]
    assert seen[-1] == RunEnded(aborted=False)
    # What the CLI was told: Browy's tools only, its own system prompt, no permission prompts.
    create = cli.requests("session.create")[0]["params"]
    assert create["sessionId"] == "sp-1"
    assert create["availableTools"] == ["grep", "note_set"]
    assert create["systemMessage"] == {"mode": "replace", "content": "You are Browy."}
    assert create["model"] == "gpt-4.1"
    defs = {t["name"]: t for t in create["tools"]}
    assert defs["note_set"]["skipPermission"] is True
    assert defs["grep"]["overridesBuiltInTool"] is True
    assert "overridesBuiltInTool" not in defs["note_set"]
    answer = cli.requests("session.tools.handlePendingToolCall")[0]["params"]
    assert answer["result"]["textResultForLlm"] == "note k kept"
    assert answer["result"]["resultType"] == "success"


async def test_the_next_turn_of_a_chat_reuses_its_session(tmp_path: Path) -> None:
    cli = StandinCli(tmp_path / "cli", turns=[[{"text": ["one"]}], [{"text": ["two"]}]])
    gw = gateway(cli)
    try:
        for _ in range(2):
            run = await gw.open_run("sp-1", TOOLS, "s")
            await run.send("hi")
            await events_until_end(run)
            run.close()
        # Other tools offered: the same session, resumed with them.
        run = await gw.open_run("sp-1", TOOLS[:1], "s")
        assert not run.fresh
        run.close()
    finally:
        await gw.aclose()
    assert len(cli.requests("session.create")) == 1
    assert cli.requests("session.resume")[-1]["params"]["availableTools"] == ["note_set"]
    assert cli.starts == 1


async def test_abort_stops_a_turn_waiting_on_the_model(tmp_path: Path) -> None:
    cli = StandinCli(tmp_path / "cli", turns=[[{"hang": True}]])
    gw = gateway(cli)
    try:
        run = await gw.open_run("sp-1", TOOLS, "s")
        await run.send("hi")
        await asyncio.sleep(0.2)
        await run.abort()
        seen = await events_until_end(run)
        run.close()
    finally:
        await gw.aclose()
    assert seen[-1] == RunEnded(aborted=True)
    assert cli.requests("session.abort")


async def test_a_cli_that_crashes_mid_turn_fails_the_run_and_the_next_starts_anew(
    tmp_path: Path,
) -> None:
    cli = StandinCli(
        tmp_path / "cli",
        turns=[
            [{"text": ["par"], "tools": [{"name": "note_set"}]}, {"crash": True}],
            [{"text": ["back again"]}],
        ],
    )
    gw = gateway(cli)
    try:
        run = await gw.open_run("sp-1", TOOLS, "s")
        await run.send("hi")
        seen = await events_until_end(run)
        run.close()
        assert isinstance(seen[-1], RunFailed)
        assert "stopped in the middle" in seen[-1].error.message
        run = await gw.open_run("sp-1", TOOLS, "s")
        assert run.fresh  # the new CLI did not know the chat: a new session
        await run.send("again")
        seen = await events_until_end(run)
        run.close()
    finally:
        await gw.aclose()
    assert seen[-1] == RunEnded(aborted=False)
    assert [e.text for e in seen if isinstance(e, ModelSpoke)] == ["back again"]
    assert cli.starts == 2
    assert gw.starts == 2


async def test_a_session_error_about_sign_in_is_an_auth_failure(tmp_path: Path) -> None:
    message = "Execution failed: InvalidArg, No GitHub OAuth token or Copilot HMAC key provided"
    cli = StandinCli(tmp_path / "cli", turns=[[{"error": message}]])
    gw = gateway(cli)
    try:
        run = await gw.open_run("sp-1", TOOLS, "s")
        await run.send("hi")
        seen = await events_until_end(run)
        run.close()
    finally:
        await gw.aclose()
    failed = next(e for e in seen if isinstance(e, RunFailed))
    assert failed.error.code.value == "AUTH"
    assert "browy login copilot" in failed.error.message
