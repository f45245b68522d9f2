"""AnthropicGateway against the real ScriptedModelServer (/v1/messages), through the real
``anthropic`` client; and the server's Anthropic wire format."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, cast

import aiohttp
import anthropic
import pytest

from actors.model.anthropic_gateway import AnthropicGateway
from actors.model.anthropic_request import convert_messages, convert_tools
from actors.model.anthropic_stream import CONTENT_KEY
from actors.model.openai_gateway import ModelGateway
from actors.model.providers import make_gateway
from actors.model.types import ModelError, Usage
from messages.errors import ErrorCode
from nativehost.demo.model_server import ScriptedModelServer
from tests.helpers.model_script import disconnect, fast_settings, hang, status, step, tool_call

USER: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
THINKING = {"text": "The user wants the settings page.", "signature": "c2lnbmF0dXJl=="}


class Collector:
    """An on_text sink that records pieces and signals the first one."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.first = asyncio.Event()

    async def __call__(self, piece: str) -> None:
        self.pieces.append(piece)
        self.first.set()


@asynccontextmanager
async def anthropic_and_server(
    script: list[dict[str, Any]] | dict[str, Any] | None, **overrides: Any
) -> AsyncIterator[tuple[AnthropicGateway, ScriptedModelServer]]:
    server = ScriptedModelServer(script)
    url = await server.start()  # ends in /v1: the gateway must drop it for the SDK
    gateway = AnthropicGateway(fast_settings(url, provider="anthropic", **overrides))
    try:
        yield gateway, server
    finally:
        await gateway.aclose()
        await server.stop()


def _tool_schema(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "a tool",
            "parameters": {"type": "object", "properties": {"index": {"type": "integer"}}},
        },
    }


# -- streaming ------------------------------------------------------------------------------


async def test_streamed_text_arrives_in_order_and_the_reply_is_in_openai_format() -> None:
    usage = {"input_tokens": 42, "output_tokens": 7}
    async with anthropic_and_server([step(["Hel", "lo, ", "wor", "ld"], usage=usage)]) as (
        gateway,
        server,
    ):
        sink = Collector()
        reply = await gateway.stream_turn(USER, [], on_text=sink)
    assert sink.pieces == ["Hel", "lo, ", "wor", "ld"]
    assert reply.text == "Hello, world"
    assert reply.finish_reason == "stop"
    assert reply.tool_calls == []
    assert reply.usage == Usage(input_tokens=42, output_tokens=7, total_tokens=49)
    assert reply.assistant_message == {"role": "assistant", "content": "Hello, world"}
    sent = server.requests[0]
    assert sent["stream"] is True
    assert sent["max_tokens"] == 4096
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


async def test_a_tool_call_streamed_in_fragments_reassembles_with_its_id_and_parsed_input() -> None:
    call = tool_call("click_index", {"index": 12, "reason": "open the settings page"}, id="toolu_A")
    async with anthropic_and_server([step("Let me look.", tool_calls=[call])]) as (
        gateway,
        server,
    ):
        reply = await gateway.stream_turn(USER, [_tool_schema("click_index")], on_text=Collector())
    assert reply.finish_reason == "tool_calls"
    (made,) = reply.tool_calls
    assert (made.id, made.name) == ("toolu_A", "click_index")
    assert made.arguments == {"index": 12, "reason": "open the settings page"}
    assert made.arguments_error is None
    assert reply.assistant_message == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "toolu_A",
                "type": "function",
                "function": {
                    "name": "click_index",
                    "arguments": '{"index":12,"reason":"open the settings page"}',
                },
            }
        ],
    }
    assert server.requests[0]["tools"] == [
        {
            "name": "click_index",
            "description": "a tool",
            "input_schema": {"type": "object", "properties": {"index": {"type": "integer"}}},
        }
    ]


async def test_malformed_tool_input_is_kept_raw_and_reported() -> None:
    async with anthropic_and_server([step(tool_calls=[tool_call("scroll", '{"dy": 3,')])]) as (
        gateway,
        _,
    ):
        reply = await gateway.stream_turn(USER, [], on_text=Collector())
    (bad,) = reply.tool_calls
    assert bad.arguments is None
    assert bad.arguments_json == '{"dy": 3,'
    assert bad.arguments_error is not None
    assert "not valid JSON" in bad.arguments_error


