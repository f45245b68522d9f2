"""The ledger of page-changing tool calls: *sent* before, *done* after (architecture.md).

A page-changing call (input, navigation, form submission, tab open/close, cookie or storage writes,
downloads, host code) is recorded as ``sent`` before it starts and as ``done`` with its outcome
when it ends. One that is interrupted in between — its error says the outcome is unknown, or the
task running it was cancelled — is recorded as ``unknown``. The ledger refuses to start a call id
it has already seen, so the host never sends a page-changing call twice (protocol.md section 5,
"No replay"; section 4, ``chat.tool_result`` outcome ``unknown``).

Pure bookkeeping: no asyncio, no I/O. Entry states::

    SENT --done(ok|error)--> OK | ERROR
    SENT --interrupted-----> UNKNOWN
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from messages.errors import LocalError

__all__ = ["MAX_ENTRIES", "AlreadySent", "CallLedger", "LedgerEntry", "LedgerState"]

LedgerState = Literal["sent", "ok", "error", "unknown"]

_TRANSITIONS: dict[LedgerState, frozenset[LedgerState]] = {
    "sent": frozenset({"ok", "error", "unknown"}),
    "ok": frozenset(),
    "error": frozenset(),
    "unknown": frozenset(),
}


class AlreadySent(LocalError):
    """A page-changing call id was started a second time; it must not be re-sent."""

    default_wire_message = "this action was already sent and is never repeated"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """What the ledger knows of one call: a view, made when asked (the ledger keeps only the
    state of each call id)."""

    call_id: str
    state: LedgerState


#: How many page-changing calls a session's ledger remembers.
MAX_ENTRIES = 1024


class CallLedger:
    """Page-changing calls of one scope (e.g. a session), newest last, bounded in size.

    It keeps one state per call id and nothing else (no record object, no times): a daemon holds
    one ledger per session for its whole life, so each of up to ``max_entries`` entries costs
    only its id and a dict slot (about 120 bytes, against 310 with a record and its times)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        # A plain dict: insertion order is age, and the oldest id goes first.
        self._states: dict[str, LedgerState] = {}
        self._max = max_entries

    def __len__(self) -> int:
        return len(self._states)

    def get(self, call_id: str) -> LedgerEntry | None:
        state = self._states.get(call_id)
        return None if state is None else LedgerEntry(call_id, state)

    def sent(self, call_id: str, tool: str) -> LedgerEntry:
        """Record ``call_id`` as about to be sent. Raises :class:`AlreadySent` if it was seen."""
        if call_id in self._states:
            raise AlreadySent(f"{tool} call {call_id} was already sent")
        self._states[call_id] = "sent"
        while len(self._states) > self._max:
            del self._states[next(iter(self._states))]
        return LedgerEntry(call_id, "sent")

    def _move(self, call_id: str, state: LedgerState) -> LedgerEntry:
        current = self._states.get(call_id)
        if current is None:
            raise LocalError(f"ledger: no call {call_id}")
        if state not in _TRANSITIONS[current]:
            raise LocalError(f"ledger: {call_id} cannot go from {current} to {state}")
        self._states[call_id] = state
        return LedgerEntry(call_id, state)

    def done(self, call_id: str, outcome: Literal["ok", "error"]) -> LedgerEntry:
        """The call ended with a definite answer."""
        return self._move(call_id, outcome)

    def interrupted(self, call_id: str) -> LedgerEntry:
        """The call was sent but its fate is not known: report ``unknown``, never re-send."""
        return self._move(call_id, "unknown")

    def unknown(self) -> list[LedgerEntry]:
        """Entries whose outcome is unknown."""
        return [LedgerEntry(c, s) for c, s in self._states.items() if s == "unknown"]

    def in_flight(self) -> list[LedgerEntry]:
        """Entries sent and not yet ended (e.g. to mark unknown after a crash)."""
        return [LedgerEntry(c, s) for c, s in self._states.items() if s == "sent"]
