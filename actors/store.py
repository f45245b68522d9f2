"""The session store: one append-only msgpack journal per chat (architecture.md sections 2 and 6).

Layout: ``<root>/<safe scope>/<safe chat id>.journal`` where ``root`` is ``BROWY_HOME/sessions``
(:func:`sessions_dir`), the scope is the extension's ``installId`` (v2) or ``"default"`` (v1), and
both ids go through :func:`actors.store_writer.safe_name`, so no id can escape its directory.
Framing, torn-tail repair and fsync are in :mod:`actors.store_writer`.

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
import enum
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from actors.store_writer import JOURNAL_SUFFIX, FsyncFn, Journal, StoreError, safe_name

__all__ = [
    "INTERRUPTED_RESULT",
    "OUTCOME_CANCELLED",
    "OUTCOME_DONE",
    "OUTCOME_ERROR",
    "OUTCOME_INTERRUPTED",
    "Chat",
    "ChatInfo",
    "ChatStore",
    "HistoryPage",
    "PendingCall",
    "StoreError",
    "TurnInfo",
    "TurnOutcome",
    "TurnStateError",
    "build_history_page",
    "join_context",
    "sessions_dir",
]

log = logging.getLogger(__name__)

OUTCOME_DONE = "done"
OUTCOME_CANCELLED = "cancelled"
OUTCOME_ERROR = "error"
OUTCOME_INTERRUPTED = "interrupted"
#: The tool result the model sees for a call whose outcome was never recorded (protocol.md
#: section 5, no replay: the model must not conclude the action failed and simply repeat it).
INTERRUPTED_RESULT = "(interrupted: outcome unknown — not repeated)"
_INTERRUPTED_ROW = "(interrupted)"
_SUMMARY_CHARS = 80
_JOURNAL_VERSION = 1

Redact = Callable[[str], str]


class TurnStateError(StoreError):
    """A record that does not fit the turn's state (e.g. a tool call after the turn ended)."""


def sessions_dir(home: Path) -> Path:
    """The store's root under ``BROWY_HOME`` (architecture.md section 6)."""
    return home / "sessions"


def join_context(text: str, context: str | None) -> str:
    """The user message the model sees: the user's words, then the page context the host added."""
    return text if not context else f"{text}\n\n{context}"


