"""The relay/CLI <-> daemon link framing (protocol.md section 6)."""

import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from messages.codec import StreamBroken
from messages.errors import ErrorCode, FrameTooLarge, LocalError
from messages.link import (
    LINK_MAX_FRAME,
    LinkControl,
    LinkData,
    LinkDecoder,
    LinkEnvelope,
    LinkHello,
    LinkRefused,
    LinkWelcome,
    encode_link,
)

ENVELOPES: list[LinkEnvelope] = [
    LinkHello(
        min_version=1,
        max_version=1,
        role="relay",
        origin="chrome-extension://abcdefghijklmnopabcdefghijklmnop/",
        pid=4242,
        package_version="0.1.0",
        token="t0k",
    ),
    LinkHello(min_version=1, max_version=3, role="cli", origin="", pid=7, package_version="0.2"),
    LinkWelcome(version=1, daemon_version="0.1.0", daemon_pid=99),
    LinkRefused(code="PROTOCOL_MISMATCH", message="no common link version"),
    LinkData(b'{"type":"chat.send","sessionId":"sp-1","text":"h\xc3\xa9"}'),
    LinkData(b""),
    LinkControl(op="shutdown_when_idle"),
    LinkControl(op="status", args={"verbose": True, "n": [1, 2]}),
]


def _frame(body: object) -> bytes:
    packed: bytes = msgpack.packb(body, use_bin_type=True)
    return struct.pack("<I", len(packed)) + packed


def _decode(*chunks: bytes, max_frame: int = LINK_MAX_FRAME) -> list[LinkEnvelope | StreamBroken]:
    decoder = LinkDecoder(max_frame)
    events: list[LinkEnvelope | StreamBroken] = []
    for chunk in chunks:
        decoder.feed(chunk)
        events.extend(decoder.events())
    return events


def test_the_link_frame_limit_is_64_mib_plus_64_kib() -> None:
    assert LINK_MAX_FRAME == 64 * 1024 * 1024 + 64 * 1024


@pytest.mark.parametrize("envelope", ENVELOPES, ids=lambda e: type(e).__name__)
def test_every_envelope_round_trips(envelope: LinkEnvelope) -> None:
    assert _decode(encode_link(envelope)) == [envelope]


def test_a_link_stream_split_at_every_byte_boundary_decodes_the_same() -> None:
    stream = b"".join(encode_link(e) for e in ENVELOPES)
    for cut in range(len(stream) + 1):
        assert _decode(stream[:cut], stream[cut:]) == ENVELOPES, cut


def test_link_data_carries_the_extension_bytes_untouched_as_msgpack_bin() -> None:
    raw = b'{"type":"chat.send","text":"\\ud800"}\xff not even utf-8'
    frame = encode_link(LinkData(raw))
    body = msgpack.unpackb(frame[4:], raw=True)
    assert body[b"payload"] == raw
    assert isinstance(body[b"payload"], bytes)
    assert _decode(frame) == [LinkData(raw)]


def test_a_hello_without_a_token_decodes_with_token_none() -> None:
    body = {
        "t": "hello",
        "min_version": 1,
        "max_version": 1,
        "role": "mcp",
        "origin": "",
        "pid": 1,
        "package_version": "0.1.0",
    }
    [hello] = _decode(_frame(body))
    assert isinstance(hello, LinkHello)
    assert hello.token is None


def test_extra_envelope_keys_from_a_newer_peer_are_ignored() -> None:
    assert _decode(_frame({"t": "data", "payload": b"{}", "zstd": False})) == [LinkData(b"{}")]


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(b"\xc1", id="not msgpack"),
        pytest.param(msgpack.packb([1, 2]), id="not a map"),
        pytest.param(msgpack.packb({"t": "teleport"}), id="unknown type"),
        pytest.param(msgpack.packb({"payload": b"{}"}), id="no type"),
        pytest.param(msgpack.packb({"t": "data"}), id="missing field"),
        pytest.param(msgpack.packb({"t": "data", "payload": "{}"}), id="str instead of bin"),
        pytest.param(
            msgpack.packb(
                {"t": "welcome", "version": True, "daemon_version": "x", "daemon_pid": 1}
            ),
            id="bool instead of int",
        ),
        pytest.param(msgpack.packb({"t": "control", "op": "x", "args": {1: 2}}), id="int map key"),
        pytest.param(msgpack.packb({"t": "data", "payload": b"{}"}) + b"\x00", id="trailing byte"),
        pytest.param(b"", id="empty frame"),
    ],
)
def test_a_garbled_envelope_breaks_the_link_and_nothing_follows(garbage: bytes) -> None:
    good = encode_link(LinkData(b'{"type":"ping","id":1}'))
    frame = struct.pack("<I", len(garbage)) + garbage
    events = _decode(good + frame + good)
    assert events[0] == LinkData(b'{"type":"ping","id":1}')
    assert len(events) == 2
    broken = events[1]
    assert isinstance(broken, StreamBroken)
    assert broken.code is ErrorCode.INVALID_MESSAGE


def test_a_broken_link_decoder_ignores_further_input() -> None:
    decoder = LinkDecoder()
    decoder.feed(_frame({"t": "nope"}))
    assert len(decoder.events()) == 1
    assert decoder.broken
    decoder.feed(encode_link(LinkData(b"{}")))
    assert decoder.events() == []
    assert decoder.pending_bytes == 0
    assert decoder.eof() is None


def test_a_link_frame_over_the_limit_breaks_the_link() -> None:
    events = _decode(encode_link(LinkData(b"x" * 100)), max_frame=64)
    assert len(events) == 1
    assert isinstance(events[0], StreamBroken)
    assert events[0].code is ErrorCode.MESSAGE_TOO_LARGE


def test_a_link_truncated_inside_a_frame_is_reported_at_eof() -> None:
    decoder = LinkDecoder()
    decoder.feed(encode_link(ENVELOPES[0])[:-1])
    assert decoder.events() == []
    assert decoder.pending_bytes > 0
    assert decoder.eof() is not None


def test_encode_link_refuses_a_frame_over_the_limit_before_producing_it() -> None:
    with pytest.raises(FrameTooLarge):
        encode_link(LinkData(b"x" * 100), max_frame=64)


def test_encode_link_reports_unencodable_control_args_as_a_local_error() -> None:
    with pytest.raises(LocalError):
        encode_link(LinkControl(op="x", args={"f": object()}))


@settings(deadline=None, max_examples=200)
@given(data=st.binary(max_size=400), chunk=st.integers(1, 64))
def test_any_byte_stream_yields_envelopes_or_one_break_without_raising(
    data: bytes, chunk: int
) -> None:
    events = _decode(*(data[i : i + chunk] for i in range(0, len(data), chunk)), max_frame=256)
    broken = [e for e in events if isinstance(e, StreamBroken)]
    assert len(broken) <= 1
    if broken:
        assert events[-1] is broken[0]
