"""The session store: journal round trips, torn tails, cut turns, history limits, retention."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from actors.store.chat import MEMORY_TURNS, Chat
from actors.store.chat_store import ChatStore
from actors.store.chat_turns import TurnStateError
from actors.store.chat_views import INTERRUPTED_RESULT, build_history_page, join_context
from actors.store.journal import safe_name
from actors.store.journal_records import StoreError, encode_record, scan_records
from messages.codec import MAX_OUTBOUND_FRAME, encode_frame
from messages.wire import dump_outbound
from messages.wire_outbound import ChatHistoryResult, ChatListResult


class Clock:
    """A settable clock (seconds), so timestamps and ages are exact."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_store(root: Path, **kwargs: Any) -> ChatStore:
    kwargs.setdefault("fsync", False)
    kwargs.setdefault("clock", Clock())
    return ChatStore(root, **kwargs)


CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "click_index", "arguments": '{"index": 3}'},
    "extra_content": {"google": {"thought_signature": "c2ln"}},  # provider-opaque: echo exactly
}


async def whole_turn(chat: Chat, turn_id: str = "t1", text: str = "Book a table") -> None:
    chat.begin_turn(turn_id, text, "<page url='https://x.test'>")
    chat.assistant(turn_id, "Clicking.", [CALL], {"reasoning_content": "think", "n": 1.5})
    chat.tool_call(turn_id, "call_1", "click_index", {"index": 3}, page_changing=True)
    chat.tool_result(turn_id, "call_1", "ok", "clicked Reserve", "Clicked element 3.")
    chat.usage(turn_id, 120, 30)
    chat.assistant(turn_id, "Done: table booked.", None, None)
    chat.usage(turn_id, 200, 10)
    await chat.end_turn(turn_id, "done", "Clicking.\n\nDone: table booked.")


def expected_rows(text: str = "Book a table") -> list[dict[str, Any]]:
    return [
        {"role": "user", "text": text},
        {"role": "tool", "name": "click_index", "ok": True, "summary": "clicked Reserve"},
        {"role": "assistant", "text": "Clicking.\n\nDone: table booked."},
    ]


