"""The session store: one append-only msgpack journal per chat (architecture.md sections 2 and 6).

Layout: ``<root>/<safe scope>/<safe chat id>.journal`` where ``root`` is ``BROWY_HOME/sessions``
(:func:`sessions_dir`), the scope is the extension's ``installId`` (v2) or ``"default"`` (v1), and
both ids go through :func:`actors.store.journal.safe_name`, so no id can escape its directory.
Framing, torn-tail repair and fsync are in :mod:`actors.store.journal`.

Where it lives: :class:`ChatStore` (here) opens, lists, pages, deletes and prunes chats;
:mod:`actors.store.chat` holds one chat's state (:class:`Chat`, :class:`ChatInfo`);
:mod:`actors.store.chat_turns` the turn state table, the fold of a turn's records and the values
that describe a turn; :mod:`actors.store.chat_views` the history rows, the history pages and the
model's messages. Every name in ``__all__`` is importable from here.

Records (msgpack maps; ``k`` is the kind, ``t`` ms since the epoch, strictly increasing per chat so
a turn's start time is a unique paging cursor; unknown kinds and keys are ignored on reading)::

    chat       v, scope, id                       first record (written with the first turn)
    begin      turn, text, context                the user's own words; the page context apart
    assistant  turn, text, tool_calls, extra      one model reply, OpenAI tool_calls + opaque fields
    call       turn, id, name, args, page_changing   a tool started
    result     turn, id, outcome, summary, content   a tool ended (content: what the model sees)
    usage      turn, in, out                      tokens of one model call
    end        turn, outcome, text, code, message, cut

Promises:

* **Written before it happens.** Each method appends its record with ``os.write`` before it
  returns, so call it *before* the action it records (before sending ``chat.tool_call``, before
  the CDP command of a page-changing tool). :meth:`Chat.end_turn` then fsyncs once, on a worker
  thread: await it after ``chat.done`` went out, so the wire never waits for the disk.
* **Cut turns are shown, never resumed.** A turn with a ``begin`` and no ``end`` that this process
  did not start was cut by a crash or restart: ``ChatInfo.interrupted`` is set, history shows its
  tool rows followed by an ``(interrupted)`` assistant row, :meth:`Chat.cut_turn` returns it so the
  caller can send its definite end, and :meth:`Chat.mark_ended` records that end.
* **Durable turn ids.** :meth:`Chat.find_turn` answers a resent ``turnId`` from the journal, even
  after a daemon restart, so a resend never starts a second turn.
* **Model context.** :meth:`Chat.model_messages` rebuilds the OpenAI chat messages: user messages
  with their page context (:func:`join_context`; the turn runner must build live requests with the
  same function), assistant messages with ``tool_calls`` and provider fields echoed exactly, tool
  results, a synthetic result for each dangling call, and a closing assistant message for a turn
  that ended without a final answer — so the list is always valid for the API.
* **Secrets.** Callers pass masked data; the ``redact`` hook is a second line of defence applied
  to every text field we write (not to ``tool_calls``/``extra``, which must be echoed exactly).

One owner: all methods run on the event-loop thread (the daemon's session store actor). Opening
an uncached chat reads its journal synchronously (once; then it is cached in memory).

Errors::

    LocalError (messages.errors)
     +-- StoreError        disk error, closed store, unencodable record
          +-- TurnStateError   a record out of a turn's order (a bug in the caller)
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from actors.store.chat import Chat
from actors.store.chat_views import (
    ChatInfo,
    HistoryPage,
    build_history_page,
)
from actors.store.journal import JOURNAL_SUFFIX, FsyncFn, Journal, Redact, safe_name
from actors.store.journal_records import StoreError

__all__ = ["MAX_OPEN_CHATS", "ChatStore", "sessions_dir"]


def sessions_dir(home: Path) -> Path:
    """The store's root under ``BROWY_HOME`` (architecture.md section 6)."""
    return home / "sessions"