# --- public value types ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatInfo:
    """A snapshot of one chat's metadata (``Chat.info`` builds a new one on each access)."""

    id: str
    scope: str
    created_ms: int
    modified_ms: int
    summary: str | None
    input_tokens: int
    output_tokens: int
    last_error: str | None  # of the latest ended turn; None when it did not fail
    interrupted: bool  # the latest turn was cut by a crash or restart
    turns: int

    def as_summary(self) -> dict[str, Any]:
        """One ``chat.list.result`` entry (protocol.md section 3), camelCase, no null fields."""
        row: dict[str, Any] = {"id": self.id, "startTime": self.created_ms}
        if self.summary is not None:
            row["summary"] = self.summary
        row["modifiedTime"] = self.modified_ms
        return row


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOutcome:
    """What the journal knows about a turn id; ``ended`` False: no end record (cut or running)."""

    turn_id: str
    ended: bool
    outcome: str  # OUTCOME_INTERRUPTED while not ended
    text: str
    code: str | None
    message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingCall:
    """A tool call with no recorded result: its outcome is unknown and it is never repeated."""

    call_id: str
    name: str
    page_changing: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnInfo:
    """A turn cut by a crash or restart (see :meth:`Chat.cut_turn`)."""

    turn_id: str
    started_ms: int
    user_text: str
    text: str  # assistant text recorded before the cut
    pending_calls: tuple[PendingCall, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryPage:
    """Rows shaped for ``chat.history.result`` (protocol.md section 3) and the v2 ``hasMore``."""

    rows: list[dict[str, Any]]
    has_more: bool
    omitted: int  # rows left out to stay under max_bytes (the marker row says so)


# --- turn state (the fold of the journal) ---------------------------------------------------------


class _Phase(enum.Enum):
    OPEN = "open"
    ENDED = "ended"


#: Which record kinds a *live* turn accepts in each phase (None: the turn does not exist yet).
_ACCEPTS: dict[_Phase | None, frozenset[str]] = {
    None: frozenset({"begin"}),
    _Phase.OPEN: frozenset({"assistant", "call", "result", "usage", "end"}),
    _Phase.ENDED: frozenset(),
}


#: Keys the readers of each event kind rely on; a record without them is skipped on replay.
_EVENT_KEYS: dict[str, tuple[str, ...]] = {
    "assistant": ("text",),
    "call": ("id", "name", "page_changing"),
    "result": ("id", "outcome", "content"),
}


@dataclass(slots=True)
class _Turn:
    turn_id: str
    started_ms: int
    text: str
    context: str | None
    live: bool  # begun by this process: not cut, just running
    events: list[dict[str, Any]] = field(default_factory=list)  # assistant / call / result
    end: dict[str, Any] | None = None
    last_ms: int = 0
    #: Did a panel (or the relay, for it) get this turn's end? Journaled by ``mark_delivered``;
    #: end records of older journals carry no ``pending`` and count as delivered.
    delivered: bool = True

    @property
    def phase(self) -> _Phase:
        return _Phase.OPEN if self.end is None else _Phase.ENDED

    @property
    def cut(self) -> bool:
        if self.end is None:
            return not self.live
        return bool(self.end.get("cut"))

    def results(self) -> dict[str, dict[str, Any]]:
        return {e["id"]: e for e in self.events if e["k"] == "result"}

    def assistant_text(self) -> str:
        parts = [e["text"] for e in self.events if e["k"] == "assistant" and e.get("text")]
        return "\n\n".join(parts)

    def closing_label(self) -> str | None:
        """What an ended or cut turn adds after its text: "(interrupted)", "(error: …)", …"""
        if self.cut:
            return _INTERRUPTED_ROW
        if self.end is None or self.end.get("outcome") == OUTCOME_DONE:
            return None
        outcome = str(self.end.get("outcome"))
        detail = self.end.get("message") or self.end.get("code")
        return f"({outcome}: {detail})" if detail else f"({outcome})"


def _summary(text: str) -> str | None:
    words = " ".join(text.split())
    if not words:
        return None
    if len(words) <= _SUMMARY_CHARS:
        return words
    return words[: _SUMMARY_CHARS - 1].rstrip() + "…"


def _redact_tree(value: Any, redact: Redact) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_tree(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_tree(v, redact) for v in value]
    return value


class Chat:
    """One chat: the in-memory fold of its journal plus the journal to append to.

    Get it from :meth:`ChatStore.chat`. Methods that record raise :class:`TurnStateError` when the
    record does not fit (no open turn with that id in this process, a second open turn, …).
    """

    def __init__(self, store: ChatStore, journal: Journal, scope: str, chat_id: str) -> None:
        self._store = store
        self._journal = journal
        self.scope = scope
        self.id = chat_id
        self._created_ms = 0
        self._last_ms = 0
        self._input_tokens = 0
        self._output_tokens = 0
        self._turns: list[_Turn] = []
        self._by_id: dict[str, _Turn] = {}
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
        turn = self._by_id.get(str(rec.get("turn")))
        if kind == "begin":
            new = _Turn(str(rec["turn"]), t, str(rec["text"]), rec.get("context"), live=False)
            new.last_ms = t
            self._created_ms = self._created_ms or t
            self._turns.append(new)
            self._by_id[new.turn_id] = new
            return
        if turn is None:
            return
        turn.last_ms = max(turn.last_ms, t)
        if kind in _EVENT_KEYS:
            if any(key not in rec for key in _EVENT_KEYS[kind]):
                raise KeyError(kind)  # _replay skips the malformed record
            turn.events.append(rec)
        elif kind == "usage":
            self._input_tokens += int(rec.get("in", 0))
            self._output_tokens += int(rec.get("out", 0))
        elif kind == "end":
            turn.end = rec
            turn.live = False
            turn.delivered = not rec.get("pending", False)
        elif kind == "delivered":
            turn.delivered = True
        elif kind == "undelivered":
            turn.delivered = False

    # --- writing ---

    def _record(self, kind: str, turn_id: str, **fields: Any) -> dict[str, Any]:
        """Check the turn's state table, then append the record and fold it in."""
        if self._deleted:
            raise StoreError(f"chat {self.id!r} was deleted")
        turn = self._by_id.get(turn_id)
        phase = None if turn is None else turn.phase
        if kind not in _ACCEPTS[phase] or (turn is not None and not turn.live):
            raise TurnStateError(f"{kind} record for turn {turn_id!r} in phase {phase}")
        if kind == "begin" and any(t.live for t in self._turns):
            raise TurnStateError(f"chat {self.id!r} already has a turn running")
        now = max(int(self._store.clock() * 1000), self._last_ms + 1)
        if self._journal.size == 0:
            header = {"k": "chat", "v": _JOURNAL_VERSION, "scope": self.scope, "id": self.id}
            self._journal.append({**header, "t": now})
            self._created_ms = now
        # What was written may differ (lone surrogates replaced): fold in exactly that.
        rec = self._journal.append({"k": kind, "t": now, "turn": turn_id, **fields})
        self._apply(rec)
        if kind == "begin":
            self._by_id[turn_id].live = True
        return rec

    def _text(self, value: str | None) -> str | None:
        redact = self._store.redact
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
        redact = self._store.redact
        args = args if redact is None else _redact_tree(args, redact)
        self._record("call", turn_id, id=call_id, name=name, args=args, page_changing=page_changing)

    def tool_result(
        self, turn_id: str, call_id: str, outcome: str, summary: str, content_for_model: str
    ) -> None:
        """Record a tool's end: ``outcome`` ok | error | unknown, the panel's short summary and
        the whole content the model gets."""
        self._record(
            "result",
            turn_id,
            id=call_id,
            outcome=outcome,
            summary=self._text(summary),
            content=self._text(content_for_model),
        )

    def usage(self, turn_id: str, input_tokens: int, output_tokens: int) -> None:
        """Record the tokens of one model call (added to the chat's totals)."""
        self._record("usage", turn_id, **{"in": input_tokens, "out": output_tokens})

    async def end_turn(
        self,
        turn_id: str,
        outcome: str,
        text: str,
        code: str | None = None,
        message: str | None = None,
    ) -> None:
        """Record the turn's end (``text``: all its assistant text, as in ``chat.done``), then
        fsync the journal on a worker thread. Cancelling the await does not cancel the fsync."""
        self._end(turn_id, outcome, text, code, message, cut=False)
        await self._store.sync(self)

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
        now = max(int(self._store.clock() * 1000), self._last_ms + 1)
        self._apply(self._journal.append({"k": "delivered", "t": now, "turn": turn_id}))

    def mark_undelivered(self, turn_id: str) -> None:
        """Take back :meth:`mark_delivered` (the send it announced failed)."""
        turn = self._by_id.get(turn_id)
        if turn is None or turn.end is None or not turn.delivered or self._deleted:
            return
        now = max(int(self._store.clock() * 1000), self._last_ms + 1)
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
            summary=_summary(self._turns[0].text) if self._turns else None,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
            last_error=error,
            interrupted=last is not None and last.cut,
            turns=len(self._turns),
        )

    @property
    def running(self) -> bool:
        """A turn begun by this process has not ended yet."""
        return any(t.live and t.end is None for t in self._turns)

    def find_turn(self, turn_id: str) -> TurnOutcome | None:
        """The stored outcome of ``turn_id`` (None: never seen). See :class:`TurnOutcome`."""
        turn = self._by_id.get(turn_id)
        if turn is None:
            return None
        end = turn.end or {}
        return TurnOutcome(
            turn_id=turn_id,
            ended=turn.end is not None,
            outcome=str(end.get("outcome", OUTCOME_INTERRUPTED)),
            text=str(end.get("text") or turn.assistant_text()),
            code=end.get("code"),
            message=end.get("message"),
        )

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
        return [(turn.started_ms, _rows(turn)) for turn in self._turns]

    def model_messages(
        self, *, max_turns: int | None = None, full_turns: int | None = None
    ) -> list[dict[str, Any]]:
        """The conversation as OpenAI chat messages (no system message: the caller adds it).

        ``max_turns`` keeps only the most recent turns; of those, all but the last
        ``full_turns`` lose their page context and have their tool results trimmed (a
        snapshot from three pages ago is stale and costly): the model keeps a memory of what was
        done without re-reading every old page. ``None``: everything, whole.
        """
        messages: list[dict[str, Any]] = []
        turns = self._turns if max_turns is None else self._turns[-max_turns:]
        full_from = 0 if full_turns is None else max(0, len(turns) - full_turns)
        for number, turn in enumerate(turns):
            full = number >= full_from
            context = turn.context if full else None
            messages.append({"role": "user", "content": join_context(turn.text, context)})
            results = turn.results()
            closed = False
            for event in turn.events:
                if event["k"] != "assistant":
                    continue
                calls = event.get("tool_calls") or []
                message: dict[str, Any] = {"role": "assistant", "content": event["text"] or None}
                message.update(event.get("extra") or {})
                if calls:
                    message["tool_calls"] = calls
                elif message["content"] is None:
                    message["content"] = ""  # content may be null only beside tool_calls
                messages.append(message)
                for call in calls:
                    result = results.get(call["id"])
                    content = INTERRUPTED_RESULT if result is None else result["content"]
                    if not full and isinstance(content, str) and len(content) > OLD_RESULT_CHARS:
                        content = content[:OLD_RESULT_CHARS] + " … [trimmed: an earlier turn]"
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": content}
                    )
                closed = not calls
            label = turn.closing_label()
            if not closed and not (turn.live and turn.end is None):
                messages.append({"role": "assistant", "content": label or "(stopped)"})
        return messages


