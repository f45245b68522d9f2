"""Wire models against the shared fixtures (protocol.md sections 2-4).

tests/fixtures/wire/*.json are shared with the extension's node tests: keep them canonical
(camelCase, no null fields) so both sides can compare whole objects.
"""

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from messages.errors import ErrorCode, InvalidMessage, LocalError, UnknownMessageType
from messages.wire import (
    INBOUND_ADAPTER,
    INBOUND_TYPES,
    OUTBOUND_ADAPTER,
    OUTBOUND_TYPES,
    dump_outbound,
    parse_inbound,
    pong_for,
)
from messages.wire_inbound import ChatSend, Pong, SessionStart, ToolResult
from messages.wire_outbound import ChatDelta, ChatError, ChatToolCall, ConfigResult, ErrorMessage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "wire"


def _load(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return items


INBOUND = _load("inbound.json")
OUTBOUND = _load("outbound.json")
INVALID = _load("invalid.json")

# The type tables of protocol.md, written out by hand so a model missing from both the union and
# the fixtures is still caught.
PROTOCOL_INBOUND = {
    # section 2 (v1)
    "hello", "session.start", "session.end", "chat.send", "chat.cancel", "history.clear",
    "tool.result", "cdp.event", "auth.signin", "models.list", "models.set", "chat.list",
    "chat.history", "chat.delete",
    # section 4 (v2)
    "approval.response", "user.answer", "config.get", "config.set", "doctor.run", "ping", "pong",
    "tool.call", "tools.list", "client.stop", "client.hand_tab", "client.take_tab",
    "daemon.restart", "image.get", "download.started", "download.done",
}  # fmt: skip
PROTOCOL_OUTBOUND = {
    # section 3 (v1)
    "hello.ack", "session.ready", "chat.delta", "chat.tool_call", "chat.tool_result", "chat.done",
    "chat.error", "cdp.send", "tab.new", "tab.activate", "tab.list", "tab.getActive",
    "event.activity", "auth.status", "sdk.ready", "models.list", "models.current",
    "chat.list.result", "chat.history.result", "chat.delete.result",
    # section 4 (v2)
    "chat.queued", "tab.close", "cdp.cancel", "control.release", "approval.request", "user.ask",
    "usage", "config.result", "doctor.result", "ping", "pong", "error",
    "tool.call.result", "tools.list.result", "clients.list", "image.data", "chat.replaced",
}  # fmt: skip


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["name"] for item in items]


def test_fixture_names_are_unique_in_each_file() -> None:
    for items in (INBOUND, OUTBOUND, INVALID):
        assert len(set(_ids(items))) == len(items)


def test_the_unions_hold_exactly_the_types_of_protocol_md() -> None:
    assert INBOUND_TYPES == PROTOCOL_INBOUND
    assert OUTBOUND_TYPES == PROTOCOL_OUTBOUND


def test_the_fixtures_cover_every_message_type() -> None:
    assert {item["message"]["type"] for item in INBOUND} == PROTOCOL_INBOUND
    assert {item["message"]["type"] for item in OUTBOUND} == PROTOCOL_OUTBOUND


@pytest.mark.parametrize("item", INBOUND, ids=_ids(INBOUND))
def test_every_inbound_example_parses_and_round_trips(item: dict[str, Any]) -> None:
    message = item["message"]
    model = parse_inbound(orjson.dumps(message))
    assert model.type == message["type"]
    assert parse_inbound(message) == model
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped == {k: v for k, v in message.items() if v is not None}
    assert parse_inbound(orjson.dumps(dumped)) == model


@pytest.mark.parametrize("item", OUTBOUND, ids=_ids(OUTBOUND))
def test_every_outbound_example_validates_and_dumps_to_the_same_json(item: dict[str, Any]) -> None:
    model = OUTBOUND_ADAPTER.validate_python(item["message"])
    assert orjson.loads(dump_outbound(model)) == item["message"]


@pytest.mark.parametrize("item", INVALID, ids=_ids(INVALID))
def test_every_invalid_example_is_refused_naming_its_field(item: dict[str, Any]) -> None:
    payload = item["raw"].encode() if "raw" in item else orjson.dumps(item["message"])
    inputs: list[bytes | dict[str, Any]] = [payload]
    if "message" in item:
        inputs.append(item["message"])
    for value in inputs:
        with pytest.raises(InvalidMessage) as info:
            parse_inbound(value)
        assert info.value.field == item["field"]
        assert info.value.code is ErrorCode.INVALID_MESSAGE
        assert isinstance(info.value, UnknownMessageType) == (item["error"] == "unknown_type")


def test_an_invalid_field_is_reported_as_path_colon_problem() -> None:
    with pytest.raises(InvalidMessage) as info:
        parse_inbound({"type": "chat.send", "sessionId": 5, "text": "hi"})
    assert info.value.wire_message == "sessionId: Input should be a valid string"


