"""Error codes and the exception tree (protocol.md section 4)."""

import re
from pathlib import Path

import pytest

from messages.errors import (
    BrowyError,
    ErrorCode,
    FrameTooLarge,
    InvalidMessage,
    LocalError,
    MessageTooLarge,
    OriginForbidden,
    PeerError,
    ProtocolMismatch,
    UnknownMessageType,
    v1_chat_error_code,
)

PROTOCOL_MD = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _documented_codes() -> list[str]:
    text = PROTOCOL_MD.read_text(encoding="utf-8")
    match = re.search(r"Stable error codes[^:]*:\s*`([A-Z_\s]+)`", text)
    assert match is not None, "protocol.md section 4 no longer lists the stable error codes"
    return match.group(1).split()


def test_error_codes_are_exactly_those_listed_in_protocol_md() -> None:
    assert [code.value for code in ErrorCode] == _documented_codes()


def test_each_error_code_value_is_its_name() -> None:
    for code in ErrorCode:
        assert code.value == code.name
        assert ErrorCode(code.name) is code


@pytest.mark.parametrize(
    ("code", "v1_word"),
    [
        (ErrorCode.BUSY, "aborted"),
        (ErrorCode.AUTH, "auth"),
        (ErrorCode.NO_CAPABILITY, "no_capability"),
        (ErrorCode.CANCELLED, "aborted"),
        (ErrorCode.MODEL_ERROR, "internal"),
        (ErrorCode.CONNECTION_LOST, "internal"),
        (ErrorCode.INTERNAL, "internal"),
    ],
)
def test_v1_chat_error_code_follows_the_section_4_table(code: ErrorCode, v1_word: str) -> None:
    assert v1_chat_error_code(code) == v1_word


def test_every_code_maps_to_a_word_the_v1_panels_know() -> None:
    v1_words = {"aborted", "busy", "auth", "internal", "no_capability"}
    assert {v1_chat_error_code(code) for code in ErrorCode} <= v1_words


def test_peer_faults_and_local_faults_are_separate_branches_of_the_tree() -> None:
    for peer in (InvalidMessage, UnknownMessageType, MessageTooLarge, ProtocolMismatch):
        assert issubclass(peer, PeerError)
        assert not issubclass(peer, LocalError)
    assert issubclass(OriginForbidden, PeerError)
    assert issubclass(FrameTooLarge, LocalError)
    assert not issubclass(FrameTooLarge, PeerError)
    assert issubclass(PeerError, BrowyError)
    assert issubclass(LocalError, BrowyError)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (InvalidMessage("sessionId", "bad"), ErrorCode.INVALID_MESSAGE),
        (UnknownMessageType("x.y"), ErrorCode.INVALID_MESSAGE),
        (MessageTooLarge("70000000 bytes"), ErrorCode.MESSAGE_TOO_LARGE),
        (ProtocolMismatch("peer speaks 7"), ErrorCode.PROTOCOL_MISMATCH),
        (OriginForbidden("chrome-extension://evil/"), ErrorCode.ORIGIN_FORBIDDEN),
        (FrameTooLarge("2000000 bytes"), ErrorCode.MESSAGE_TOO_LARGE),
        (LocalError("boom"), ErrorCode.INTERNAL),
    ],
)
def test_each_exception_carries_its_stable_code(exc: BrowyError, code: ErrorCode) -> None:
    assert exc.code is code


def test_internal_detail_stays_out_of_the_wire_message() -> None:
    secret = "/home/alice/.browy/config.toml: token sk-12345 rejected"
    for exc in (LocalError(secret), MessageTooLarge(secret), OriginForbidden(secret)):
        assert secret in str(exc)
        assert "sk-12345" not in exc.wire_message
        assert exc.wire_message


def test_a_local_error_can_carry_another_code_without_leaking_its_message() -> None:
    exc = LocalError("socket /run/x refused", code=ErrorCode.CONNECTION_LOST)
    assert exc.code is ErrorCode.CONNECTION_LOST
    assert "/run/x" not in exc.wire_message


def test_invalid_message_names_the_field_in_its_wire_message() -> None:
    exc = InvalidMessage("sessionId", "Input should be a valid string")
    assert exc.field == "sessionId"
    assert exc.wire_message == "sessionId: Input should be a valid string"
    assert InvalidMessage("", "invalid UTF-8 at byte 3").wire_message == "invalid UTF-8 at byte 3"


def test_unknown_message_type_is_an_invalid_message_on_the_type_field() -> None:
    exc = UnknownMessageType("chat.teleport")
    assert isinstance(exc, InvalidMessage)
    assert exc.field == "type"
    assert exc.type_name == "chat.teleport"
    assert "chat.teleport" in exc.wire_message