def _rows(turn: _Turn) -> list[dict[str, Any]]:
    """One turn as rows: the user row, its tool rows, then one assistant row (once it ended)."""
    rows: list[dict[str, Any]] = [{"role": "user", "text": turn.text, "timestamp": turn.started_ms}]
    results = turn.results()
    for event in turn.events:
        if event["k"] != "call":
            continue
        result = results.get(event["id"])
        row: dict[str, Any] = {"role": "tool", "name": event["name"]}
        row["ok"] = result is not None and result["outcome"] == "ok"
        if result is not None and result.get("summary"):
            row["summary"] = result["summary"]
        elif result is None and turn.cut:
            row["summary"] = "interrupted: outcome unknown"
        row["timestamp"] = (result or event)["t"]
        rows.append(row)
    if turn.end is not None or turn.cut:
        text = (turn.end or {}).get("text") or turn.assistant_text()
        label = turn.closing_label()
        parts = [p for p in (text, label) if p]
        rows.append({"role": "assistant", "text": "\n\n".join(parts), "timestamp": turn.last_ms})
    return rows


# --- history paging and the 1 MiB rule ------------------------------------------------------------


def _marker(count: int) -> dict[str, Any]:
    noun = "message" if count == 1 else "messages"
    return {"role": "assistant", "text": f"({count} older {noun} not shown)"}