def test_a_missing_field_is_reported_by_its_wire_name() -> None:
    with pytest.raises(InvalidMessage) as info:
        parse_inbound({"type": "tool.result", "sessionId": "sp-1", "ok": True})
    assert info.value.wire_message == "callId: Field required"


def test_the_invalid_value_is_not_echoed_in_the_wire_message() -> None:
    with pytest.raises(InvalidMessage) as info:
        parse_inbound({"type": "chat.send", "sessionId": ["sk-secret-token"], "text": "x"})
    assert "sk-secret" not in info.value.wire_message


def test_unknown_extra_fields_of_a_newer_extension_are_ignored() -> None:
    model = parse_inbound({"type": "chat.send", "sessionId": "sp-1", "text": "x", "v9": 1})
    assert model == ChatSend(session_id="sp-1", text="x")


def test_lone_surrogates_reach_the_model_intact() -> None:
    model = parse_inbound(b'{"type":"chat.send","sessionId":"sp-1","text":"\\ud83d!"}')
    assert isinstance(model, ChatSend)
    assert model.text == "\ud83d!"


def test_python_code_builds_models_with_snake_case_names() -> None:
    model = SessionStart(session_id="dt-1", inspected_tab_id=4, capabilities=("cdp.activeTab",))
    assert model.model_dump(by_alias=True, exclude_none=True) == {
        "type": "session.start",
        "sessionId": "dt-1",
        "capabilities": ("cdp.activeTab",),
        "inspectedTabId": 4,
    }


def test_models_are_frozen() -> None:
    model = ChatSend(session_id="sp-1", text="x")
    with pytest.raises(ValidationError):
        model.text = "y"


def test_tool_result_carries_any_json_result() -> None:
    for result in (None, 3, "x", [1, {"a": None}], {"tabId": 1, "result": {}}):
        model = parse_inbound(
            {"type": "tool.result", "sessionId": "s", "callId": "c", "ok": True, "result": result}
        )
        assert isinstance(model, ToolResult)
        assert model.result == result


def test_dump_outbound_leaves_out_none_fields_but_keeps_nulls_inside_args() -> None:
    model = ChatToolCall(session_id="s", call_id="c", tool="fill_input", args={"value": None})
    assert orjson.loads(dump_outbound(model)) == {
        "type": "chat.tool_call",
        "sessionId": "s",
        "callId": "c",
        "tool": "fill_input",
        "args": {"value": None},
    }


def test_outbound_models_refuse_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        OUTBOUND_ADAPTER.validate_python(
            {"type": "chat.delta", "sessionId": "s", "text": "", "x": 1}
        )


def test_chat_error_takes_a_v1_word_or_a_v2_code_and_nothing_else() -> None:
    assert ChatError(session_id="s", message="m", code="busy").code == "busy"
    assert ChatError.model_validate({"sessionId": "s", "message": "m", "code": "AUTH"}).code is (
        ErrorCode.AUTH
    )
    with pytest.raises(ValidationError):
        ChatError(session_id="s", message="m", code="nope")  # type: ignore[arg-type]


def test_an_error_frame_is_built_from_an_exception_without_its_internals() -> None:
    exc = LocalError("KeyError('turn-7') in scheduler", code=ErrorCode.INTERNAL)
    frame = orjson.loads(dump_outbound(ErrorMessage(code=exc.code, message=exc.wire_message)))
    assert frame == {"type": "error", "code": "INTERNAL", "message": "internal error"}


def test_config_result_writes_its_schema_under_the_wire_name_schema() -> None:
    model = ConfigResult(values={}, config_schema={"a": 1})
    assert orjson.loads(dump_outbound(model)) == {
        "type": "config.result",
        "values": {},
        "schema": {"a": 1},
    }


def test_dump_outbound_replaces_lone_surrogates_instead_of_failing_the_message() -> None:
    # Page text and model output can carry lone surrogates; UTF-8 (and Chrome) cannot.
    out = orjson.loads(dump_outbound(ChatDelta(session_id="s", text="a\udc00b\ud800")))
    assert out["text"] == "a\ufffdb\ufffd"


def test_the_inbound_adapter_parses_models_list_as_the_request_not_the_reply() -> None:
    model = INBOUND_ADAPTER.validate_python({"type": "models.list"})
    assert type(model).__name__ == "ModelsListRequest"


def test_a_frame_that_is_just_a_ping_is_answered_at_the_link_and_anything_else_is_not() -> None:
    assert pong_for(b'{"type":"ping","id":7}') == Pong(id=7)
    assert pong_for(b'{"type":"ping","id":"k-1"}') == Pong(id="k-1")
    # Anything else goes to the Connection, which answers (or refuses) it as before.
    for payload in (
        b'{"type":"ping","id":true}',
        b'{"type":"ping","id":null}',
        b'{"type":"ping","id":1,"sessionId":"s"}',
        b'{"type":"ping",',
        b'{"id":1,"type":"ping"}',
        b'{"type":"pong","id":1}',
        b'{"type":"chat.send","sessionId":"s","text":"ping"}',
    ):
        assert pong_for(payload) is None, payload
