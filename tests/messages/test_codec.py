"""The native messaging codec, byte by byte (protocol.md section 1)."""

import itertools
import struct
import time
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from messages.codec import (
    DEFAULT_MAX_INBOUND_FRAME,
    MAX_OUTBOUND_FRAME,
    Frame,
    NativeFrameDecoder,
    Peek,
    StreamBroken,
    decode_message,
    encode_frame,
    encode_message,
    peek,
)
from messages.errors import ErrorCode, FrameTooLarge, InvalidMessage, LocalError

PROPERTY = settings(deadline=None, max_examples=200)

MESSAGES: list[dict[str, Any]] = [
    {"type": "hello", "client": "extension", "protocol": 2},
    {"type": "chat.send", "sessionId": "sp-1", "text": "héllo wörld ✓ 🎉"},
    {"type": "session.end", "sessionId": "sp-1"},
]


def _header(length: int) -> bytes:
    return struct.pack("<I", length)


def _decode_all(decoder: NativeFrameDecoder, *chunks: bytes) -> list[Frame | StreamBroken]:
    events: list[Frame | StreamBroken] = []
    for chunk in chunks:
        decoder.feed(chunk)
        events.extend(decoder.events())
    return events


def _reference_events(data: bytes, max_frame: int) -> tuple[list[Frame | StreamBroken], int]:
    """A deliberately simple decoder: the events of ``data`` and the bytes left pending."""
    events: list[Frame | StreamBroken] = []
    pos = 0
    while len(data) - pos >= 4:
        (length,) = struct.unpack_from("<I", data, pos)
        if length > max_frame:
            events.append(StreamBroken(ErrorCode.MESSAGE_TOO_LARGE, ""))
            return events, 0
        if pos + 4 + length > len(data):
            break
        events.append(Frame(data[pos + 4 : pos + 4 + length]))
        pos += 4 + length
    return events, len(data) - pos


def _kinds(events: list[Frame | StreamBroken]) -> list[object]:
    # StreamBroken messages carry figures; compare frames by payload and breaks by code.
    return [e.payload if isinstance(e, Frame) else e.code for e in events]


# --- framing -------------------------------------------------------------------------------------


def test_a_frame_is_a_little_endian_length_then_the_payload() -> None:
    assert encode_frame(b'{"type":"x"}') == b'\x0c\x00\x00\x00{"type":"x"}'


def test_the_length_counts_bytes_not_characters() -> None:
    frame = encode_message({"type": "chat.delta", "text": "é🎉"})
    (length,) = struct.unpack_from("<I", frame)
    assert length == len(frame) - 4
    assert length > len('{"type":"chat.delta","text":"é🎉"}')


def test_a_stream_split_at_every_byte_boundary_decodes_the_same() -> None:
    stream = b"".join(encode_message(m) for m in MESSAGES) + encode_frame(b"")
    expected = [Frame(orjson.dumps(m)) for m in MESSAGES] + [Frame(b"")]
    for cut in range(len(stream) + 1):
        decoder = NativeFrameDecoder()
        assert _decode_all(decoder, stream[:cut], stream[cut:]) == expected, cut
        assert decoder.pending_bytes == 0


def test_a_stream_split_at_every_pair_of_boundaries_decodes_the_same() -> None:
    stream = b"".join(encode_message(m) for m in MESSAGES[:2])
    expected = [Frame(orjson.dumps(m)) for m in MESSAGES[:2]]
    for first in range(len(stream) + 1):
        for second in range(first, len(stream) + 1, 3):
            decoder = NativeFrameDecoder()
            chunks = (stream[:first], stream[first:second], stream[second:])
            assert _decode_all(decoder, *chunks) == expected, (first, second)


def test_feeding_one_byte_at_a_time_yields_each_frame_as_soon_as_it_is_complete() -> None:
    frame = encode_message(MESSAGES[0])
    decoder = NativeFrameDecoder()
    for byte in frame[:-1]:
        decoder.feed(bytes([byte]))
        assert decoder.events() == []
    assert decoder.pending_bytes == len(frame) - 1
    decoder.feed(frame[-1:])
    assert decoder.events() == [Frame(orjson.dumps(MESSAGES[0]))]
    assert decoder.pending_bytes == 0


def test_events_drains_so_a_frame_is_returned_once() -> None:
    decoder = NativeFrameDecoder()
    decoder.feed(encode_message(MESSAGES[0]))
    assert len(decoder.events()) == 1
    assert decoder.events() == []


def test_a_zero_length_frame_is_well_framed_and_decoding_continues() -> None:
    decoder = NativeFrameDecoder()
    events = _decode_all(decoder, encode_frame(b"") + encode_message(MESSAGES[2]))
    assert events == [Frame(b""), Frame(orjson.dumps(MESSAGES[2]))]
    with pytest.raises(InvalidMessage, match="invalid JSON"):
        decode_message(events[0].payload)  # type: ignore[union-attr]
    assert decode_message(events[1].payload) == MESSAGES[2]  # type: ignore[union-attr]


