"""Fuzzing the inbound edge: arbitrary bytes from Chrome never crash the relay's rules or the wire
parser, never make the relay write a frame over 1 MiB, and valid frames after garbage still work.
"""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.relay.relay_core import RelayCore, ToDaemon, ToDaemonControl, ToExtension
from messages.codec import MAX_OUTBOUND_FRAME, Frame, NativeFrameDecoder, StreamBroken
from messages.errors import InvalidMessage
from messages.wire import parse_inbound
from tests.helpers.native_peer import RelayPeer, frame, kill_daemon

FUZZ = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
HELLO = {"type": "hello", "client": "extension", "protocol": 2, "installId": "i-1"}

# Payloads that look like protocol messages often enough to reach the interesting branches.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
message_like = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["hello", "chat.send", "session.start", "tool.result", "ping", "x", ""]
        )
        | json_values,
    },
    optional={"sessionId": json_values, "protocol": json_values, "id": json_values},
).map(orjson.dumps)
payloads = st.binary(max_size=300) | message_like


def _states(core_kind: str) -> RelayCore:
    core = RelayCore(max_buffer_frames=50)
    if core_kind in ("linked", "outage"):
        core.link_up(now=0.0)
    if core_kind == "outage":
        core.link_down()
    return core


def _check_actions(actions: list[object]) -> None:
    for action in actions:
        assert isinstance(action, ToDaemon | ToDaemonControl | ToExtension)
        if isinstance(action, ToExtension):
            assert len(action.payload) <= MAX_OUTBOUND_FRAME
            assert isinstance(orjson.loads(action.payload).get("type"), str)


@FUZZ
@given(
    garbage=st.lists(payloads, max_size=8),
    state=st.sampled_from(["connecting", "linked", "outage"]),
)
def test_well_framed_garbage_never_crashes_the_relay_and_a_valid_hello_still_goes_through(
    garbage: list[bytes], state: str
) -> None:
    core = _states(state)
    decoder = NativeFrameDecoder()
    decoder.feed(b"".join(frame(p) for p in garbage) + frame(HELLO))
    events = decoder.events()
    assert all(isinstance(e, Frame) for e in events)
    for event in events[:-1]:
        assert isinstance(event, Frame)
        _check_actions(core.from_extension(event.payload))
    last = events[-1]
    assert isinstance(last, Frame) and orjson.loads(last.payload) == HELLO
    actions = core.from_extension(last.payload)
    _check_actions(actions)
    if state == "linked":
        assert ToDaemon(last.payload) in actions
    else:  # held as a registration: sent once the link is up
        assert all(not isinstance(a, ToExtension) for a in actions)
        if state == "outage":
            assert ToDaemon(last.payload) in core.link_up(now=1.0)


@FUZZ
@given(data=st.binary(max_size=2000), cuts=st.lists(st.integers(0, 2000), max_size=6))
def test_arbitrary_bytes_in_arbitrary_chunks_never_crash_the_decoder_or_the_relay(
    data: bytes, cuts: list[int]
) -> None:
    core = _states("linked")
    decoder = NativeFrameDecoder(max_frame=1024)
    at = 0
    for cut in [*sorted(cuts), len(data)]:
        decoder.feed(data[at:cut])
        at = max(at, cut)
        for event in decoder.events():
            if isinstance(event, StreamBroken):
                assert decoder.broken
                continue
            _check_actions(core.from_extension(event.payload))
            _check_actions(core.from_daemon(event.payload, now=0.0))
    decoder.eof()
    if not decoder.broken and decoder.pending_bytes == 0:
        decoder.feed(frame(HELLO))
        events = decoder.events()
        assert events == [Frame(orjson.dumps(HELLO))]


@FUZZ
@given(payload=payloads)
def test_the_wire_parser_answers_arbitrary_payloads_with_a_message_or_invalid_message(
    payload: bytes,
) -> None:
    from messages.codec import decode_message

    problem: InvalidMessage | None = None
    try:
        parse_inbound(decode_message(payload))
    except InvalidMessage as exc:  # includes UnknownMessageType
        problem = exc
    assert problem is None or problem.wire_message  # safe text for the peer


# -- the real relay process ---------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "browy"
    home.mkdir()
    yield home
    kill_daemon(home)


async def _frames_until_exit(relay: RelayPeer, timeout: float) -> list[bytes]:
    """Every frame the relay writes until stdout closes (each checked against the 1 MiB cap)."""
    assert relay.proc.stdout is not None
    out: list[bytes] = []
    async with asyncio.timeout(timeout):
        while True:
            try:
                header = await relay.proc.stdout.readexactly(4)
            except asyncio.IncompleteReadError as exc:
                torn = exc.partial
                break
            (length,) = struct.unpack("<I", header)
            assert length <= MAX_OUTBOUND_FRAME
            out.append(await relay.proc.stdout.readexactly(length))
    assert torn == b""  # never a torn frame
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
async def test_random_bytes_into_the_relay_process_then_a_hello_answer_or_exit_cleanly(
    home: Path, seed: int
) -> None:
    rng = random.Random(seed)
    junk = [rng.randbytes(rng.randrange(0, 200)) for _ in range(20)]
    relay = await RelayPeer.start(home)
    try:
        # Well-framed garbage: reported or ignored, and the hello after it is answered.
        await relay.send(b"".join(frame(j) for j in junk), raw=True)
        await relay.send(HELLO)
        ack, _ = await relay.recv_until("hello.ack", timeout=20.0)
        assert ack["protocol"] == 2
        # Then raw random bytes (any declared length): the relay answers or ends, cleanly.
        await relay.send(rng.randbytes(4096) + frame(HELLO), raw=True)
        await relay.close_stdin()
        frames = await _frames_until_exit(relay, timeout=20.0)
        for payload in frames:
            assert isinstance(orjson.loads(payload), dict)
        assert await relay.wait_exit(10.0) in (0, 1, 3)
    finally:
        await relay.kill()