# --- the store ------------------------------------------------------------------------------------


#: Chats kept open in memory at most (see ChatStore._evict).
MAX_OPEN_CHATS = 64


class ChatStore:
    """All chats under ``root`` (``BROWY_HOME/sessions``): open, list, history, delete, prune.

    ``fsync=False`` skips fsync (tests, benchmarks). ``fsync_fn`` is the seam that performs it
    (default ``os.fsync``); it always runs off the loop: on the thread ``run_job`` hands it to
    (the daemon's :class:`~actors.store.journal_syncer.JournalSyncer`), by default the loop's
    executor. ``clock`` returns seconds.
    """

    def __init__(
        self,
        root: Path,
        *,
        fsync: bool = True,
        fsync_fn: FsyncFn | None = None,
        redact: Redact | None = None,
        clock: Callable[[], float] = time.time,
        run_job: Callable[[Callable[[], None]], Awaitable[None]] | None = None,
    ) -> None:
        self.root = root
        self.redact = redact
        self.clock = clock
        self._fsync = fsync
        self._fsync_fn: FsyncFn = fsync_fn if fsync_fn is not None else os.fsync
        self._chats: dict[Path, Chat] = {}
        self._syncing: set[asyncio.Future[None]] = set()
        self.run_job = run_job
        self._closed = False

    def _path(self, scope: str, chat_id: str) -> Path:
        directory = self.root / safe_name(scope)
        path = directory / (safe_name(chat_id) + JOURNAL_SUFFIX)
        if path.parent != directory or directory.parent != self.root:  # belt and braces
            raise StoreError("id escapes the sessions directory")
        return path

    def _open(self, path: Path, scope: str, chat_id: str) -> Chat:
        if self._closed:
            raise StoreError("the chat store is closed")
        chat = self._chats.pop(path, None)
        if chat is None:
            journal = Journal(path)
            chat = Chat(
                journal, scope, chat_id, clock=self.clock, redact=self.redact, sync=self.sync
            )
            chat._replay(journal.load())
        self._chats[path] = chat  # most recently used last
        self._evict()
        return chat

    def _evict(self) -> None:
        """Keep at most ``MAX_OPEN_CHATS`` chats in memory, each with its file open: the least
        recently used idle ones (no turn running) are closed. A long-running daemon would
        otherwise hold every chat it ever opened, and its descriptor. A closed chat is read again
        from its journal when next needed.

        What a closed chat wrote since its last fsync (a turn end's ``delivered`` mark, which is
        written after the end's fsync) is handed to a worker thread first: it is on the OS
        already, and the job owns a duplicate of the descriptor."""
        excess = len(self._chats) - MAX_OPEN_CHATS
        if excess <= 0:
            return
        closing: list[tuple[Path, Chat]] = []
        for path, chat in itertools.islice(self._chats.items(), len(self._chats) - 1):
            # least recently used first; never the chat being opened (the last one)
            if not chat.running:
                closing.append((path, chat))
                if len(closing) == excess:
                    break
        for path, chat in closing:
            self._start_sync(chat)
            chat._journal.close()
            del self._chats[path]

    def _start_sync(self, chat: Chat) -> asyncio.Future[None] | None:
        """Hand the fsync of what *chat* wrote since its last one to a worker thread, and return
        its future; None when there is nothing to sync. Without a running event loop (a
        synchronous caller) it is done here and now."""
        job = chat._journal.sync_job(self._fsync_fn) if self._fsync else None
        if job is None:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            job()
            return None
        if self.run_job is not None:
            future: asyncio.Future[None] = asyncio.ensure_future(self.run_job(job))
        else:
            future = loop.run_in_executor(None, job)
        self._syncing.add(future)
        future.add_done_callback(self._syncing.discard)
        return future

    def chat(self, scope: str, chat_id: str) -> Chat:
        """Open (cached) or create a chat. Nothing is written until its first turn begins."""
        return self._open(self._path(scope, chat_id), scope, chat_id)

    @staticmethod
    def still_open(chat: Chat) -> bool:
        """False once the store let *chat* go (or closed): get it again with :meth:`chat`. A
        chat with a turn running is never let go."""
        return not chat._journal.closed

    def _scope_chats(self, directory: Path) -> list[Chat]:
        if not directory.is_dir():
            return []
        chats = []
        for path in sorted(directory.glob("*" + JOURNAL_SUFFIX)):
            # Real ids come from the header record; the file name is only a safe encoding.
            chats.append(self._open(path, directory.name, path.stem))
        return chats

    def list_chats(self, scope: str) -> list[ChatInfo]:
        """The scope's chats that have at least one turn, newest (last modified) first."""
        infos = [c.info for c in self._scope_chats(self.root / safe_name(scope)) if c.has_turns]
        return sorted(infos, key=lambda info: info.modified_ms, reverse=True)

    def history(
        self,
        scope: str,
        chat_id: str,
        *,
        before: int | None = None,
        limit: int | None = None,
        max_bytes: int = 900_000,
    ) -> HistoryPage:
        """A chat's rows for ``chat.history.result`` (see :func:`build_history_page`)."""
        path = self._path(scope, chat_id)
        if path not in self._chats and not path.exists():
            return HistoryPage(rows=[], has_more=False, omitted=0)
        chat = self._open(path, scope, chat_id)
        return build_history_page(
            chat_id, chat.turn_rows(), before=before, limit=limit, max_bytes=max_bytes
        )

    def delete(self, scope: str, chat_id: str, *, running: bool = False) -> bool:
        """Delete a chat (``chat.delete``, ``history.clear``). False, and nothing deleted, while
        it runs: ``running`` is the caller's knowledge (e.g. a queued turn), or a turn of this
        process is open. Deleting a chat that does not exist succeeds."""
        path = self._path(scope, chat_id)
        chat = self._chats.get(path)
        if running or (chat is not None and chat.running):
            return False
        self._drop(path, chat)
        return True

    def _drop(self, path: Path, chat: Chat | None) -> None:
        if chat is not None:
            chat._deleted = True
            chat._journal.delete()
            del self._chats[path]
        else:
            Journal(path).delete()

    def prune(
        self,
        *,
        max_chats: int,
        max_age_days: int,
        now: float | None = None,
        running: Callable[[str, str], bool] | None = None,
    ) -> int:
        """Per scope, keep the newest ``max_chats`` chats and none older than ``max_age_days``
        (by last modification). Running chats are kept. Returns how many were deleted."""
        now_ms = (self.clock() if now is None else now) * 1000
        oldest_ms = now_ms - max_age_days * 86_400_000
        deleted = 0
        if not self.root.is_dir():
            return 0
        for directory in sorted(p for p in self.root.iterdir() if p.is_dir()):
            chats = sorted(self._scope_chats(directory), key=lambda c: c._last_ms, reverse=True)
            for rank, chat in enumerate(chats):
                if rank < max_chats and chat._last_ms >= oldest_ms and chat.has_turns:
                    continue
                if chat.running or (running is not None and running(chat.scope, chat.id)):
                    continue
                self._drop(chat._journal.path, chat)
                deleted += 1
        return deleted

    async def sync(self, chat: Chat) -> None:
        """fsync what ``chat`` wrote since its last sync, on a worker thread (never the loop)."""
        future = self._start_sync(chat)
        if future is not None:
            await asyncio.shield(future)

    async def close(self) -> None:
        """fsync what is unsynced, wait for the fsyncs in flight, close every journal.

        Idempotent; afterwards :meth:`chat` raises :class:`StoreError`."""
        if self._closed:
            return
        self._closed = True
        chats = list(self._chats.values())
        await asyncio.gather(*(self.sync(c) for c in chats), *list(self._syncing))
        for chat in chats:
            chat._journal.close()
        self._chats.clear()
