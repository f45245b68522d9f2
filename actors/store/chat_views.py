"""What the panel and the model see of a chat's turns (pure functions of the fold).

- :func:`history_rows`: one turn as ``chat.history.result`` rows (protocol.md section 3);
- :func:`build_history_page`: the rows of a page, under the 1 MiB rule;
- :func:`build_model_messages` (behind :meth:`actors.store.chat.Chat.model_messages`): the OpenAI
chat
  messages, with user content built by :func:`join_context`, always valid for the API.

The turns come from :class:`actors.store.chat_turns.TurnFold`; the promises are stated in
:mod:`actors.store.chat_store`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from actors.store.chat_turns import TurnFold

__all__ = [
    "INTERRUPTED_RESULT",
    "OLD_RESULT_CHARS",
    "ChatInfo",
    "HistoryPage",
    "build_history_page",
    "build_model_messages",
    "history_rows",
    "join_context",
    "summary_of",
]

#: The tool result the model sees for a call whose outcome was never recorded (protocol.md
#: section 5, no replay: the model must not conclude the action failed and simply repeat it).
INTERRUPTED_RESULT = "(interrupted: outcome unknown — not repeated)"

#: Tool results of older turns are cut to this many characters in the model's context.
OLD_RESULT_CHARS = 400


def join_context(text: str, context: str | None) -> str:
    """The user message the model sees: the user's words, then the page context the host added."""
    return text if not context else f"{text}\n\n{context}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryPage:
    """Rows shaped for ``chat.history.result`` (protocol.md section 3) and the v2 ``hasMore``."""

    rows: list[dict[str, Any]]
    has_more: bool
    omitted: int  # rows left out to stay under max_bytes (the marker row says so)


_SUMMARY_CHARS = 80


def summary_of(text: str) -> str | None:
    """A chat's one-line summary: its first words."""
    words = " ".join(text.split())
    if not words:
        return None
    if len(words) <= _SUMMARY_CHARS:
        return words
    return words[: _SUMMARY_CHARS - 1].rstrip() + "…"


def build_model_messages(
    turns: list[TurnFold], *, max_turns: int | None = None, full_turns: int | None = None
) -> list[dict[str, Any]]:
    """The conversation as OpenAI chat messages: see
    :meth:`actors.store.chat.Chat.model_messages`."""
    messages: list[dict[str, Any]] = []
    turns = [t for t in turns if not t.dropped]  # replaced by a regenerated or edited turn
    turns = turns if max_turns is None else turns[-max_turns:]
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
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
            closed = not calls
        label = turn.closing_label()
        if not closed and not (turn.live and turn.end is None):
            messages.append({"role": "assistant", "content": label or "(stopped)"})
    return messages


def history_rows(turn: TurnFold) -> list[dict[str, Any]]:
    """One turn as rows: the user row, its tool rows, then one assistant row (once it ended)."""
    rows: list[dict[str, Any]] = [
        {"role": "user", "text": turn.text, "timestamp": turn.started_ms, "turnId": turn.turn_id}
    ]
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
