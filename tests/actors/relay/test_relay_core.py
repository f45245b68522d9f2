"""The relay's rules (protocol.md section 6), step by step, with no I/O."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from actors.relay.relay_core import (
    INITIAL_PUSH_TYPES,
    SWALLOW_WINDOW_S,
    IllegalTransition,
    LinkState,
    NoteEnded,
    RelayCore,
    ToDaemon,
    ToDaemonControl,
    ToExtension,
)


def j(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj)


HELLO_V1 = j({"type": "hello", "client": "extension", "protocol": 1})
HELLO_V2 = j({"type": "hello", "client": "extension", "protocol": 2, "installId": "i1"})


def start(sid: str) -> bytes:
    return j({"type": "session.start", "sessionId": sid, "capabilities": ["cdp.activeTab"]})


def sent_to_extension(actions: list[Any]) -> list[dict[str, Any]]:
    return [orjson.loads(a.payload) for a in actions if isinstance(a, ToExtension)]


def linked(hello: bytes = HELLO_V1, *sessions: str, answered: bool = True) -> RelayCore:
    """A relay linked with ``hello`` and ``sessions`` registered — and, unless ``answered`` is
    false, answered by the daemon (its hello.ack and each session.ready passed to Chrome)."""
    core = RelayCore()
    core.from_extension(hello)
    for sid in sessions:
        core.from_extension(start(sid))
    core.link_up(now=0.0)
    if answered:
        assert core.from_daemon(j({"type": "hello.ack", "protocol": 1}), now=0.0)
        for sid in sessions:
            ready = j({"type": "session.ready", "sessionId": sid, "capabilities": []})
            assert core.from_daemon(ready, now=0.0)
    return core


def test_what_arrives_before_the_first_handshake_is_held_then_forwarded_in_order() -> None:
    core = RelayCore()
    frames = [HELLO_V1, start("sp-1"), j({"type": "chat.send", "sessionId": "sp-1", "text": "hi"})]
    for frame in frames:
        assert core.from_extension(frame) == []
    assert core.link_up(now=0.0) == [ToDaemon(f) for f in frames]
    assert core.state is LinkState.LINKED


def test_frames_flow_untouched_both_ways_while_linked() -> None:
    core = linked()
    msg = j({"type": "chat.send", "sessionId": "sp-1", "text": "x" * 10})
    assert core.from_extension(msg) == [ToDaemon(msg)]
    reply = j({"type": "chat.delta", "sessionId": "sp-1", "text": "y"})
    assert core.from_daemon(reply, now=1.0) == [ToExtension(reply)]


def test_a_chat_send_during_an_outage_gets_a_v1_error_then_status_error() -> None:
    core = linked(HELLO_V1, "sp-1")
    core.link_down()
    out = sent_to_extension(
        core.from_extension(j({"type": "chat.send", "sessionId": "sp-1", "text": "hi"}))
    )
    assert [m["type"] for m in out] == ["chat.error", "event.activity"]
    assert out[0]["code"] == "internal"
    assert out[0]["sessionId"] == "sp-1"
    assert out[1] == {"type": "event.activity", "sessionId": "sp-1", "event": "status.error"}


def test_a_v2_chat_send_during_an_outage_says_connection_lost() -> None:
    core = linked(HELLO_V2, "sp-1")
    core.link_down()
    out = sent_to_extension(
        core.from_extension(j({"type": "chat.send", "sessionId": "sp-1", "text": "hi"}))
    )
    assert out[0]["code"] == "CONNECTION_LOST"


def test_other_v2_requests_during_an_outage_get_a_connection_lost_error() -> None:
    core = linked(HELLO_V2, "sp-1")
    core.link_down()
    out = sent_to_extension(core.from_extension(j({"type": "chat.list"})))
    assert out == [
        {
            "type": "error",
            "code": "CONNECTION_LOST",
            "message": out[0]["message"],
            "requestType": "chat.list",
        }
    ]


def test_v1_requests_other_than_chat_send_get_no_v2_only_frame_during_an_outage() -> None:
    core = linked(HELLO_V1, "sp-1")
    core.link_down()
    assert core.from_extension(j({"type": "chat.list"})) == []
    assert core.from_extension(j({"type": "models.list"})) == []


def test_answers_to_host_requests_are_dropped_during_an_outage() -> None:
    core = linked(HELLO_V2, "sp-1")
    core.link_down()
    answer = j({"type": "tool.result", "sessionId": "sp-1", "callId": "c1", "ok": True})
    assert core.from_extension(answer) == []


def test_download_news_during_an_outage_is_dropped_without_an_error_frame() -> None:
    core = linked(HELLO_V2, "sp-1")
    core.link_down()
    done = {"type": "download.done", "downloadId": 1, "state": "complete", "filename": "/d/a"}
    assert core.from_extension(j(done)) == []
    assert core.from_extension(j({"type": "download.started", "downloadId": 2})) == []


def test_a_v2_ping_during_an_outage_is_answered_by_the_relay() -> None:
    core = linked(HELLO_V2)
    core.link_down()
    assert sent_to_extension(core.from_extension(j({"type": "ping", "id": 7}))) == [
        {"type": "pong", "id": 7}
    ]


def test_after_a_reconnect_only_the_registrations_are_sent_again() -> None:
    core = linked(HELLO_V1, "sp-1", "dt-2")
    core.from_extension(j({"type": "chat.send", "sessionId": "sp-1", "text": "click it"}))
    core.link_down()
    resent = [a for a in core.link_up(now=100.0) if isinstance(a, ToDaemon)]
    assert resent == [ToDaemon(HELLO_V1), ToDaemon(start("sp-1")), ToDaemon(start("dt-2"))]


def test_an_ended_session_is_not_registered_again() -> None:
    core = linked(HELLO_V1, "sp-1", "dt-2")
    core.from_extension(j({"type": "session.end", "sessionId": "sp-1"}))
    core.link_down()
    assert core.link_up(now=5.0) == [ToDaemon(HELLO_V1), ToDaemon(start("dt-2"))]


def test_the_direct_replies_to_re_sent_registrations_are_swallowed_and_nothing_else() -> None:
    core = linked(HELLO_V1, "sp-1")
    core.link_down()
    core.link_up(now=10.0)
    replies = [
        j({"type": "hello.ack", "protocol": 1, "serverVersion": "x"}),
        j({"type": "session.ready", "sessionId": "sp-1", "model": "m", "capabilities": []}),
        *[j({"type": kind}) for kind in INITIAL_PUSH_TYPES],
    ]
    cut_turn_end = j({"type": "chat.error", "sessionId": "sp-1", "message": "cut"})
    for reply in replies:
        assert core.from_daemon(reply, now=10.5) == []
    assert core.from_daemon(cut_turn_end, now=10.6) == [ToExtension(cut_turn_end)]
    # A second models.list is the answer to a user's request: forwarded.
    later = j({"type": "models.list", "models": []})
    assert core.from_daemon(later, now=11.0) == [ToExtension(later)]


def test_replies_to_registrations_made_during_the_outage_are_forwarded() -> None:
    core = linked(HELLO_V1, "sp-1")
    core.link_down()
    assert core.from_extension(start("sp-new")) == []
    resent = core.link_up(now=1.0)
    assert ToDaemon(start("sp-new")) in resent
    ready_new = j({"type": "session.ready", "sessionId": "sp-new", "capabilities": []})
    assert core.from_daemon(ready_new, now=1.1) == [ToExtension(ready_new)]
    ready_old = j({"type": "session.ready", "sessionId": "sp-1", "capabilities": []})
    assert core.from_daemon(ready_old, now=1.2) == []


def test_registrations_the_lost_link_never_answered_get_their_replies_after_the_reconnect() -> None:
    # The hello and a session.start went out on the first link, which dropped before their
    # replies: Chrome is still waiting for them (its hello timer would kill the relay).
    core = linked(HELLO_V2, "sp-1", "sp-2", answered=False)
    ready_2 = j({"type": "session.ready", "sessionId": "sp-2", "capabilities": []})
    assert core.from_daemon(ready_2, now=0.1) == [ToExtension(ready_2)]  # sp-2 was answered
    core.link_down()
    resent = core.link_up(now=1.0)
    assert resent[:3] == [ToDaemon(HELLO_V2), ToDaemon(start("sp-1")), ToDaemon(start("sp-2"))]
    ack = j({"type": "hello.ack", "protocol": 2})
    ready_1 = j({"type": "session.ready", "sessionId": "sp-1", "capabilities": []})
    assert core.from_daemon(ack, now=1.1) == [ToExtension(ack)]
    assert core.from_daemon(ready_1, now=1.2) == [ToExtension(ready_1)]
    assert core.from_daemon(ready_2, now=1.3) == []  # answered before: its repeat is swallowed
    # Answered now: after the next drop, both replies are swallowed again.
    core.link_down()
    core.link_up(now=2.0)
    assert core.from_daemon(ack, now=2.1) == []
    assert core.from_daemon(ready_1, now=2.2) == []


def test_expected_replies_that_never_come_stop_being_expected() -> None:
    core = linked(HELLO_V1, "sp-1")
    core.link_down()
    core.link_up(now=0.0)
    ack = j({"type": "hello.ack", "protocol": 1})
    assert core.from_daemon(ack, now=SWALLOW_WINDOW_S + 1) == [ToExtension(ack)]


def test_a_full_cold_start_buffer_answers_like_an_outage_instead_of_growing() -> None:
    core = RelayCore(max_buffer_frames=2)
    core.from_extension(HELLO_V2)
    core.from_extension(start("sp-1"))
    out = sent_to_extension(
        core.from_extension(j({"type": "chat.send", "sessionId": "sp-1", "text": "hi"}))
    )
    assert [m["type"] for m in out] == ["chat.error", "event.activity"]


def test_giving_up_closes_and_a_closed_core_cannot_link_again() -> None:
    core = linked()
    core.link_down()
    core.give_up()
    assert core.state is LinkState.CLOSED
    with pytest.raises(IllegalTransition):
        core.link_up(now=0.0)


def test_garbage_from_the_extension_never_raises() -> None:
    core = linked(HELLO_V2)
    core.link_down()
    for junk in (b"", b"\xff\xfe", b"[1,2]", b'{"type": 5}', b"null"):
        assert isinstance(core.from_extension(junk), list)


def test_a_turn_in_flight_when_the_link_drops_is_ended_by_the_relay_exactly_once() -> None:
    core = linked(HELLO_V2, "sp-1", "sp-2")
    core.from_extension(j({"type": "chat.send", "sessionId": "sp-1", "text": "go"}))
    core.from_extension(j({"type": "chat.send", "sessionId": "sp-2", "text": "go"}))
    # sp-2's turn ended normally before the drop.
    core.from_daemon(j({"type": "chat.done", "sessionId": "sp-2", "text": "ok"}), now=1.0)
    actions = core.link_down()
    out = sent_to_extension(actions)
    assert [(m["type"], m["sessionId"]) for m in out] == [
        ("chat.error", "sp-1"),
        ("event.activity", "sp-1"),
    ]
    assert out[0]["code"] == "CONNECTION_LOST"
    # After the end, a mark for a later daemon (kept on disk by the shell).
    assert actions[-1] == NoteEnded("sp-1", None)
    assert core.link_down() == []  # a second drop ends nothing twice


def test_after_a_reconnect_the_daemon_is_told_which_turns_the_relay_ended() -> None:
    core = linked(HELLO_V1, "sp-1")
    core.from_extension(j({"type": "chat.send", "sessionId": "sp-1", "text": "go"}))
    core.link_down()
    resent = core.link_up(now=2.0)
    assert resent[0] == ToDaemonControl("turns_ended", {"sessions": ["sp-1"]})
    assert resent[1:] == [ToDaemon(HELLO_V1), ToDaemon(start("sp-1"))]
    core.link_down()
    assert not any(isinstance(a, ToDaemonControl) for a in core.link_up(now=3.0))
