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

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

from messages.errors import LocalError

__all__ = ["AlreadySent", "CallLedger", "LedgerEntry", "LedgerState"]

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


@dataclass(slots=True, kw_only=True)
class LedgerEntry:
    call_id: str
    tool: str
    state: LedgerState = "sent"
    sent_at: float = field(default_factory=time.monotonic)
    done_at: float | None = None


class CallLedger:
    """Page-changing calls of one scope (e.g. a connection), newest last, bounded in size."""

    def __init__(self, max_entries: int = 1024) -> None:
        self._entries: OrderedDict[str, LedgerEntry] = OrderedDict()
        self._max = max_entries

    def get(self, call_id: str) -> LedgerEntry | None:
        return self._entries.get(call_id)

    def sent(self, call_id: str, tool: str) -> LedgerEntry:
        """Record ``call_id`` as about to be sent. Raises :class:`AlreadySent` if it was seen."""
        if call_id in self._entries:
            raise AlreadySent(f"{tool} call {call_id} was already sent")
        entry = LedgerEntry(call_id=call_id, tool=tool)
        self._entries[call_id] = entry
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return entry

    def _move(self, call_id: str, state: LedgerState) -> LedgerEntry:
        entry = self._entries.get(call_id)
        if entry is None:
            raise LocalError(f"ledger: no call {call_id}")
        if state not in _TRANSITIONS[entry.state]:
            raise LocalError(f"ledger: {call_id} cannot go from {entry.state} to {state}")
        entry.state = state
        entry.done_at = time.monotonic()
        return entry

    def done(self, call_id: str, outcome: Literal["ok", "error"]) -> LedgerEntry:
        """The call ended with a definite answer."""
        return self._move(call_id, outcome)

    def interrupted(self, call_id: str) -> LedgerEntry:
        """The call was sent but its fate is not known: report ``unknown``, never re-send."""
        return self._move(call_id, "unknown")

    def unknown(self) -> list[LedgerEntry]:
        """Entries whose outcome is unknown."""
        return [e for e in self._entries.values() if e.state == "unknown"]

    def in_flight(self) -> list[LedgerEntry]:
        """Entries sent and not yet ended (e.g. to mark unknown after a crash)."""
        return [e for e in self._entries.values() if e.state == "sent"]
