"""The scripted OpenAI-compatible server: its wire format, its step rules, and its command line."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from nativehost.demo.model_script import ScriptError, load_script
from nativehost.demo.model_server import ScriptedModelServer
from tests.helpers.model_script import step, tool_call

REPO = Path(__file__).resolve().parents[3]


@asynccontextmanager
async def running(script: Any) -> AsyncIterator[ScriptedModelServer]:
    server = ScriptedModelServer(script)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/chat/completions", json=body) as response,
    ):
        return response.status, await response.read()


async def get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.json()


def chat(text: str, *, stream: bool = True, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": text}]}
    if stream:
        body["stream"] = True
    return body | more


def sse_events(raw: bytes) -> list[str]:
    blocks = raw.decode().split("\n\n")
    assert blocks[-1] == ""
    assert all(b.startswith("data: ") for b in blocks[:-1])
    return [b.removeprefix("data: ") for b in blocks[:-1]]


async def test_a_stream_is_sse_data_events_ending_in_done_as_openai_sends_it() -> None:
    async with running([step(["Hi", " there"])]) as server:
        status, raw = await post(server.base_url, chat("x", stream_options={"include_usage": True}))
    assert status == 200
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["object"] == "chat.completion.chunk"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:3]] == ["Hi", " there"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == []
    assert set(chunks[-1]["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert all(c["usage"] is None for c in chunks[:-1])


async def test_without_include_usage_no_usage_chunk_is_sent() -> None:
    async with running([step("Hi")]) as server:
        _, raw = await post(server.base_url, chat("x"))
    chunks = [json.loads(e) for e in sse_events(raw)[:-1]]
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_tool_calls_are_streamed_as_a_head_then_argument_fragments() -> None:
    call = tool_call("navigate", {"url": "https://example.com/a/long/path"}, id="call_9")
    async with running([step(tool_calls=[call])]) as server:
        _, raw = await post(server.base_url, chat("x"))
    deltas = [json.loads(e)["choices"][0]["delta"] for e in sse_events(raw)[:-1]]
    pieces = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    head, *fragments = pieces
    assert head == {
        "index": 0,
        "id": "call_9",
        "type": "function",
        "function": {"name": "navigate", "arguments": ""},
    }
    assert len(fragments) > 2
    assert all(set(f) == {"index", "function"} for f in fragments)
    joined = "".join(f["function"]["arguments"] for f in fragments)
    assert json.loads(joined) == {"url": "https://example.com/a/long/path"}


async def test_a_non_streaming_answer_is_one_chat_completion_the_sdk_parses() -> None:
    call = tool_call("click_index", {"index": 2})
    async with (
        running([step("Clicking.", tool_calls=[call])]) as server,
        openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client,
    ):
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}]
        )
    message = completion.choices[0].message
    assert message.content == "Clicking."
    assert message.tool_calls is not None
    assert message.tool_calls[0].type == "function"
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage is not None


async def test_an_exhausted_script_answers_500_saying_so() -> None:
    async with running([step("one")]) as server:
        assert (await post(server.base_url, chat("a")))[0] == 200
        status, raw = await post(server.base_url, chat("b"))
    assert status == 500
    assert "script exhausted" in json.loads(raw)["error"]["message"]


async def test_a_status_fault_carries_retry_after_and_an_openai_error_body() -> None:
    fault = {"kind": "status", "status": 503, "retry_after": 2, "message": "overloaded"}
    async with (
        running([step(fault=fault)]) as server,
        aiohttp.ClientSession() as session,
        session.post(server.base_url + "/chat/completions", json=chat("x")) as resp,
    ):
        assert resp.status == 503
        assert resp.headers["Retry-After"] == "2"
        body = await resp.json()
    assert body["error"]["message"] == "overloaded"


async def test_concurrent_sessions_are_answered_from_their_own_steps() -> None:
    script = [
        step("A1", session="[session-A]"),
        step("B1", session="[session-B]"),
        step("A2", session="[session-A]"),
        step("no marker"),
    ]

    def body(marker: str, text: str) -> dict[str, Any]:
        system = {"role": "system", "content": f"You are helpful. {marker}"}
        return {"model": "m", "messages": [system, {"role": "user", "content": text}]}

    async with running(script) as server:
        answers = await asyncio.gather(
            post(server.base_url, body("[session-B]", "hi")),
            post(server.base_url, body("[session-A]", "hi")),
            post(server.base_url, body("", "hi")),
        )
        _, again = await post(server.base_url, body("[session-A]", "more"))
    texts = [json.loads(raw)["choices"][0]["message"]["content"] for _, raw in answers]
    assert texts == ["B1", "A1", "no marker"]
    assert json.loads(again)["choices"][0]["message"]["content"] == "A2"


async def test_match_picks_a_step_by_user_text_or_by_a_tool_result() -> None:
    script = [
        step("after the tool", match={"tool_result": True}),
        step("about weather", match={"user_contains": "weather"}),
        step("anything else"),
    ]
    tool_turn = [
        {"role": "user", "content": "click"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]
    async with running(script) as server:
        _, first = await post(server.base_url, chat("hello", stream=False))
        _, second = await post(server.base_url, chat("the weather?", stream=False))
        _, third = await post(server.base_url, {"model": "m", "messages": tool_turn})
    contents = [json.loads(r)["choices"][0]["message"]["content"] for r in (first, second, third)]
    assert contents == ["anything else", "about weather", "after the tool"]


async def test_repeat_serves_a_step_several_times() -> None:
    async with running([step("again", repeat=2)]) as server:
        statuses = [(await post(server.base_url, chat("x")))[0] for _ in range(3)]
    assert statuses == [200, 200, 500]


async def test_extend_adds_steps_to_a_running_server_without_keeping_bodies() -> None:
    server = ScriptedModelServer({"steps": [step("first")]}, keep_bodies=False)
    await server.start()
    try:
        assert (await post(server.base_url, chat("a")))[0] == 200
        assert (await post(server.base_url, chat("b")))[0] == 500  # exhausted until extended
        server.extend(
            [step("second", session="[s-1]"), step(fault={"kind": "status", "status": 503})]
        )
        marked = {"model": "m", "messages": [{"role": "user", "content": "[s-1] go"}]}
        _, raw = await post(server.base_url, {**marked, "stream": False})
        status, _ = await post(server.base_url, chat("c"))
        with pytest.raises(ScriptError, match=r"extend\[0\]"):
            server.extend([{"txt": "typo"}])
    finally:
        await server.stop()
    assert json.loads(raw)["choices"][0]["message"]["content"] == "second"
    assert status == 503
    assert server.request_count == 4 and server.requests == [] and server.request_times == []
    assert [s.faults[0].status for _, s in server.served_faults] == [503]


def test_drop_steps_forgets_only_the_untaken_steps_of_one_turn_of_one_session() -> None:
    # A long run scripts each turn as it starts; a turn that ended early leaves its other
    # steps behind, which are dropped rather than kept (and scanned) for the rest of the run.
    server = ScriptedModelServer({"steps": []}, keep_bodies=False)
    turn = lambda s, n: [  # noqa: E731
        {"session": s, "match": {"user_contains": n, "tool_result": r}, "text": f"{s}{n}{r}"}
        for r in (False, True)
    ]
    server.extend([*turn("<a>", "[1]"), *turn("<a>", "[2]"), *turn("<b>", "[1]")])
    assert len(server.pending_steps()) == 6
    assert server.drop_steps("<a>", "[1]") == 2
    assert server.drop_steps("<a>", "[1]") == 0
    left = sorted("".join(s.text) for s in server.pending_steps())
    assert left == ["<a>[2]False", "<a>[2]True", "<b>[1]False", "<b>[1]True"]


async def test_echo_mode_answers_with_the_users_text() -> None:
    async with running(None) as server:
        _, raw = await post(server.base_url, chat("echo me please", stream=False))
        _, with_context = await post(
            server.base_url, chat("and me\n\n[No browser tab is available]", stream=False)
        )
        models = await get_json(server.base_url + "/models")
    assert json.loads(raw)["choices"][0]["message"]["content"] == "echo me please"
    # The context block the host adds after the user's words is not echoed.
    assert json.loads(with_context)["choices"][0]["message"]["content"] == "and me"
    assert [m["id"] for m in models["data"]] == ["browy-echo"]


async def test_a_wrong_bearer_token_gets_401_when_the_script_names_a_key() -> None:
    script = {"api_key": "sk-right", "steps": [step("x")]}
    async with (
        running(script) as server,
        openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-bad", max_retries=0) as client,
    ):
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()


def test_load_script_names_the_bad_step_and_key() -> None:
    with pytest.raises(ScriptError, match=r"steps\[1\]: unknown keys \['txt'\]"):
        load_script([step("ok"), {"txt": "typo"}])
    with pytest.raises(ScriptError, match=r"steps\[0\]\.fault"):
        load_script([{"fault": {"kind": "explode"}}])


def test_load_script_reads_a_json_file_and_splits_a_string_into_words(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"models": ["x"], "steps": [{"text": "one two  three"}]}))
    script = load_script(path)
    assert script.models == ("x",)
    assert script.steps[0].text == ("one ", "two  ", "three")


async def test_the_command_prints_its_url_and_serves_models_until_sigterm(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"models": ["scripted-1"], "steps": []}))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "nativehost.demo.model_server",
        "--script",
        str(path),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 10)
        url = line.decode().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/v1")
        models = await get_json(url + "/models")
        assert [m["id"] for m in models["data"]] == ["scripted-1"]
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
