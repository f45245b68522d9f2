"""One chat's state: the fold of its journal, the records it appends, what it answers.

:class:`Chat` records turns (each method appends its record before it returns) and answers from
the fold: metadata (:class:`ChatInfo`), stored turn outcomes, cut turns, undelivered ends, history
rows and the model's messages. The records and the promises are described in
:mod:`actors.store.chat_store`; turn state is in :mod:`actors.store.chat_turns`, the views in
:mod:`actors.store.chat_views`.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from actors.store.chat_turns import (
    ACCEPTS,
    OUTCOME_ERROR,
    PendingCall,
    TurnFold,
    TurnInfo,
    TurnOutcome,
    TurnStateError,
    fold_turn_record,
    fold_turns,
    outcome_of,
)
from actors.store.chat_views import ChatInfo, build_model_messages, history_rows, summary_of
from actors.store.journal import Journal, Redact, redact_tree
from actors.store.journal_records import StoreError, scan_records

__all__ = ["MEMORY_TURNS", "NOT_KEPT", "Chat"]

#: What the journal holds instead of what a secret-reading tool returned.
NOT_KEPT = "(not kept: what this tool read is not written to disk)"

log = logging.getLogger(__name__)

_JOURNAL_VERSION = 1
#: The most recent turns of a chat kept in memory (the model sees at most 16, turn.py). Older
#: ones are read back from the journal when the panel's history asks for them, so an open chat's
#: memory stays flat however long it runs.
MEMORY_TURNS = 48
#: Outcomes of turns let go from memory, kept for a ``chat.send`` retried with the same turnId
#: (which comes seconds later, not hundreds of turns).
_EVICTED_OUTCOMES = 64


class Chat:
    """One chat: the in-memory fold of its journal plus the journal to append to.

    Get it from :meth:`ChatStore.chat <actors.store.chat_store.ChatStore.chat>`, which hands it
    its store's ``clock`` (seconds), ``redact`` and ``sync`` (fsync this chat's new records).
    Methods that record raise :class:`TurnStateError` when the record does not fit (no open turn
    with that id in this process, a second open turn, …).
    """

    def __init__(
        self,
        journal: Journal,
        scope: str,
        chat_id: str,
        *,
        clock: Callable[[], float],
        redact: Redact | None,
        sync: Callable[[Chat], Awaitable[None]],
    ) -> None:
        self._clock = clock
        self._redact = redact
        self._sync = sync
        self._journal = journal
        self.scope = scope
        self.id = chat_id
        self._created_ms = 0
        self._last_ms = 0
        self._input_tokens = 0
        self._output_tokens = 0
        self._turns: list[TurnFold] = []  # the last MEMORY_TURNS at most (plus any live one)
        self._by_id: dict[str, TurnFold] = {}
        self._turn_count = 0  # every turn of the chat, in memory or not
        self._first_text: str | None = None  # for the summary
        self._evicted: OrderedDict[str, TurnOutcome] = OrderedDict()
        self._deleted = False

    # --- loading ---

    def _replay(self, records: Iterable[dict[str, Any]]) -> None:
        """Fold journal records into the state, tolerating what a newer/older writer left."""
        for rec in records:
            try:
                self._apply(rec)
            except (KeyError, TypeError, ValueError):
                log.warning("chat %s: skipped a malformed %r record", self.id, rec.get("k"))

    def _apply(self, rec: dict[str, Any]) -> None:
        kind, t = rec.get("k"), int(rec.get("t", 0))
        self._last_ms = max(self._last_ms, t)
        if kind == "chat":
            self.scope, self.id, self._created_ms = str(rec["scope"]), str(rec["id"]), t
            return
        if kind == "usage":
            self._input_tokens += int(rec.get("in", 0))
            self._output_tokens += int(rec.get("out", 0))
            return
        turn = fold_turn_record(self._turns, self._by_id, rec)
        if kind == "begin" and turn is not None:
            self._created_ms = self._created_ms or t
            self._turn_count += 1
            if self._first_text is None:
                self._first_text = turn.text
            self._let_go()

    def _let_go(self) -> None:
        """Keep at most MEMORY_TURNS turns in memory: the oldest go (never a live one)."""
        while len(self._turns) > MEMORY_TURNS and not self._turns[0].live:
            old = self._turns.pop(0)
            del self._by_id[old.turn_id]
            self._evicted[old.turn_id] = outcome_of(old)
            while len(self._evicted) > _EVICTED_OUTCOMES:
                self._evicted.popitem(last=False)

    def _all_turns(self) -> list[TurnFold]:
        """Every turn, oldest first: those let go are folded again from the journal on disk
        (every record is written there before it is folded in here)."""
        if self._turn_count == len(self._turns):
            return self._turns
        try:
            records, _ = scan_records(self._journal.path.read_bytes())
        except OSError:
            log.exception("chat %s: could not read older turns", self.id)
            records = []
        in_memory = set(self._by_id)
        return [t for t in fold_turns(records) if t.turn_id not in in_memory] + self._turns

    # --- writing ---

    def _record(
        self, kind: str, turn_id: str, *, memory: dict[str, Any] | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Check the turn's state table, then append the record and fold it in. ``memory``
        overrides fields in what is folded (held in memory) but not in what is written."""
        if self._deleted:
            raise StoreError(f"chat {self.id!r} was deleted")
        turn = self._by_id.get(turn_id)
        phase = None if turn is None else turn.phase
        if kind not in ACCEPTS[phase] or (turn is not None and not turn.live):
            raise TurnStateError(f"{kind} record for turn {turn_id!r} in phase {phase}")
        if kind == "begin" and any(t.live for t in self._turns):
            raise TurnStateError(f"chat {self.id!r} already has a turn running")
        now = max(int(self._clock() * 1000), self._last_ms + 1)
        if self._journal.size == 0:
            header = {"k": "chat", "v": _JOURNAL_VERSION, "scope": self.scope, "id": self.id}
            self._journal.append({**header, "t": now})
            self._created_ms = now
        # What was written may differ (lone surrogates replaced): fold in exactly that.
        rec = self._journal.append({"k": kind, "t": now, "turn": turn_id, **fields})
        self._apply(rec if memory is None else {**rec, **memory})
        if kind == "begin":
            self._by_id[turn_id].live = True
        return rec

    def _text(self, value: str | None) -> str | None:
        redact = self._redact
        return value if value is None or redact is None else redact(value)

    def begin_turn(self, turn_id: str, user_text: str, context: str | None) -> None:
        """Record the start of a turn: the user's own words and, apart, the page context."""
        self._record("begin", turn_id, text=self._text(user_text), context=self._text(context))

    def assistant(
        self,
        turn_id: str,
        text: str,
        tool_calls: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Record one model reply: its text, OpenAI ``tool_calls`` (kept verbatim, provider
        fields included) and the provider's other message fields (``extra``, echoed exactly).
        With the model gateway: ``text=reply.text``, ``tool_calls=msg.get("tool_calls")`` and
        ``extra`` = the rest of ``reply.assistant_message`` minus role and content."""
        self._record(
            "assistant", turn_id, text=self._text(text), tool_calls=tool_calls, extra=extra
        )

    def tool_call(
        self, turn_id: str, call_id: str, name: str, args: dict[str, Any], page_changing: bool
    ) -> None:
        """Record that a tool is about to run (before its first page-changing command)."""
        redact = self._redact
        args = args if redact is None else redact_tree(args, redact)
        self._record("call", turn_id, id=call_id, name=name, args=args, page_changing=page_changing)

    def tool_result(
        self,
        turn_id: str,
        call_id: str,
        outcome: str,
        summary: str,
        content_for_model: str,
        *,
        keep: bool = True,
    ) -> None:
        """Record a tool's end: ``outcome`` ok | error | unknown, the panel's short summary and
        the whole content the model gets. ``keep=False`` (a tool that read secrets: cookies,
        storage) writes a placeholder instead of the content; the turn's model still gets it."""
        content = self._text(content_for_model)
        self._record(
            "result",
            turn_id,
            id=call_id,
            outcome=outcome,
            summary=self._text(summary),
            content=content if keep else NOT_KEPT,
            memory=None if keep else {"content": content},
        )

    def usage(self, turn_id: str, input_tokens: int, output_tokens: int) -> None:
        """Record the tokens of one model call (added to the chat's totals)."""
        counts: dict[str, Any] = {"in": input_tokens, "out": output_tokens}
        self._record("usage", turn_id, **counts)

    async def end_turn(
        self,
        turn_id: str,
        outcome: str,
        text: str,
        code: str | None = None,
        message: str | None = None,
        *,
        delivered: bool = False,
    ) -> None:
        """Record the turn's end (``text``: all its assistant text, as in ``chat.done``) and,
        with ``delivered``, that it is about to reach its panel (:meth:`mark_delivered`), then
        fsync both at once on a worker thread. Cancelling the await does not cancel the fsync."""
        self._end(turn_id, outcome, text, code, message, cut=False)
        if delivered:
            self.mark_delivered(turn_id)
        await self._sync(self)

    def mark_ended(
        self, turn_id: str, outcome: str, code: str | None = None, message: str | None = None
    ) -> None:
        """Record the definite end of a cut turn (or of a live one whose runner is gone).

        The turn stays shown as interrupted. Not fsynced here: the next turn end or
        :meth:`ChatStore.close` does it."""
        turn = self._by_id.get(turn_id)
        if turn is None or turn.end is not None:
            raise TurnStateError(f"turn {turn_id!r} is not waiting for an end")
        turn.live = True  # a cut turn accepts exactly this one record
        try:
            self._end(turn_id, outcome, "", code, message, cut=True)
        finally:
            turn.live = False

    def _end(
        self,
        turn_id: str,
        outcome: str,
        text: str,
        code: str | None,
        message: str | None,
        *,
        cut: bool,
    ) -> None:
        self._record(
            "end",
            turn_id,
            outcome=outcome,
            text=self._text(text),
            code=code,
            message=self._text(message),
            cut=cut,
            pending=True,
        )

    def mark_delivered(self, turn_id: str) -> None:
        """Record that the turn's end reached a panel (or the relay ended it for the panel).

        A turn whose end is journaled but not delivered — its daemon died between the two —
        gets its end sent when the session registers again (:meth:`undelivered_end`)."""
        turn = self._by_id.get(turn_id)
        if turn is None or turn.end is None or turn.delivered or self._deleted:
            return
        now = max(int(self._clock() * 1000), self._last_ms + 1)
        self._apply(self._journal.append({"k": "delivered", "t": now, "turn": turn_id}))

    def drop_turn(self, turn_id: str) -> TurnFold | None:
        """Drop the last turn (it ended) from the history and the model's context: a
        regenerated or edited turn replaces it. Returns it, or None when *turn_id* is not the
        last turn or it has not ended."""
        turn = self._turns[-1] if self._turns else None
        if turn is None or turn.turn_id != turn_id or turn.end is None or turn.dropped:
            return None
        now = max(int(self._clock() * 1000), self._last_ms + 1)
        self._apply(self._journal.append({"k": "dropped", "t": now, "turn": turn_id}))
        return turn

    def mark_undelivered(self, turn_id: str) -> None:
        """Take back :meth:`mark_delivered` (the send it announced failed)."""
        turn = self._by_id.get(turn_id)
        if turn is None or turn.end is None or not turn.delivered or self._deleted:
            return
        now = max(int(self._clock() * 1000), self._last_ms + 1)
        self._apply(self._journal.append({"k": "undelivered", "t": now, "turn": turn_id}))

    def undelivered_end(self) -> TurnOutcome | None:
        """The last turn, if it ended but its end never reached a panel."""
        if not self._turns:
            return None
        turn = self._turns[-1]
        if turn.end is None or turn.delivered or turn.live:
            return None
        return TurnOutcome(
            turn_id=turn.turn_id,
            ended=True,
            outcome=str(turn.end.get("outcome")),
            text=str(turn.end.get("text") or ""),
            code=turn.end.get("code"),
            message=turn.end.get("message"),
        )

    # --- reading ---

    @property
    def info(self) -> ChatInfo:
        last = self._turns[-1] if self._turns else None
        error: str | None = None
        if last is not None and last.end is not None and last.end.get("outcome") == OUTCOME_ERROR:
            error = str(last.end.get("message") or last.end.get("code") or OUTCOME_ERROR)
        return ChatInfo(
            id=self.id,
            scope=self.scope,
            created_ms=self._created_ms,
            modified_ms=self._last_ms,
            summary=summary_of(self._first_text) if self._first_text is not None else None,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            last_error=error,
            interrupted=last is not None and last.cut,
            turns=self._turn_count,
        )

    @property
    def has_turns(self) -> bool:
        return self._turn_count > 0

    @property
    def running(self) -> bool:
        """A turn begun by this process has not ended yet."""
        return any(t.live and t.end is None for t in self._turns)

    def find_turn(self, turn_id: str) -> TurnOutcome | None:
        """The stored outcome of ``turn_id`` (None: never seen). See :class:`TurnOutcome`."""
        turn = self._by_id.get(turn_id)
        if turn is None:
            return self._evicted.get(turn_id)
        return outcome_of(turn)

    def cut_turn(self) -> TurnInfo | None:
        """The latest turn with no end that this process did not start (cut by a crash/restart)."""
        for turn in reversed(self._turns):
            if turn.end is None and not turn.live:
                results = turn.results()
                pending = tuple(
                    PendingCall(call_id=e["id"], name=e["name"], page_changing=e["page_changing"])
                    for e in turn.events
                    if e["k"] == "call" and e["id"] not in results
                )
                return TurnInfo(
                    turn_id=turn.turn_id,
                    started_ms=turn.started_ms,
                    user_text=turn.text,
                    text=turn.assistant_text(),
                    pending_calls=pending,
                )
        return None

    def turn_rows(self) -> list[tuple[int, list[dict[str, Any]]]]:
        """Each turn's history rows (protocol.md section 3) with its start time, oldest first."""
        return [
            (turn.started_ms, history_rows(turn)) for turn in self._all_turns() if not turn.dropped
        ]

    def model_messages(
        self, *, max_turns: int | None = None, full_turns: int | None = None
    ) -> list[dict[str, Any]]:
        """The conversation as OpenAI chat messages (no system message: the caller adds it).

        ``max_turns`` keeps only the most recent turns; of those, all but the last
        ``full_turns`` lose their page context and have their tool results trimmed (a
        snapshot from three pages ago is stale and costly): the model keeps a memory of what was
        done without re-reading every old page. ``None``: everything, whole.
        """
        return build_model_messages(self._turns, max_turns=max_turns, full_turns=full_turns)