def _size(obj: Any) -> int:
    return len(orjson.dumps(obj))


def _clip(row: dict[str, Any], cap: int) -> dict[str, Any]:
    """Shorten a row's long text so its JSON is at most ``cap`` bytes (6 bytes per char, worst
    case: a control character escaped as ``\\u00XX``)."""
    key = "text" if row["role"] != "tool" else "summary"
    keep = max(0, cap // 6 - 64)
    return {**row, key: str(row.get(key, ""))[:keep] + "… (trimmed)"}


def build_history_page(
    chat_id: str,
    turns: list[tuple[int, list[dict[str, Any]]]],
    *,
    before: int | None = None,
    limit: int | None = None,
    max_bytes: int = 900_000,
) -> HistoryPage:
    """Select and trim history rows (pure).

    ``turns``: (start ms, rows) oldest first. ``before`` (v2): only turns that started before this
    time — the ``timestamp`` of the oldest user row the client holds. ``limit`` (v2): at most this
    many turns, the newest of those selected. Then rows are dropped oldest-first (whole turns
    where possible) until the encoded ``chat.history.result`` fits in ``max_bytes``, and a marker
    row saying how many were left out comes first. A single row too big on its own is clipped.
    """
    selected = [rows for start, rows in turns if before is None or start < before]
    has_more = False
    if limit is not None:
        limit = max(1, limit)
        has_more = len(selected) > limit
        selected = selected[-limit:]
    flat = [(index, row) for index, rows in enumerate(selected) for row in rows]
    envelope = {"type": "chat.history.result", "id": chat_id, "messages": [], "hasMore": True}
    budget = max_bytes - _size(envelope) - _size(_marker(10**12)) - 1
    cap = max(256, budget // 4)
    flat = [(i, row if _size(row) <= cap else _clip(row, cap)) for i, row in flat]
    total, cut = 0, len(flat)
    while cut > 0:
        size = _size(flat[cut - 1][1]) + 1  # + the comma
        if total + size > budget:
            break
        total += size
        cut -= 1
    if 0 < cut < len(flat) and flat[cut - 1][0] == flat[cut][0]:
        # The cut splits a turn: drop the rest of it too, unless it is the only turn left.
        nxt = next((j for j in range(cut, len(flat)) if flat[j][0] != flat[cut][0]), len(flat))
        cut = nxt if nxt < len(flat) else cut
    rows = [row for _, row in flat[cut:]]
    if cut:
        rows.insert(0, _marker(cut))
    return HistoryPage(rows=rows, has_more=has_more or cut > 0, omitted=cut)


# --- the store ------------------------------------------------------------------------------------


#: Tool results of older turns are cut to this many characters in the model's context.
OLD_RESULT_CHARS = 400

#: Chats kept open in memory at most (see ChatStore._evict).
MAX_OPEN_CHATS = 64


class ChatStore:
    """All chats under ``root`` (``BROWY_HOME/sessions``): open, list, history, delete, prune.

    ``fsync=False`` skips fsync (tests, benchmarks). ``fsync_fn`` is the seam that performs it
    (default ``os.fsync``); it always runs on a worker thread. ``clock`` returns seconds.
    """

    def __init__(
        self,
        root: Path,
        *,
        fsync: bool = True,
        fsync_fn: FsyncFn | None = None,
        redact: Redact | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root
        self.redact = redact
        self.clock = clock
        self._fsync = fsync
        self._fsync_fn: FsyncFn = fsync_fn if fsync_fn is not None else os.fsync
        self._chats: dict[Path, Chat] = {}
        self._syncing: set[asyncio.Future[None]] = set()
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
            chat = Chat(self, journal, scope, chat_id)
            chat._replay(journal.load())
        self._chats[path] = chat  # most recently used last
        self._evict()
        return chat

    def _evict(self) -> None:
        """Keep at most ``MAX_OPEN_CHATS`` chats in memory, each with its file open: the least
        recently used idle ones (no turn running, nothing waiting for fsync) are closed. A
        long-running daemon would otherwise hold every chat it ever listed, and its descriptor.
        A closed chat is read again from its journal when next needed."""
        while len(self._chats) > MAX_OPEN_CHATS:
            candidates = list(self._chats.items())[:-1]  # never the chat being opened
            for path, chat in candidates:  # least recently used first
                unsynced = self._fsync and chat._journal.dirty
                if not chat.running and not unsynced:
                    chat._journal.close()
                    del self._chats[path]
                    break
            else:
                return  # every cached chat is busy: keep them

    def chat(self, scope: str, chat_id: str) -> Chat:
        """Open (cached) or create a chat. Nothing is written until its first turn begins."""
        return self._open(self._path(scope, chat_id), scope, chat_id)

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
        infos = [c.info for c in self._scope_chats(self.root / safe_name(scope)) if c._turns]
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
                if rank < max_chats and chat._last_ms >= oldest_ms and chat._turns:
                    continue
                if chat.running or (running is not None and running(chat.scope, chat.id)):
                    continue
                self._drop(chat._journal.path, chat)
                deleted += 1
        return deleted

    async def sync(self, chat: Chat) -> None:
        """fsync what ``chat`` wrote since its last sync, on a worker thread (never the loop)."""
        job = chat._journal.sync_job(self._fsync_fn) if self._fsync else None
        if job is None:
            return
        future = asyncio.get_running_loop().run_in_executor(None, job)
        self._syncing.add(future)
        future.add_done_callback(self._syncing.discard)
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
