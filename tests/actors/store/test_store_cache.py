"""The chat store keeps a bounded number of chats (and file descriptors) open."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from actors.store.chat_store import MAX_OPEN_CHATS, ChatStore


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_idle_chats_beyond_the_limit_are_closed_and_read_again_on_demand(
    tmp_path: Path,
) -> None:
    store = ChatStore(tmp_path / "sessions", fsync=False)
    before = _open_fds()
    for i in range(MAX_OPEN_CHATS + 20):
        chat = store.chat("default", f"sp-{i}")
        chat.begin_turn(f"t{i}", f"question {i}", None)
        chat.assistant(f"t{i}", f"answer {i}")
        await chat.end_turn(f"t{i}", "done", f"answer {i}")
    assert len(store._chats) <= MAX_OPEN_CHATS
    assert _open_fds() - before <= MAX_OPEN_CHATS
    # The first chat was closed; it comes back whole from its journal.
    rows = store.history("default", "sp-0").rows
    assert [(r["role"], r["text"]) for r in rows] == [
        ("user", "question 0"),
        ("assistant", "answer 0"),
    ]
    assert len(store.list_chats("default")) == MAX_OPEN_CHATS + 20
    await store.close()


async def test_chats_whose_end_was_marked_delivered_are_closed_too_and_their_mark_synced(
    tmp_path: Path,
) -> None:
    # A turn's end is fsynced, then marked delivered: that mark left the journal unsynced, and
    # an unsynced chat was never closed, so a daemon kept every chat it ever ran open.
    synced: list[int] = []

    def fsync(fd: int) -> None:
        synced.append(fd)
        os.fsync(fd)

    store = ChatStore(tmp_path / "sessions", fsync_fn=fsync)
    before = _open_fds()
    chats = MAX_OPEN_CHATS * 2
    for i in range(chats):
        chat = store.chat("default", f"sp-{i}")
        chat.begin_turn(f"t{i}", f"question {i}", None)
        await chat.end_turn(f"t{i}", "done", f"answer {i}")
        chat.mark_delivered(f"t{i}")
    assert len(store._chats) <= MAX_OPEN_CHATS
    # A closed chat's sync job owns a duplicate of its descriptor until the fsync is done.
    assert _open_fds() - before <= MAX_OPEN_CHATS + len(store._syncing)
    await asyncio.gather(*store._syncing)
    assert _open_fds() - before <= MAX_OPEN_CHATS
    # Each closed chat's delivered mark was synced as it was closed (the end's fsync, then the
    # mark's, plus the new directory once).
    assert len(synced) >= chats + MAX_OPEN_CHATS
    reopened = store.chat("default", "sp-0")
    assert reopened.undelivered_end() is None  # the mark was kept
    await store.close()


async def test_a_chat_with_a_running_turn_is_never_closed(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "sessions", fsync=False)
    running = store.chat("default", "busy")
    running.begin_turn("t-busy", "working", None)
    for i in range(MAX_OPEN_CHATS + 5):
        store.chat("default", f"other-{i}")
    running.assistant("t-busy", "still here")  # its journal is still open
    await running.end_turn("t-busy", "done", "still here")
    await store.close()


async def test_the_model_sees_recent_turns_whole_and_older_ones_short(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "sessions", fsync=False)
    chat = store.chat("default", "sp-1")
    for i in range(20):
        chat.begin_turn(f"t{i}", f"ask {i}", f"PAGE SNAPSHOT {i} " + "x" * 2000)
        call = {"id": f"c{i}", "type": "function", "function": {"name": "inspect_page",
                "arguments": "{}"}}  # fmt: skip
        chat.assistant(f"t{i}", "", tool_calls=[call])
        chat.tool_call(f"t{i}", f"c{i}", "inspect_page", {}, False)
        chat.tool_result(f"t{i}", f"c{i}", "ok", "seen", "RESULT " + "y" * 3000)
        chat.assistant(f"t{i}", f"answer {i}")
        await chat.end_turn(f"t{i}", "done", f"answer {i}")
    messages = chat.model_messages(max_turns=16, full_turns=2)
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert len(users) == 16
    assert users[0].startswith("ask 4")
    assert all("PAGE SNAPSHOT" not in u for u in users[:-2])
    assert all("PAGE SNAPSHOT" in u for u in users[-2:])
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert all(len(r) < 500 for r in results[:-2])
    assert all(len(r) > 3000 for r in results[-2:])
    assert len(chat.model_messages()) > len(messages)  # the default keeps everything
    await store.close()
