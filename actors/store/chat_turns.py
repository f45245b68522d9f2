"""The turns of a chat as its journal records them: outcomes, the turn state table, the fold of
one turn's records, and the values that describe a turn.

The record kinds are listed in :mod:`actors.store.chat_store`; :class:`actors.store.chat.Chat` folds
a chat's records into one :class:`TurnFold` per ``begin`` and checks each new record against
:data:`ACCEPTS`. What the panel and the model see of the turns is in :mod:`actors.store.chat_views`.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from actors.store.journal_records import StoreError

__all__ = [
    "ACCEPTS",
    "EVENT_KEYS",
    "OUTCOME_CANCELLED",
    "OUTCOME_DONE",
    "OUTCOME_ERROR",
    "OUTCOME_INTERRUPTED",
    "PendingCall",
    "TurnFold",
    "TurnInfo",
    "TurnOutcome",
    "TurnPhase",
    "TurnStateError",
    "fold_turn_record",
    "fold_turns",
    "outcome_of",
]

OUTCOME_DONE = "done"
OUTCOME_CANCELLED = "cancelled"
OUTCOME_ERROR = "error"
OUTCOME_INTERRUPTED = "interrupted"
_INTERRUPTED_ROW = "(interrupted)"


class TurnStateError(StoreError):
    """A record that does not fit the turn's state (e.g. a tool call after the turn ended)."""


# --- public value types ---------------------------------------------------------------------------


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


# --- turn state (the fold of the journal) ---------------------------------------------------------


class TurnPhase(enum.Enum):
    OPEN = "open"
    ENDED = "ended"


#: Which record kinds a *live* turn accepts in each phase (None: the turn does not exist yet).
ACCEPTS: dict[TurnPhase | None, frozenset[str]] = {
    None: frozenset({"begin"}),
    TurnPhase.OPEN: frozenset({"assistant", "call", "result", "usage", "end"}),
    TurnPhase.ENDED: frozenset(),
}


#: Keys the readers of each event kind rely on; a record without them is skipped on replay.
EVENT_KEYS: dict[str, tuple[str, ...]] = {
    "assistant": ("text",),
    "call": ("id", "name", "page_changing"),
    "result": ("id", "outcome", "content"),
}


@dataclass(slots=True)
class TurnFold:
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
    #: Replaced by a regenerated or edited turn: out of the history and the model's context.
    dropped: bool = False

    @property
    def changed_the_page(self) -> bool:
        """Did a page-changing call of this turn run (or may it have: ``unknown``)?"""
        results = self.results()
        return any(
            e["k"] == "call"
            and e.get("page_changing")
            and (results.get(e["id"]) or {}).get("outcome", "unknown") in ("ok", "unknown")
            for e in self.events
        )

    @property
    def phase(self) -> TurnPhase:
        return TurnPhase.OPEN if self.end is None else TurnPhase.ENDED

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


def fold_turn_record(
    turns: list[TurnFold], by_id: dict[str, TurnFold], rec: dict[str, Any]
) -> TurnFold | None:
    """Fold one journal record that belongs to a turn into *turns* / *by_id*: ``begin`` adds a
    turn; events, ``end``, ``delivered`` and ``undelivered`` update theirs. Returns the turn it
    touched (None: a record of a turn not there). Raises KeyError for an event without the keys
    its readers need (:data:`EVENT_KEYS`). ``usage`` and the ``chat`` header are the caller's."""
    kind, t = rec.get("k"), int(rec.get("t", 0))
    if kind == "begin":
        new = TurnFold(str(rec["turn"]), t, str(rec["text"]), rec.get("context"), live=False)
        new.last_ms = t
        turns.append(new)
        by_id[new.turn_id] = new
        return new
    turn = by_id.get(str(rec.get("turn")))
    if turn is None:
        return None
    turn.last_ms = max(turn.last_ms, t)
    if kind in EVENT_KEYS:
        if any(key not in rec for key in EVENT_KEYS[kind]):
            raise KeyError(kind)  # replay skips the malformed record
        turn.events.append(rec)
    elif kind == "end":
        turn.end = rec
        turn.live = False
        turn.delivered = not rec.get("pending", False)
    elif kind == "delivered":
        turn.delivered = True
    elif kind == "undelivered":
        turn.delivered = False
    elif kind == "dropped":
        turn.dropped = True
    return turn


def fold_turns(records: Iterable[dict[str, Any]]) -> list[TurnFold]:
    """Every turn of a journal's records, oldest first (malformed records skipped)."""
    turns: list[TurnFold] = []
    by_id: dict[str, TurnFold] = {}
    for rec in records:
        if rec.get("k") in ("chat", "usage"):
            continue
        with contextlib.suppress(KeyError, TypeError, ValueError):
            fold_turn_record(turns, by_id, rec)
    return turns


def outcome_of(turn: TurnFold) -> TurnOutcome:
    """What a turn came to, as the store answers a resent ``turnId``."""
    end = turn.end or {}
    return TurnOutcome(
        turn_id=turn.turn_id,
        ended=turn.end is not None,
        outcome=str(end.get("outcome", OUTCOME_INTERRUPTED)),
        text=str(end.get("text") or turn.assistant_text()),
        code=end.get("code"),
        message=end.get("message"),
    )
