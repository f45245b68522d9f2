"""What a turn sends stays under Chrome's 1 MiB frame limit, whatever the model streams."""

from __future__ import annotations

import pytest

from actors.agent.wire_shapes import split_delta, trim_args
from messages.codec import MAX_OUTBOUND_FRAME
from messages.wire import dump_outbound
from messages.wire_outbound import ChatDelta, ChatToolCall


@pytest.mark.parametrize("char", ["a", "\x01", '"', "\u20ac", "\U0001f600", "\ud800"])
def test_every_delta_piece_of_a_huge_answer_fits_one_frame(char: str) -> None:
    text = char * (700 * 1024)
    pieces = split_delta(text)
    assert "".join(pieces) == text
    for piece in pieces:
        assert len(dump_outbound(ChatDelta(session_id="sp-1", text=piece))) <= MAX_OUTBOUND_FRAME


def test_tool_call_arguments_for_the_panel_are_trimmed_with_a_marker() -> None:
    args = {"text": "\x01" * 2_000_000, "items": list(range(10_000))}
    shown = trim_args(args)
    assert "more]" in shown["text"]
    msg = ChatToolCall(session_id="sp-1", call_id="c", tool="type_index", args=shown)
    assert len(dump_outbound(msg)) <= MAX_OUTBOUND_FRAME