def without_timestamps(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows without their times (and without the user rows' turn ids, tested apart)."""
    return [{k: v for k, v in row.items() if k not in ("timestamp", "turnId")} for row in rows]


def assert_valid_openai(messages: list[dict[str, Any]]) -> None:
    """Typed as the openai SDK's request messages, and every tool call answered in order."""
    from openai.types.chat import ChatCompletionMessageParam

    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(messages)
    waiting: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert waiting, "a tool message must answer a pending call"
            assert message["tool_call_id"] == waiting.pop(0)
            continue
        assert not waiting, f"calls {waiting} were left unanswered"
        if message["role"] == "assistant":
            waiting = [c["id"] for c in message.get("tool_calls", [])]
    assert not waiting


def wire_history(chat_id: str, rows: list[dict[str, Any]]) -> ChatHistoryResult:
    """The store's rows as the wire model (validation is part of the check)."""
    return ChatHistoryResult.model_validate({"id": chat_id, "messages": rows, "hasMore": True})


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def journal_path(root: Path, scope: str, chat_id: str) -> Path:
    return root / safe_name(scope) / f"{safe_name(chat_id)}.journal"


# --- round trips ----------------------------------------------------------------------------------


async def test_a_whole_turn_round_trips_through_info_history_and_model_messages(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    chat = store.chat("default", "sp-1")
    await whole_turn(chat)

    page = store.history("default", "sp-1")
    assert without_timestamps(page.rows) == expected_rows()
    assert (page.has_more, page.omitted) == (False, 0)
    info = chat.info
    assert (info.input_tokens, info.output_tokens, info.turns) == (320, 40, 1)
    assert (info.interrupted, info.last_error, info.summary) == (False, None, "Book a table")
    assert chat.model_messages() == [
        {"role": "user", "content": join_context("Book a table", "<page url='https://x.test'>")},
        {
            "role": "assistant",
            "content": "Clicking.",
            "reasoning_content": "think",
            "n": 1.5,
            "tool_calls": [CALL],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Clicked element 3."},
        {"role": "assistant", "content": "Done: table booked."},
    ]
    await store.close()


async def test_a_new_store_on_the_same_directory_shows_everything_after_a_restart(
    tmp_path: Path,
) -> None:
    first = make_store(tmp_path)
    chat = first.chat("install-a", "sp-1")
    await whole_turn(chat)
    before = (chat.info, chat.model_messages(), first.history("install-a", "sp-1"))
    await first.close()

    second = make_store(tmp_path)
    again = second.chat("install-a", "sp-1")
    assert (again.info, again.model_messages(), second.history("install-a", "sp-1")) == before
    assert [c.id for c in second.list_chats("install-a")] == ["sp-1"]
    # Appending continues on the reopened journal.
    await whole_turn(again, "t2", "And a taxi")
    assert again.info.turns == 2
    await second.close()


async def test_chat_list_is_newest_first_with_trimmed_summaries_and_a_wire_shape(
    tmp_path: Path,
) -> None:
    clock = Clock()
    store = make_store(tmp_path, clock=clock)
    long_text = "word " * 40
    await whole_turn(store.chat("default", "old"), text=long_text)
    clock.now += 60
    await whole_turn(store.chat("default", "new"), text="  short\n text ")
    store.chat("default", "empty")  # opened, never used: not listed, nothing on disk

    infos = store.list_chats("default")
    assert [i.id for i in infos] == ["new", "old"]
    assert infos[0].summary == "short text"
    old_summary = infos[1].summary
    assert old_summary is not None
    assert len(old_summary) <= 80
    assert old_summary.endswith("…")
    assert not journal_path(tmp_path, "default", "empty").exists()
    wire = ChatListResult.model_validate({"chats": [i.as_summary() for i in infos]})
    assert orjson.loads(dump_outbound(wire))["chats"][0] == {
        "id": "new",
        "summary": "short text",
        "startTime": infos[0].created_ms,
        "modifiedTime": infos[0].modified_ms,
    }
    assert store.list_chats("other-install") == []
    await store.close()


# --- torn tails -----------------------------------------------------------------------------------


async def test_a_journal_cut_at_every_byte_of_its_last_record_keeps_every_whole_record(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path / "src")
    chat = store.chat("default", "sp-1")
    await whole_turn(chat)
    full = journal_path(tmp_path / "src", "default", "sp-1").read_bytes()
    records, good = scan_records(full)
    assert good == len(full)
    last_start = len(full) - len(encode_record(records[-1])[0])

    for cut in range(last_start, len(full)):
        root = tmp_path / f"cut{cut}"
        path = journal_path(root, "default", "sp-1")
        path.parent.mkdir(parents=True)
        path.write_bytes(full[:cut])
        reopened = make_store(root).chat("default", "sp-1")
        assert path.stat().st_size == last_start  # the torn record was cut off the file
        assert scan_records(path.read_bytes())[0] == records[:-1]
        cut_turn = reopened.cut_turn()  # the end record was the one torn: the turn was cut
        assert cut_turn is not None
        assert cut_turn.turn_id == "t1"


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00",
        b"\xff\xff\xff\xff garbage",
        b"\x05\x00\x00\x00hello\x00\x00\x00\x00",  # plausible length, wrong CRC
        os.urandom(300),
    ],
    ids=["one-byte", "huge-length", "bad-crc", "random"],
)
async def test_garbage_after_the_last_record_is_cut_and_appending_continues(
    tmp_path: Path, garbage: bytes
) -> None:
    store = make_store(tmp_path)
    await whole_turn(store.chat("default", "sp-1"))
    await store.close()
    path = journal_path(tmp_path, "default", "sp-1")
    good = path.read_bytes()
    path.write_bytes(good + garbage)

    reopened = make_store(tmp_path)
    chat = reopened.chat("default", "sp-1")
    assert path.read_bytes() == good
    assert without_timestamps(reopened.history("default", "sp-1").rows) == expected_rows()
    await whole_turn(chat, "t2", "Next")
    await reopened.close()
    assert make_store(tmp_path).chat("default", "sp-1").info.turns == 2


# --- cut turns and turn ids -----------------------------------------------------------------------


async def test_a_turn_cut_by_a_restart_is_interrupted_and_gets_an_interrupted_row(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    chat = store.chat("default", "sp-1")
    chat.begin_turn("t1", "Submit the form", None)
    chat.assistant("t1", "", [CALL], None)
    chat.tool_call("t1", "call_1", "click_index", {"index": 3}, page_changing=True)
    assert not chat.info.interrupted  # running here, not cut
    assert chat.cut_turn() is None
    # The daemon dies here: no tool result, no end.

    restarted = make_store(tmp_path)
    again = restarted.chat("default", "sp-1")
    assert again.info.interrupted
    assert without_timestamps(restarted.history("default", "sp-1").rows) == [
        {"role": "user", "text": "Submit the form"},
        {
            "role": "tool",
            "name": "click_index",
            "ok": False,
            "summary": "interrupted: outcome unknown",
        },
        {"role": "assistant", "text": "(interrupted)"},
    ]
    cut = again.cut_turn()
    assert cut is not None
    assert (cut.turn_id, cut.user_text, cut.text) == ("t1", "Submit the form", "")
    assert [(p.call_id, p.name, p.page_changing) for p in cut.pending_calls] == [
        ("call_1", "click_index", True)
    ]
    outcome = again.find_turn("t1")
    assert outcome is not None
    assert (outcome.ended, outcome.outcome) == (False, "interrupted")

    again.mark_ended("t1", "interrupted", "CONNECTION_LOST", "the daemon restarted")
    assert again.cut_turn() is None
    assert again.info.interrupted  # still shown as interrupted, never resumed
    ended = again.find_turn("t1")
    assert ended is not None
    assert (ended.ended, ended.code) == (True, "CONNECTION_LOST")
    with pytest.raises(TurnStateError):
        again.mark_ended("t1", "interrupted")
    # A new turn may start; it completes normally and clears the mark.
    await whole_turn(again, "t2", "Try again")
    assert not again.info.interrupted
    await restarted.close()
    assert make_store(tmp_path).chat("default", "sp-1").cut_turn() is None


async def test_find_turn_returns_the_stored_outcome_even_after_a_restart(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = store.chat("inst", "sp-1")
    chat.begin_turn("turn-ok", "hi", None)
    chat.assistant("turn-ok", "Hello!", None, None)
    await chat.end_turn("turn-ok", "done", "Hello!")
    chat.begin_turn("turn-bad", "fail please", None)
    await chat.end_turn("turn-bad", "error", "", code="MODEL_ERROR", message="provider down")
    assert chat.find_turn("unknown") is None
    await store.close()

    chat = make_store(tmp_path).chat("inst", "sp-1")
    ok, bad = chat.find_turn("turn-ok"), chat.find_turn("turn-bad")
    assert ok is not None
    assert (ok.ended, ok.outcome, ok.text, ok.code) == (True, "done", "Hello!", None)
    assert bad is not None
    assert (bad.outcome, bad.code, bad.message) == ("error", "MODEL_ERROR", "provider down")
    assert chat.info.last_error == "provider down"
    with pytest.raises(TurnStateError):
        chat.begin_turn("turn-ok", "resent", None)  # a resend never starts a second turn


async def test_records_out_of_a_turns_order_are_refused(tmp_path: Path) -> None:
    chat = make_store(tmp_path).chat("default", "sp-1")
    with pytest.raises(TurnStateError):
        chat.tool_call("nope", "c", "click_index", {}, page_changing=True)
    chat.begin_turn("t1", "hi", None)
    with pytest.raises(TurnStateError):
        chat.begin_turn("t2", "a second turn at once", None)
    await chat.end_turn("t1", "done", "")
    with pytest.raises(TurnStateError):
        chat.assistant("t1", "late", None, None)
    with pytest.raises(TurnStateError):
        await chat.end_turn("t1", "done", "")


# --- model context --------------------------------------------------------------------------------


async def test_model_messages_stay_valid_openai_with_dangling_and_unfinished_turns(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    chat = store.chat("default", "sp-1")
    await whole_turn(chat)
    # Turn 2: two parallel calls, one answered, then the daemon dies.
    second = {**CALL, "id": "call_2"}
    third = {
        "id": "call_3",
        "type": "function",
        "function": {"name": "navigate", "arguments": "{}"},
    }
    chat.begin_turn("t2", "Pay", "ctx")
    chat.assistant("t2", "", [second, third], None)
    chat.tool_call("t2", "call_2", "click_index", {"index": 1}, page_changing=True)
    chat.tool_result("t2", "call_2", "ok", "clicked", "ok")
    chat.tool_call("t2", "call_3", "navigate", {"url": "https://pay.test"}, page_changing=True)

    messages = make_store(tmp_path).chat("default", "sp-1").model_messages()
    assert_valid_openai(messages)
    assert messages[-3:] == [
        {"role": "tool", "tool_call_id": "call_2", "content": "ok"},
        {"role": "tool", "tool_call_id": "call_3", "content": INTERRUPTED_RESULT},
        {"role": "assistant", "content": "(interrupted)"},
    ]
    assert messages[5]["tool_calls"] == [second, third]  # provider fields echoed exactly

    # A live turn in progress ends with its tool results, ready for the next model call.
    live = make_store(tmp_path / "live").chat("default", "sp-1")
    live.begin_turn("t1", "Go", None)
    live.assistant("t1", "", [CALL], None)
    live.tool_call("t1", "call_1", "click_index", {"index": 3}, page_changing=True)
    live.tool_result("t1", "call_1", "unknown", "no answer", "outcome unknown")
    assert live.model_messages()[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "outcome unknown",
    }
    assert_valid_openai(live.model_messages())


async def test_a_turn_that_ends_without_a_final_answer_is_closed_for_the_model(
    tmp_path: Path,
) -> None:
    chat = make_store(tmp_path).chat("default", "sp-1")
    chat.begin_turn("t1", "Do it", None)
    chat.assistant("t1", "Working", [CALL], None)
    chat.tool_call("t1", "call_1", "click_index", {"index": 3}, page_changing=True)
    await chat.end_turn("t1", "cancelled", "Working")
    chat.begin_turn("t2", "Again", None)
    await chat.end_turn("t2", "error", "", code="MODEL_ERROR", message="quota")
    messages = chat.model_messages()
    assert_valid_openai(messages)
    assert [m["content"] for m in messages if m["role"] == "assistant"] == [
        "Working",
        "(cancelled)",
        "(error: quota)",
    ]
    rows = make_store(tmp_path).history("default", "sp-1").rows
    assert [r["text"] for r in rows if r["role"] == "assistant"] == [
        "Working\n\n(cancelled)",
        "(error: quota)",
    ]


# --- history: 1 MiB and paging --------------------------------------------------------------------


async def test_a_huge_chats_history_drops_oldest_turns_first_behind_a_marker_row(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    chat = store.chat("default", "sp-1")
    body = "x" * 20_000
    for n in range(120):  # about 5 MB of rows
        chat.begin_turn(f"t{n}", f"question {n} {body}", None)
        chat.tool_call(f"t{n}", f"c{n}", "extract_text", {}, page_changing=False)
        chat.tool_result(f"t{n}", f"c{n}", "ok", "read the page", "text")
        await chat.end_turn(f"t{n}", "done", f"answer {n} {body}")

    page = store.history("default", "sp-1")
    frame = encode_frame(dump_outbound(wire_history("sp-1", page.rows)))
    assert len(frame) <= MAX_OUTBOUND_FRAME
    assert len(frame) <= 900_000 + 4
    assert page.rows[0] == {
        "role": "assistant",
        "text": f"({page.omitted} older messages not shown)",
    }
    assert page.omitted % 3 == 0  # whole turns were dropped
    assert page.rows[1]["text"].startswith(f"question {page.omitted // 3} ")
    assert page.rows[-1]["text"].startswith("answer 119 ")
    assert len(page.rows) - 1 + page.omitted == 360
    assert page.has_more


def test_a_single_row_bigger_than_the_limit_is_clipped_to_fit() -> None:
    rows = [{"role": "user", "text": "\x01" * 2_000_000, "timestamp": 1}]  # escapes to 6 bytes
    rows.append({"role": "assistant", "text": "ok", "timestamp": 2})
    page = build_history_page("sp-1", [(1, rows)])
    encoded = dump_outbound(wire_history("sp-1", page.rows))
    assert len(encoded) <= 900_000
    assert page.rows[0]["text"].endswith("… (trimmed)")
    assert page.omitted == 0


async def test_v2_paging_walks_back_through_every_turn_once(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = store.chat("inst", "sp-1")
    for n in range(7):
        chat.begin_turn(f"t{n}", f"q{n}", None)
        await chat.end_turn(f"t{n}", "done", f"a{n}")

    seen: list[str] = []
    before: int | None = None
    while True:
        page = store.history("inst", "sp-1", before=before, limit=3)
        users = [r for r in page.rows if r["role"] == "user"]
        seen = [r["text"] for r in users] + seen
        if not page.has_more:
            break
        before = users[0]["timestamp"]  # the oldest user row the client holds
    assert seen == [f"q{n}" for n in range(7)]
    assert store.history("inst", "sp-1", limit=3).rows[0]["text"] == "q4"
    assert store.history("inst", "nobody").rows == []


async def test_a_long_chat_keeps_only_its_recent_turns_in_memory_and_loses_nothing(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    chat = store.chat("inst", "sp-1")
    total = MEMORY_TURNS * 3 + 5
    for n in range(total):
        await whole_turn(chat, f"t{n}", f"q{n}")
    assert len(chat._turns) == MEMORY_TURNS  # memory stays flat however long the chat runs
    assert chat.info.turns == total and chat.info.summary == "q0"
    # The panel's history still walks back through every turn, read again from the journal.
    seen: list[str] = []
    before: int | None = None
    while True:
        page = store.history("inst", "sp-1", before=before, limit=40)
        users = [r for r in page.rows if r["role"] == "user"]
        seen = [r["text"] for r in users] + seen
        if not page.has_more:
            break
        before = users[0]["timestamp"]
    assert seen == [f"q{n}" for n in range(total)]
    assert without_timestamps(store.history("inst", "sp-1", limit=1).rows) == expected_rows(
        f"q{total - 1}"
    )
    # A chat.send retried with a recent turnId still finds its outcome; the model sees the same.
    recent = chat.find_turn(f"t{total - MEMORY_TURNS - 3}")
    assert recent is not None and recent.outcome == "done"
    oldest = chat.find_turn(f"t{total - MEMORY_TURNS - 60}")  # let go, its outcome kept
    assert oldest is not None and oldest.ended
    messages = chat.model_messages(max_turns=16)
    assert messages[0]["content"].startswith(f"q{total - 16}")
    # Reopened from disk: the same view, the same bound.
    again = make_store(tmp_path).chat("inst", "sp-1")
    assert len(again._turns) == MEMORY_TURNS and again.info == chat.info
    assert again.model_messages(max_turns=16) == messages


# --- delete, prune, names -------------------------------------------------------------------------


async def test_delete_is_refused_while_the_chat_runs_and_removes_the_journal_after(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    chat = store.chat("default", "sp-1")
    chat.begin_turn("t1", "hi", None)
    assert store.delete("default", "sp-1") is False  # a turn of this process is open
    await chat.end_turn("t1", "done", "hello")
    assert store.delete("default", "sp-1", running=True) is False  # the caller knows better
    assert store.delete("default", "sp-1") is True
    assert not journal_path(tmp_path, "default", "sp-1").exists()
    assert store.list_chats("default") == []
    with pytest.raises(StoreError):
        chat.begin_turn("t2", "on a deleted chat", None)
    assert store.chat("default", "sp-1").info.turns == 0  # a fresh chat under the same id
    assert store.delete("default", "never-existed") is True


async def test_prune_keeps_the_newest_chats_and_drops_old_ones_per_scope(tmp_path: Path) -> None:
    day = 86_400.0
    start = 1_700_000_000.0
    clock = Clock(start)
    store = make_store(tmp_path, clock=clock)
    for n in range(5):  # chat cN was last modified on day 10 * N
        clock.now = start + 10 * n * day
        chat = store.chat("inst", f"c{n}")
        if n != 1:
            chat.begin_turn("t", f"q{n}", None)
            await chat.end_turn("t", "done", "a")
    clock.now = start + 10 * day
    store.chat("inst", "c1").begin_turn("t", "still running", None)  # a turn of this process
    clock.now = start + 50 * day
    other = store.chat("other", "c0")
    other.begin_turn("t", "q", None)
    await other.end_turn("t", "done", "a")

    # Newest first: c4 c3 c2 c1 c0. c1 is one too many but runs; c0 is too many and too old.
    assert store.prune(max_chats=3, max_age_days=35, now=clock.now) == 1
    assert [c.id for c in store.list_chats("inst")] == ["c4", "c3", "c2", "c1"]

    await store.chat("inst", "c1").end_turn("t", "done", "a")  # now the newest
    # The caller's predicate keeps c2 (e.g. a queued turn); c3 goes.
    assert store.prune(max_chats=2, max_age_days=365, running=lambda s, c: c == "c2") == 1
    assert [c.id for c in store.list_chats("inst")] == ["c1", "c4", "c2"]
    assert [c.id for c in store.list_chats("other")] == ["c0"]
    await store.close()
    assert [c.id for c in make_store(tmp_path).list_chats("inst")] == ["c1", "c4", "c2"]


@pytest.mark.parametrize(
    "bad_id", ["../escape", "../../etc/passwd", "..", ".", "a/b", "a\\b", "/abs", ".hidden", "x\0y"]
)
async def test_ids_cannot_escape_the_sessions_directory(tmp_path: Path, bad_id: str) -> None:
    root = tmp_path / "sessions"
    store = make_store(root)
    chat = store.chat(bad_id, bad_id)
    chat.begin_turn("t", "hi", None)
    await chat.end_turn("t", "done", "a")
    files = files_under(tmp_path)
    assert len(files) == 1
    assert files[0].parent.parent == root
    assert [c.id for c in store.list_chats(bad_id)] == [bad_id]  # the real id, from the header
    with pytest.raises(StoreError):
        store.chat("default", "")


@given(st.text(min_size=1), st.text(min_size=1))
def test_safe_names_are_one_plain_component_and_distinct_even_ignoring_case(a: str, b: str) -> None:
    name = safe_name(a)
    assert "/" not in name
    assert "\\" not in name
    assert "\0" not in name
    assert not name.startswith(".")
    assert len(name.encode()) <= 120
    if a != b:
        assert safe_name(a).lower() != safe_name(b).lower()


# --- durability and hygiene -----------------------------------------------------------------------


async def test_fsync_runs_once_at_turn_end_on_a_worker_thread(tmp_path: Path) -> None:
    calls: list[tuple[int, threading.Thread]] = []
    store = make_store(
        tmp_path, fsync=True, fsync_fn=lambda fd: calls.append((fd, threading.current_thread()))
    )
    chat = store.chat("default", "sp-1")
    chat.begin_turn("t1", "hi", None)
    chat.assistant("t1", "hello", None, None)
    assert calls == []  # records go to the OS as they happen; nothing waits for the disk
    await chat.end_turn("t1", "done", "hello")
    assert calls  # the journal, then the new directory entries
    assert all(thread is not threading.current_thread() for _, thread in calls)
    count = len(calls)
    chat.begin_turn("t2", "again", None)
    await chat.end_turn("t2", "done", "")
    assert len(calls) == count + 1  # an existing file: only the journal itself
    await store.close()
    assert len(calls) == count + 1  # nothing left unsynced
    await store.close()  # idempotent
    with pytest.raises(StoreError):
        store.chat("default", "sp-1")


async def test_an_end_marked_delivered_is_synced_with_it_and_leaves_nothing_unsynced(
    tmp_path: Path,
) -> None:
    # The delivered mark used to follow the end's fsync, leaving every finished chat unsynced
    # (so never closed by the cache) until its next turn.
    synced: list[int] = []
    store = make_store(tmp_path, fsync=True, fsync_fn=synced.append)
    chat = store.chat("default", "sp-1")
    chat.begin_turn("t1", "hi", None)
    await chat.end_turn("t1", "done", "hello", delivered=True)
    count = len(synced)
    assert chat.undelivered_end() is None
    assert not chat._journal.dirty
    await store.close()
    assert len(synced) == count  # nothing was left for close to sync
    records, _ = scan_records(journal_path(tmp_path, "default", "sp-1").read_bytes())
    assert [r["k"] for r in records][-2:] == ["end", "delivered"]


async def test_close_syncs_records_written_after_the_last_turn_end(tmp_path: Path) -> None:
    synced: list[int] = []
    store = make_store(tmp_path)
    chat = store.chat("default", "sp-1")
    chat.begin_turn("t1", "hi", None)
    store2 = ChatStore(tmp_path, fsync_fn=synced.append, clock=Clock())
    cut = store2.chat("default", "sp-1")
    cut.mark_ended("t1", "interrupted", "CONNECTION_LOST")
    await store2.close()
    assert synced


async def test_the_redact_hook_masks_every_text_field_before_it_is_written(tmp_path: Path) -> None:
    store = make_store(tmp_path, redact=lambda s: s.replace("hunter2", "•••"))
    chat = store.chat("default", "sp-1")
    chat.begin_turn("t1", "my password is hunter2", "field value hunter2")
    chat.tool_call("t1", "c1", "type_index", {"index": 2, "text": ["hunter2"]}, page_changing=True)
    chat.tool_result("t1", "c1", "ok", "typed hunter2", "typed hunter2")
    await chat.end_turn("t1", "done", "typed hunter2", message=None)
    await store.close()
    raw = journal_path(tmp_path, "default", "sp-1").read_bytes()
    assert b"hunter2" not in raw
    assert raw.count("•••".encode()) == 6


async def test_lone_surrogates_from_chrome_are_stored_as_replacement_characters(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    chat = store.chat("default", "sp-1")
    chat.begin_turn("t1", "bad \ud800 text", None)
    await chat.end_turn("t1", "done", "ok")
    rows = make_store(tmp_path).history("default", "sp-1").rows
    assert rows[0]["text"] == "bad \ufffd text"
    dump_outbound(wire_history("sp-1", rows))  # encodable


async def test_unknown_kinds_and_malformed_records_are_skipped_on_replay(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await whole_turn(store.chat("default", "sp-1"))
    await store.close()
    path = journal_path(tmp_path, "default", "sp-1")
    extra = [
        {"k": "from_the_future", "t": 1, "turn": "t1"},
        {"k": "assistant", "t": 2, "turn": "t1"},  # no text: unusable
    ]
    with path.open("ab") as journal:
        journal.writelines(encode_record(rec)[0] for rec in extra)
    chat = make_store(tmp_path).chat("default", "sp-1")
    assert (
        without_timestamps(make_store(tmp_path).history("default", "sp-1").rows) == expected_rows()
    )
    assert_valid_openai(chat.model_messages())