async def test_a_second_request_converts_the_openai_history_to_anthropic_blocks() -> None:
    first = step("Opening.", tool_calls=[tool_call("click_index", {"index": 1}, id="toolu_1")])
    async with anthropic_and_server([first, step("Done.")]) as (gateway, server):
        reply = await gateway.stream_turn(
            [{"role": "system", "content": "You are Browy."}, *USER], [], on_text=Collector()
        )
        conversation = [
            {"role": "system", "content": "You are Browy."},
            *USER,
            reply.assistant_message,
            {"role": "tool", "tool_call_id": "toolu_1", "content": "clicked"},
        ]
        final = await gateway.stream_turn(conversation, [], on_text=Collector())
    assert final.text == "Done."
    second = server.requests[1]
    assert second["system"] == "You are Browy."
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Opening."},
                {"type": "tool_use", "id": "toolu_1", "name": "click_index", "input": {"index": 1}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "clicked"}],
        },
    ]


async def test_thinking_blocks_with_signatures_are_echoed_back_exactly_in_the_next_request() -> (
    None
):
    redacted = {"redacted": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}
    first = step(
        ["I will ", "click."],
        thinking=[THINKING, redacted],
        tool_calls=[tool_call("click_index", {"index": 4}, id="toolu_9")],
    )
    async with anthropic_and_server([first, step("Done.")]) as (gateway, server):
        sink = Collector()
        reply = await gateway.stream_turn(USER, [], on_text=sink)
        assert sink.pieces == ["I will ", "click."]  # thinking is not shown as text
        assert reply.assistant_message[CONTENT_KEY] == [
            {"type": "thinking", "thinking": THINKING["text"], "signature": THINKING["signature"]},
            {"type": "redacted_thinking", "data": redacted["redacted"]},
            {"type": "text", "chars": len("I will click.")},
            {"type": "tool_use", "id": "toolu_9"},
        ]
        # What the store keeps and gives back: the message minus nothing (extra echoed exactly).
        stored = json.loads(json.dumps(reply.assistant_message))
        tool_result = {"role": "tool", "tool_call_id": "toolu_9", "content": "clicked"}
        await gateway.stream_turn([*USER, stored, tool_result], [], on_text=Collector())
    assistant = server.requests[1]["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": THINKING["text"], "signature": THINKING["signature"]},
            {"type": "redacted_thinking", "data": redacted["redacted"]},
            {"type": "text", "text": "I will click."},
            {"type": "tool_use", "id": "toolu_9", "name": "click_index", "input": {"index": 4}},
        ],
    }


async def test_masked_tool_arguments_in_the_history_stay_masked_in_the_echo() -> None:
    first = step(
        thinking=THINKING,
        tool_calls=[tool_call("type_index", {"index": 2, "text": "hunter2"}, id="toolu_pw")],
    )
    async with anthropic_and_server([first, step("ok")]) as (gateway, server):
        reply = await gateway.stream_turn(USER, [], on_text=Collector())
        stored = json.loads(json.dumps(reply.assistant_message))
        stored["tool_calls"][0]["function"]["arguments"] = '{"index": 2, "text": "********"}'
        result = {"role": "tool", "tool_call_id": "toolu_pw", "content": "typed"}
        await gateway.stream_turn([*USER, stored, result], [], on_text=Collector())
    sent = json.dumps(server.requests[1])
    assert "hunter2" not in sent
    assert server.requests[1]["messages"][1]["content"][1]["input"]["text"] == "********"


def test_conversion_merges_tool_results_images_and_consecutive_roles() -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "A."},
        {"role": "developer", "content": [{"type": "text", "text": "B."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": png}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "[1]"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": ""},  # empty: left out
        {"role": "user", "content": "again"},
    ]
    system, messages = convert_messages(history)
    assert system == "A.\n\nB."
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert messages[0]["content"][2] == {
        "type": "image",
        "source": {"type": "url", "url": "https://example.com/a.jpg"},
    }
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "a", "input": {}},
        {"type": "tool_use", "id": "c2", "name": "b", "input": {}},
    ]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "one"},
        {"type": "tool_result", "tool_use_id": "c2"},
        {"type": "text", "text": "next"},
        {"type": "text", "text": "again"},
    ]
    assert convert_tools([{"type": "function", "function": {"name": "x"}}]) == [
        {"name": "x", "input_schema": {"type": "object", "properties": {}}}
    ]


# -- retries, errors, timeouts, cancellation -------------------------------------------------


async def test_a_503_before_the_first_token_is_retried_and_text_is_not_duplicated() -> None:
    script = [step(fault=status(503)), step(["once", " only"])]
    async with anthropic_and_server(script) as (gateway, server):
        sink = Collector()
        reply = await gateway.stream_turn(USER, [], on_text=sink)
    assert len(server.requests) == 2
    assert sink.pieces == ["once", " only"]
    assert reply.text == "once only"