def test_memoryview_and_bytearray_input_is_accepted() -> None:
    frame = encode_message(MESSAGES[1])
    decoder = NativeFrameDecoder()
    decoder.feed(bytearray(frame[:5]))
    decoder.feed(memoryview(frame)[5:])
    assert decoder.events() == [Frame(orjson.dumps(MESSAGES[1]))]


def test_many_frames_in_one_chunk_leave_nothing_pending() -> None:
    message = orjson.dumps({"type": "chat.delta", "sessionId": "sp-1", "text": "x" * 150})
    decoder = NativeFrameDecoder()
    decoder.feed(encode_frame(message) * 5000 + encode_frame(message)[:7])
    events = decoder.events()
    assert len(events) == 5000
    assert all(event == Frame(message) for event in events)
    assert decoder.pending_bytes == 7


# --- outbound limit ------------------------------------------------------------------------------


def test_exactly_one_mib_of_outbound_payload_is_framed() -> None:
    payload = b"x" * MAX_OUTBOUND_FRAME
    frame = encode_frame(payload)
    assert frame[:4] == _header(1_048_576)
    assert len(frame) == MAX_OUTBOUND_FRAME + 4


def test_one_byte_over_one_mib_raises_before_anything_is_written() -> None:
    written: list[bytes] = []
    with pytest.raises(FrameTooLarge) as info:
        written.append(encode_frame(b"x" * (MAX_OUTBOUND_FRAME + 1)))
    assert written == []
    assert info.value.code is ErrorCode.MESSAGE_TOO_LARGE


def test_encode_message_applies_the_same_limit_to_the_json_bytes() -> None:
    overhead = len(orjson.dumps({"type": "chat.delta", "text": ""}))
    fits = {"type": "chat.delta", "text": "x" * (MAX_OUTBOUND_FRAME - overhead)}
    assert len(encode_message(fits)) == MAX_OUTBOUND_FRAME + 4
    too_big = {"type": "chat.delta", "text": "x" * (MAX_OUTBOUND_FRAME - overhead + 1)}
    with pytest.raises(FrameTooLarge):
        encode_message(too_big)


def test_encode_message_refuses_a_lone_surrogate_as_a_local_error() -> None:
    with pytest.raises(LocalError):
        encode_message({"type": "chat.delta", "text": "\ud800"})


# --- inbound limit and broken streams ------------------------------------------------------------


def test_an_inbound_declared_length_over_the_limit_breaks_the_stream() -> None:
    good = encode_message(MESSAGES[0])
    decoder = NativeFrameDecoder(max_frame=100)
    events = _decode_all(decoder, good + _header(101) + b"x" * 101 + good)
    assert events[0] == Frame(orjson.dumps(MESSAGES[0]))
    assert len(events) == 2
    assert isinstance(events[1], StreamBroken)
    assert events[1].code is ErrorCode.MESSAGE_TOO_LARGE
    assert decoder.broken


def test_nothing_is_produced_after_the_stream_broke() -> None:
    decoder = NativeFrameDecoder(max_frame=10)
    _decode_all(decoder, _header(11))
    decoder.feed(encode_frame(b"{}"))
    assert decoder.events() == []
    assert decoder.pending_bytes == 0
    assert decoder.eof() is None


def test_an_oversized_length_breaks_the_stream_from_the_header_alone() -> None:
    decoder = NativeFrameDecoder()
    events = _decode_all(decoder, _header(DEFAULT_MAX_INBOUND_FRAME + 1))
    assert _kinds(events) == [ErrorCode.MESSAGE_TOO_LARGE]


def test_a_declared_length_equal_to_the_limit_is_accepted() -> None:
    decoder = NativeFrameDecoder(max_frame=8)
    assert _decode_all(decoder, encode_frame(b"12345678")) == [Frame(b"12345678")]


def test_a_stream_truncated_inside_a_frame_is_reported_at_eof() -> None:
    frame = encode_message(MESSAGES[1])
    decoder = NativeFrameDecoder()
    assert _decode_all(decoder, frame + frame[:-3]) == [Frame(orjson.dumps(MESSAGES[1]))]
    broken = decoder.eof()
    assert broken is not None
    assert broken.code is ErrorCode.INVALID_MESSAGE
    assert str(len(frame) - 3) in broken.message
    assert decoder.broken


def test_a_stream_truncated_inside_a_header_is_reported_at_eof() -> None:
    decoder = NativeFrameDecoder()
    decoder.feed(b"\x05\x00")
    assert decoder.events() == []
    assert decoder.eof() is not None


def test_a_stream_that_ends_between_frames_ends_cleanly() -> None:
    decoder = NativeFrameDecoder()
    _decode_all(decoder, encode_message(MESSAGES[0]))
    assert decoder.eof() is None


