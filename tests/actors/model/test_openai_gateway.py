"""ModelGateway against the real ScriptedModelServer, through the real ``openai`` client."""

from __future__ import annotations

import asyncio
import email.utils
from typing import Any

import pytest

from actors.model.openai_gateway import ModelGateway
from actors.model.retry import parse_retry_after
from actors.model.types import ModelError, Usage, is_chat_model
from messages.errors import ErrorCode
from tests.helpers.model_script import (
    disconnect,
    fast_settings,
    gateway_and_server,
    hang,
    status,
    step,
    tool_call,
)

USER: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]


class Collector:
    """An on_text sink that records pieces and signals the first one."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.first = asyncio.Event()

    async def __call__(self, piece: str) -> None:
        self.pieces.append(piece)
        self.first.set()


async def test_streamed_text_arrives_in_order_and_the_reply_text_is_their_join() -> None:
    async with gateway_and_server([step(["Hel", "lo, ", "wor", "ld"])]) as (gateway, _):
        sink = Collector()
        reply = await gateway.stream_turn(USER, [], on_text=sink)
    assert sink.pieces == ["Hel", "lo, ", "wor", "ld"]
    assert reply.text == "Hello, world"
    assert reply.finish_reason == "stop"
    assert reply.tool_calls == []
    assert reply.assistant_message == {"role": "assistant", "content": "Hello, world"}


async def test_a_synchronous_on_text_callback_is_accepted() -> None:
    async with gateway_and_server([step(["a", "b"])]) as (gateway, _):
        seen: list[str] = []
        reply = await gateway.stream_turn(USER, [], on_text=seen.append)
    assert seen == ["a", "b"]
    assert reply.text == "ab"


async def test_tool_calls_streamed_in_fragments_reassemble_with_ids_and_parsed_arguments() -> None:
    calls = [
        tool_call("click_index", {"index": 12, "reason": "open the settings page"}, id="call_A"),
        tool_call("type_index", {"index": 3, "text": "hello world, in pieces"}, id="call_B"),
    ]
    async with gateway_and_server([step("Let me look.", tool_calls=calls)]) as (gateway, server):
        reply = await gateway.stream_turn(USER, [_tool_schema("click_index")], on_text=Collector())
    assert reply.text == "Let me look."
    assert reply.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in reply.tool_calls] == [
        ("call_A", "click_index"),
        ("call_B", "type_index"),
    ]
    assert reply.tool_calls[0].arguments == {"index": 12, "reason": "open the settings page"}
    assert reply.tool_calls[1].arguments == {"index": 3, "text": "hello world, in pieces"}
    assert all(c.arguments_error is None for c in reply.tool_calls)
    assert reply.assistant_message["tool_calls"][0] == {
        "id": "call_A",
        "type": "function",
        "function": {
            "name": "click_index",
            "arguments": '{"index":12,"reason":"open the settings page"}',
        },
    }
    assert server.requests[0]["tools"] == [_tool_schema("click_index")]


async def test_malformed_tool_arguments_are_kept_raw_and_reported() -> None:
    calls = [tool_call("click_index", '{"index": 12,'), tool_call("scroll", "[1, 2]")]
    async with gateway_and_server([step(tool_calls=calls)]) as (gateway, _):
        reply = await gateway.stream_turn(USER, [], on_text=Collector())
    bad, not_object = reply.tool_calls
    assert bad.arguments is None
    assert bad.arguments_json == '{"index": 12,'
    assert bad.arguments_error is not None
    assert "not valid JSON" in bad.arguments_error
    assert not_object.arguments is None
    assert not_object.arguments_error == "the arguments must be a JSON object"
    assert reply.assistant_message["tool_calls"][0]["function"]["arguments"] == '{"index": 12,'


async def test_usage_is_reported() -> None:
    usage = {"prompt_tokens": 123, "completion_tokens": 45, "total_tokens": 168}
    async with gateway_and_server([step("ok", usage=usage)]) as (gateway, server):
        reply = await gateway.stream_turn(USER, [], on_text=Collector())
    assert reply.usage == Usage(input_tokens=123, output_tokens=45, total_tokens=168)
    assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_a_503_before_the_first_token_is_retried_and_text_is_not_duplicated() -> None:
    script = [step(fault=status(503)), step(["once", " only"])]
    async with gateway_and_server(script) as (gateway, server):
        sink = Collector()
        reply = await gateway.stream_turn(USER, [], on_text=sink)
    assert len(server.requests) == 2
    assert sink.pieces == ["once", " only"]
    assert reply.text == "once only"


async def test_a_503_after_the_first_token_is_not_retried() -> None:
    # Chunk 1 is the role, chunk 2 the first text; then the stream fails the way OpenAI's does.
    script = [step(["seen", " never"], fault=status(503, after_chunks=2)), step("retried!")]
    async with gateway_and_server(script) as (gateway, server):
        sink = Collector()
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=sink)
    assert caught.value.code is ErrorCode.MODEL_ERROR
    assert sink.pieces == ["seen"]
    assert len(server.requests) == 1


async def test_a_401_is_an_auth_error_with_a_fix_and_is_not_retried() -> None:
    script = {"api_key": "sk-right", "steps": [step("never")]}
    async with gateway_and_server(script, api_key="sk-wrong") as (gateway, server):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
    assert caught.value.code is ErrorCode.AUTH
    assert not caught.value.retryable
    assert "How to fix" in caught.value.message
    assert caught.value.wire_message == caught.value.message
    assert len(server.requests) == 1


async def test_a_scripted_401_without_a_key_says_that_no_key_is_configured() -> None:
    async with gateway_and_server([step(fault=status(401))], api_key=None) as (gateway, server):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
    assert caught.value.code is ErrorCode.AUTH
    assert "No API key is configured" in caught.value.message
    assert len(server.requests) == 1


@pytest.mark.parametrize("code", [400, 403, 404])
async def test_client_errors_are_not_retried(code: int) -> None:
    async with gateway_and_server([step(fault=status(code)), step("no")]) as (gateway, server):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
    assert caught.value.code is (ErrorCode.AUTH if code == 403 else ErrorCode.MODEL_ERROR)
    assert len(server.requests) == 1


async def test_a_429_with_retry_after_is_honoured() -> None:
    script = [step(fault=status(429, retry_after=0.4)), step("after the wait")]
    async with gateway_and_server(script, retry_initial_backoff=0.01) as (gateway, server):
        reply = await gateway.stream_turn(USER, [], on_text=Collector())
    assert reply.text == "after the wait"
    first, second = server.request_times
    assert second - first >= 0.4 - 0.05


async def test_a_retry_after_longer_than_the_cap_is_cut_to_the_cap() -> None:
    script = [step(fault=status(503, retry_after=3600)), step("soon")]
    async with gateway_and_server(script, retry_after_cap=0.05) as (gateway, server):
        reply = await asyncio.wait_for(gateway.stream_turn(USER, [], on_text=Collector()), 5)
    assert reply.text == "soon"
    assert len(server.requests) == 2


async def test_retries_stop_after_max_attempts() -> None:
    script = [step(fault=status(502), repeat=5)]
    async with gateway_and_server(script, max_attempts=3) as (gateway, server):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
    assert caught.value.code is ErrorCode.MODEL_ERROR
    assert caught.value.retryable
    assert "502" in caught.value.message
    assert len(server.requests) == 3


async def test_a_disconnect_mid_stream_is_a_model_error_without_a_retry() -> None:
    script = [step(["a", "b", "c"], fault=disconnect(after_chunks=2)), step("retried!")]
    async with gateway_and_server(script) as (gateway, server):
        sink = Collector()
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=sink)
    assert caught.value.code is ErrorCode.MODEL_ERROR
    assert sink.pieces == ["a"]
    assert len(server.requests) == 1


async def test_a_disconnect_before_any_text_is_retried() -> None:
    script = [step(["lost"], fault=disconnect(after_chunks=1)), step(["fine"])]
    async with gateway_and_server(script) as (gateway, server):
        sink = Collector()
        reply = await gateway.stream_turn(USER, [], on_text=sink)
    assert sink.pieces == ["fine"]
    assert reply.text == "fine"
    assert len(server.requests) == 2


async def test_a_hanging_stream_ends_with_the_idle_timeout_and_the_server_sees_us_go() -> None:
    script = [step(["x"], fault=hang(after_chunks=1)), step("retried!")]
    async with gateway_and_server(script, stream_idle_timeout=0.3) as (gateway, server):
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
        await asyncio.wait_for(server.client_disconnected.wait(), 1.0)
    assert caught.value.code is ErrorCode.MODEL_ERROR
    assert "stopped responding" in caught.value.message
    assert len(server.requests) == 1


async def test_cancelling_mid_stream_closes_the_http_stream_within_a_second() -> None:
    slow = {"kind": "delay", "between_chunks_s": 0.2}
    script = [step([f"w{n} " for n in range(50)], fault=slow)]
    async with gateway_and_server(script) as (gateway, server):
        sink = Collector()
        task = asyncio.create_task(gateway.stream_turn(USER, [], on_text=sink))
        await asyncio.wait_for(sink.first.wait(), 2.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.client_disconnected.wait(), 1.0)
    assert server.disconnect_count == 1


async def test_list_models_leaves_out_models_that_do_not_chat() -> None:
    models = ["gpt-4o", "text-embedding-3-small", "whisper-1", "tts-1-hd", "dall-e-3", "o3-mini"]
    async with gateway_and_server({"models": models, "steps": []}) as (gateway, _):
        listed = await gateway.list_models()
    assert [m.id for m in listed] == ["gpt-4o", "o3-mini"]
    assert listed[0].name == "gpt-4o"
    assert listed[0].vendor == "browy"


async def test_check_auth_reports_ready_for_a_good_key_and_unauth_with_a_fix_for_a_bad_one() -> (
    None
):
    script = {"api_key": "sk-right", "steps": []}
    async with gateway_and_server(script, api_key="sk-right") as (gateway, _):
        assert (await gateway.check_auth()).state == "ready"
    async with gateway_and_server(script, api_key="sk-wrong") as (gateway, _):
        state = await gateway.check_auth()
    assert state.state == "unauth"
    assert state.detail is not None
    assert "How to fix" in state.detail


async def test_check_auth_is_unknown_when_the_provider_cannot_be_reached() -> None:
    async with gateway_and_server([]) as (_, server):
        url = server.base_url
    async with ModelGateway(fast_settings(url)) as gateway:
        state = await gateway.check_auth()
    assert state.state == "unknown"


async def test_an_exhausted_script_ends_in_a_model_error_that_says_so() -> None:
    async with gateway_and_server([step("only one")], max_attempts=2) as (gateway, server):
        await gateway.stream_turn(USER, [], on_text=Collector())
        with pytest.raises(ModelError) as caught:
            await gateway.stream_turn(USER, [], on_text=Collector())
    assert caught.value.code is ErrorCode.MODEL_ERROR
    assert "script exhausted" in caught.value.message
    assert len(server.requests) == 3


async def test_provider_fields_on_the_assistant_message_are_echoed_back_exactly() -> None:
    message_extra = {
        "reasoning_content": "The user wants the settings.",
        "provider_state": {"signature": "c2lnbmF0dXJl==", "n": [1, 2]},
    }
    call_extra = {"extra_content": {"google": {"thought_signature": "dGhvdWdodA=="}}}
    first = step(
        "Opening.",
        tool_calls=[tool_call("click_index", {"index": 1}, id="call_1", extra=call_extra)],
        extra=message_extra,
    )
    async with gateway_and_server([first, step("Done.")]) as (gateway, server):
        reply = await gateway.stream_turn(USER, [], on_text=Collector())
        assert reply.tool_calls[0].extra == call_extra
        tool_result = {"role": "tool", "tool_call_id": "call_1", "content": "clicked"}
        conversation = [*USER, reply.assistant_message, tool_result]
        await gateway.stream_turn(conversation, [], on_text=Collector())
    echoed = server.requests[1]["messages"][1]
    assert echoed == {
        "role": "assistant",
        "content": "Opening.",
        **message_extra,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "click_index", "arguments": '{"index":1}'},
                **call_extra,
            }
        ],
    }


def test_parse_retry_after_reads_seconds_milliseconds_and_http_dates() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=1_000_000) == pytest.approx(30.0)
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_is_chat_model_rejects_embedding_audio_and_image_ids() -> None:
    assert is_chat_model("gpt-4o-mini")
    assert is_chat_model("llama3.1:8b")
    for model_id in ["text-embedding-ada-002", "whisper-1", "tts-1", "dall-e-2", "gpt-image-1"]:
        assert not is_chat_model(model_id)


def _tool_schema(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "a tool",
            "parameters": {"type": "object", "properties": {}},
        },
    }