async def test_an_error_event_after_the_first_token_is_a_model_error_without_a_retry() -> None:
    # Events: message_start, content_block_start, ping, the first text_delta; then an error event.
    script = [step(["seen", " never"], fault=status(529, after_chunks=4)), step("retried!")]
    async with anthropic_and_server(script) as (gateway, server):
        sink = Collector()
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=sink)
    assert caught.value.code is ErrorCode.MODEL_ERROR
    assert "mid-answer" in caught.value.message
    assert sink.pieces == ["seen"]
    assert len(server.requests) == 1


async def test_a_401_is_an_auth_error_saying_how_to_fix_it_and_is_not_retried() -> None:
    script = {"api_key": "sk-ant-right", "steps": [step("never")]}
    async with anthropic_and_server(script, api_key="sk-ant-wrong") as (gateway, server):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
    assert caught.value.code is ErrorCode.AUTH
    assert not caught.value.retryable
    assert "How to fix" in caught.value.message
    assert "api_key_file" in caught.value.message
    assert "ANTHROPIC_API_KEY" in caught.value.message
    assert len(server.requests) == 1


async def test_the_key_is_sent_as_x_api_key_and_accepted() -> None:
    script = {"api_key": "sk-ant-right", "steps": [step("welcome")]}
    async with anthropic_and_server(script, api_key="sk-ant-right") as (gateway, _):
        reply = await gateway.stream_turn(USER, [], on_text=Collector())
    assert reply.text == "welcome"


@pytest.mark.parametrize("code", [400, 403, 404])
async def test_client_errors_are_not_retried(code: int) -> None:
    async with anthropic_and_server([step(fault=status(code)), step("no")]) as (gateway, server):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
    assert caught.value.code is (ErrorCode.AUTH if code == 403 else ErrorCode.MODEL_ERROR)
    assert len(server.requests) == 1


async def test_a_429_with_retry_after_is_honoured() -> None:
    script = [step(fault=status(429, retry_after=0.4)), step("after the wait")]
    async with anthropic_and_server(script, retry_initial_backoff=0.01) as (gateway, server):
        reply = await gateway.stream_turn(USER, [], on_text=Collector())
    assert reply.text == "after the wait"
    first, second = server.request_times
    assert second - first >= 0.4 - 0.05


async def test_retries_stop_after_max_attempts() -> None:
    async with anthropic_and_server([step(fault=status(529), repeat=5)], max_attempts=3) as (
        gateway,
        server,
    ):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
    assert caught.value.retryable
    assert "529" in caught.value.message
    assert len(server.requests) == 3


async def test_a_disconnect_mid_stream_is_a_model_error_without_a_retry() -> None:
    script = [step(["a", "b", "c"], fault=disconnect(after_chunks=5)), step("retried!")]
    async with anthropic_and_server(script) as (gateway, server):
        sink = Collector()
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=sink)
    assert caught.value.code is ErrorCode.MODEL_ERROR
    assert sink.pieces == ["a", "b"]
    assert len(server.requests) == 1


async def test_a_disconnect_before_any_text_is_retried() -> None:
    script = [step(["lost"], fault=disconnect(after_chunks=1)), step(["fine"])]
    async with anthropic_and_server(script) as (gateway, server):
        sink = Collector()
        reply = await gateway.stream_turn(USER, [], on_text=sink)
    assert sink.pieces == ["fine"]
    assert reply.text == "fine"
    assert len(server.requests) == 2


async def test_a_hanging_stream_ends_with_the_idle_timeout_and_the_server_sees_us_go() -> None:
    script = [step(["x"], fault=hang(after_chunks=4)), step("retried!")]
    async with anthropic_and_server(script, stream_idle_timeout=0.3) as (gateway, server):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
        await asyncio.wait_for(server.client_disconnected.wait(), 1.0)
    assert caught.value.code is ErrorCode.MODEL_ERROR
    assert "stopped responding" in caught.value.message
    assert len(server.requests) == 1


async def test_cancelling_mid_stream_closes_the_http_stream_within_a_second() -> None:
    slow = {"kind": "delay", "between_chunks_s": 0.2}
    async with anthropic_and_server([step([f"w{n} " for n in range(50)], fault=slow)]) as (
        gateway,
        server,
    ):
        sink = Collector()
        task = asyncio.create_task(gateway.stream_turn(USER, [], on_text=sink))
        await asyncio.wait_for(sink.first.wait(), 3.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.client_disconnected.wait(), 1.0)
    assert server.disconnect_count == 1


# -- models, auth, the factory ---------------------------------------------------------------