# --- message content -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "field", "problem"),
    [
        (b'{"type": "chat.send", "text": "\xff\xfe"}', "", "invalid UTF-8 at byte 31"),
        (b"\xed\xa0\x80", "", "invalid UTF-8"),  # a surrogate encoded raw is not UTF-8
        (b"", "", "invalid JSON"),
        (b'{"type": "chat.send"', "", "invalid JSON"),
        (b'{"type": "ping", "id": NaN, "s": "\\ud800"}', "", "invalid JSON"),
        (b"[1, 2]", "", "not an array"),
        (b'"hello"', "", "not a string"),
        (b"null", "", "not null"),
        (b"{}", "type", "field required"),
        (b'{"type": 3}', "type", "must be a string, not a number"),
        (b'{"type": null}', "type", "must be a string, not null"),
    ],
)
def test_a_bad_payload_raises_invalid_message_naming_the_problem(
    payload: bytes, field: str, problem: str
) -> None:
    with pytest.raises(InvalidMessage) as info:
        decode_message(payload)
    assert info.value.field == field
    assert problem in info.value.wire_message
    assert info.value.code is ErrorCode.INVALID_MESSAGE


def test_lone_surrogates_that_orjson_refuses_are_decoded_and_kept() -> None:
    payload = b'{"type": "chat.send", "sessionId": "sp-1", "text": "cut \\ud83d here \\udc00"}'
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(payload)  # the reason for the fallback
    assert decode_message(payload) == {
        "type": "chat.send",
        "sessionId": "sp-1",
        "text": "cut \ud83d here \udc00",
    }


def test_a_lone_surrogate_payload_must_still_be_an_object_with_a_string_type() -> None:
    with pytest.raises(InvalidMessage, match="not an array"):
        decode_message(b'["\\ud800"]')
    with pytest.raises(InvalidMessage, match="type"):
        decode_message(b'{"text": "\\ud800"}')


def test_a_valid_message_decodes_to_its_object() -> None:
    for message in MESSAGES:
        assert decode_message(orjson.dumps(message)) == message


# --- peek ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b'{"type": "hello", "protocol": 2}', Peek("hello", None, 2)),
        (
            b'{"type": "chat.send", "sessionId": "sp-1", "text": "x"}',
            Peek("chat.send", "sp-1", None),
        ),
        (b'{"type": "chat.send", "sessionId": "sp-\\ud800"}', Peek("chat.send", "sp-\ud800", None)),
        (b'{"type": 1, "sessionId": 2, "protocol": "2"}', Peek(None, None, None)),
        (b'{"type": "hello", "protocol": true}', Peek("hello", None, None)),
        (b"[]", Peek(None, None, None)),
        (b"\xff", Peek(None, None, None)),
        (b"", Peek(None, None, None)),
    ],
)
def test_peek_reads_only_the_routing_fields(payload: bytes, expected: Peek) -> None:
    assert peek(payload) == expected


# --- properties ----------------------------------------------------------------------------------


@PROPERTY
@given(data=st.binary(max_size=600), cuts=st.lists(st.integers(0, 600), max_size=8))
def test_any_byte_stream_yields_the_same_frames_however_it_is_chunked(
    data: bytes, cuts: list[int]
) -> None:
    max_frame = 64
    expected, pending = _reference_events(data, max_frame)
    bounds = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    chunks = [data[a:b] for a, b in itertools.pairwise(bounds)]
    decoder = NativeFrameDecoder(max_frame=max_frame)
    started = time.monotonic()
    events = _decode_all(decoder, *chunks)
    assert time.monotonic() - started < 2.0
    assert _kinds(events) == _kinds(expected)
    assert decoder.pending_bytes == pending
    assert decoder.broken == any(isinstance(e, StreamBroken) for e in expected)


@PROPERTY
@given(
    payloads=st.lists(
        st.one_of(
            st.binary(max_size=40),
            st.sampled_from([orjson.dumps(m) for m in MESSAGES]),
        ),
        max_size=12,
    ),
    chunk=st.integers(1, 50),
)
def test_valid_frames_after_a_well_framed_bad_frame_still_arrive(
    payloads: list[bytes], chunk: int
) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    decoder = NativeFrameDecoder()
    events = _decode_all(decoder, *(stream[i : i + chunk] for i in range(0, len(stream), chunk)))
    assert events == [Frame(p) for p in payloads]
    for payload in payloads:
        try:
            message = decode_message(payload)
        except InvalidMessage:
            assert payload not in {orjson.dumps(m) for m in MESSAGES}
        else:
            assert isinstance(message["type"], str)


@PROPERTY
@given(payload=st.binary(max_size=200) | st.text(max_size=100).map(str.encode))
def test_decode_message_raises_nothing_but_invalid_message(payload: bytes) -> None:
    try:
        message = decode_message(payload)
    except InvalidMessage:
        return
    assert isinstance(message, dict)
    assert isinstance(message["type"], str)


@PROPERTY
@given(
    obj=st.dictionaries(
        st.sampled_from(["type", "sessionId", "protocol", "text"]),
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10),
    )
)
def test_peek_reads_the_type_of_any_object_and_nothing_from_a_cut_one(
    obj: dict[str, object],
) -> None:
    payload = orjson.dumps(obj)
    assert peek(payload).type == (obj["type"] if isinstance(obj.get("type"), str) else None)
    assert peek(payload[: len(payload) // 2]) == Peek(None, None, None)