async def test_list_models_reads_anthropics_model_list() -> None:
    models = ["claude-sonnet-4-5", "claude-haiku-4-5"]
    async with anthropic_and_server({"models": models, "steps": []}) as (gateway, _):
        listed = await gateway.list_models()
    assert [(m.id, m.vendor) for m in listed] == [
        ("claude-sonnet-4-5", "anthropic"),
        ("claude-haiku-4-5", "anthropic"),
    ]


async def test_check_auth_is_ready_for_a_good_key_and_unauth_with_a_fix_for_a_bad_one() -> None:
    script = {"api_key": "sk-ant-right", "steps": []}
    async with anthropic_and_server(script, api_key="sk-ant-right") as (gateway, _):
        assert (await gateway.check_auth()).state == "ready"
    async with anthropic_and_server(script, api_key=None) as (gateway, _):
        state = await gateway.check_auth()
    assert state.state == "unauth"
    assert state.detail is not None
    assert "No API key is configured" in state.detail


async def test_make_gateway_picks_the_gateway_of_the_provider() -> None:
    settings = fast_settings("http://127.0.0.1:9/v1")
    openai_gateway = make_gateway(settings)
    anthropic_gateway = make_gateway(replace(settings, provider="anthropic"))
    try:
        assert type(openai_gateway) is ModelGateway
        assert type(anthropic_gateway) is AnthropicGateway
    finally:
        await openai_gateway.aclose()
        await anthropic_gateway.aclose()
    with pytest.raises(ModelError, match="Unknown model provider"):
        make_gateway(replace(settings, provider="gemini"))


# -- the server's Anthropic wire format ------------------------------------------------------


async def test_the_server_streams_anthropic_sse_events_in_anthropics_order() -> None:
    call = tool_call("navigate", {"url": "https://example.com/a/long/path"}, id="toolu_7")
    body = {
        "model": "m",
        "max_tokens": 100,
        "stream": True,
        "messages": [{"role": "user", "content": "go"}],
    }
    async with (
        ScriptedModelServer([step("Going.", tool_calls=[call])]) as server,
        aiohttp.ClientSession() as session,
        session.post(server.base_url + "/messages", json=body) as response,
    ):
        raw = (await response.read()).decode()
    blocks = raw.split("\n\n")
    assert blocks[-1] == ""
    events = []
    for block in blocks[:-1]:
        name_line, data_line = block.split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        assert name_line == f"event: {data['type']}"
        events.append(data)
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    tool_start = next(e for e in events if e.get("content_block", {}).get("type") == "tool_use")
    assert tool_start["content_block"] == {
        "type": "tool_use",
        "id": "toolu_7",
        "name": "navigate",
        "input": {},
    }
    fragments = [
        e["delta"]["partial_json"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    ]
    assert fragments[0] == ""
    assert len(fragments) > 2
    assert json.loads("".join(fragments)) == {"url": "https://example.com/a/long/path"}


async def test_the_server_answers_a_non_streaming_message_the_sdk_parses() -> None:
    first = step("Clicking.", thinking=THINKING, tool_calls=[tool_call("click_index", {"i": 2})])
    async with (
        ScriptedModelServer([first]) as server,
        anthropic.AsyncAnthropic(
            base_url=server.base_url.removesuffix("/v1"), api_key="k", max_retries=0
        ) as client,
    ):
        message = await client.messages.create(
            model="m", max_tokens=100, messages=[{"role": "user", "content": "go"}]
        )
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.stop_reason == "tool_use"
    tool_use = message.content[2]
    assert isinstance(tool_use, anthropic.types.ToolUseBlock)
    assert tool_use.input == {"i": 2}


async def test_the_server_matches_steps_on_the_system_parameter_and_tool_results() -> None:
    script = [
        step("after the tool", match={"tool_result": True}, session="[s-A]"),
        step("first", session="[s-A]"),
    ]
    system, history = convert_messages(
        [
            {"role": "system", "content": "marker [s-A]"},
            *USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "a", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "done"},
        ]
    )
    async with (
        ScriptedModelServer(script) as server,
        anthropic.AsyncAnthropic(
            base_url=server.base_url.removesuffix("/v1"), api_key="k", max_retries=0
        ) as client,
    ):
        first = await client.messages.create(
            model="m", max_tokens=10, system="marker [s-A]", messages=cast(Any, history[:1])
        )
        second = await client.messages.create(
            model="m", max_tokens=10, system=system or "", messages=cast(Any, history)
        )
    assert [b.type for b in first.content] == ["text"]
    assert first.content[0].type == "text"
    assert first.content[0].text == "first"
    assert second.content[0].type == "text"
    assert second.content[0].text == "after the tool"
