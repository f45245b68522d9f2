"""CallTable: browser calls of one connection, correlated by ``callId`` — pure, no asyncio.

The host asks the extension to run CDP commands (``cdp.send``) and tab operations (``tab.*``); the
extension answers each with ``tool.result{callId, ok, result?, error?}`` (protocol.md sections 2-3).
The table mints call ids, remembers what each call is (session, tab, method, page-changing,
owner) and lets each settle **once**. The state machine of one call, as data (conventions rule 2);
an illegal transition raises :class:`LocalError`::

    PENDING --answer--> ANSWERED        (the answer is delivered)
    PENDING --deadline--> TIMED_OUT     (REQUEST_TIMEOUT; v2 also sends cdp.cancel)
    PENDING --cancel--> CANCELLED       (the awaiting task was cancelled; v2 cdp.cancel)
    PENDING --lost--> LOST              (the connection, or the CDPProxy incarnation, went away)

A late answer, an answer to a cancelled call, or one for an unknown ``callId`` is logged and
dropped; nothing settles twice (protocol.md section 5, "Correlation"). Call ids carry a prefix
per CDPProxy incarnation, so an answer meant for a call of an incarnation that crashed can never
settle a call of the next one.
"""

from __future__ import annotations

import enum
import itertools
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from messages.errors import LocalError

__all__ = ["CallState", "CallTable", "PendingCall"]

log = logging.getLogger(__name__)

#: How many finished call ids are remembered so a late answer is told apart from an unknown one.
_FINISHED_MEMORY = 1024


class CallState(enum.Enum):
    PENDING = "pending"
    ANSWERED = "answered"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    LOST = "lost"


_TRANSITIONS: dict[CallState, frozenset[CallState]] = {
    CallState.PENDING: frozenset(
        {CallState.ANSWERED, CallState.TIMED_OUT, CallState.CANCELLED, CallState.LOST}
    ),
    CallState.ANSWERED: frozenset(),
    CallState.TIMED_OUT: frozenset(),
    CallState.CANCELLED: frozenset(),
    CallState.LOST: frozenset(),
}


@dataclass(slots=True, kw_only=True)
class PendingCall:
    """One browser call: what it is and where it stands. ``waiter`` is the caller's reply
    channel (opaque to the table)."""

    call_id: str
    session_id: str
    tab_id: int | None
    op: str  # the CDP method for cdp.send, else the tab.* type
    page_changing: bool
    owner_id: str | None
    state: CallState = CallState.PENDING
    waiter: Any = None

    def move(self, new: CallState) -> None:
        if new not in _TRANSITIONS[self.state]:
            raise LocalError(f"call {self.call_id}: illegal transition {self.state} -> {new}")
        self.state = new


class CallTable:
    """Correlates requests and answers by ``callId``; settles each call at most once. No I/O.

    Use :meth:`open` before sending, then exactly one of :meth:`answer` (the peer answered),
    :meth:`finish` (deadline or cancel) or :meth:`lose_all` (the connection went away).
    """

    def __init__(self, prefix: str = "h") -> None:
        self._prefix = prefix
        self._ids = itertools.count(1)
        self.pending: dict[str, PendingCall] = {}
        # Recently finished calls, so a late answer is logged as late rather than as unknown.
        self._finished: OrderedDict[str, CallState] = OrderedDict()

    def open(
        self,
        *,
        session_id: str,
        tab_id: int | None,
        op: str,
        page_changing: bool,
        owner_id: str | None,
        waiter: Any = None,
    ) -> PendingCall:
        """Register a new call and return it (its ``call_id`` goes on the wire)."""
        call = PendingCall(
            call_id=f"{self._prefix}{next(self._ids)}",
            session_id=session_id,
            tab_id=tab_id,
            op=op,
            page_changing=page_changing,
            owner_id=owner_id,
            waiter=waiter,
        )
        self.pending[call.call_id] = call
        return call

    def _close(self, call: PendingCall, state: CallState) -> None:
        call.move(state)
        del self.pending[call.call_id]
        self._finished[call.call_id] = state
        while len(self._finished) > _FINISHED_MEMORY:
            self._finished.popitem(last=False)

    def answer(self, call_id: str, session_id: str | None = None) -> PendingCall | None:
        """An answer arrived. Returns the call it settles, or None when it must be dropped
        (late, cancelled, unknown, or from another session); the reason is logged."""
        call = self.pending.get(call_id)
        if call is None:
            state = self._finished.get(call_id)
            if state is None:
                log.warning("dropping tool.result for unknown callId %r", call_id[:64])
            else:
                log.info("dropping late tool.result for callId %s (%s)", call_id, state.value)
            return None
        if session_id is not None and session_id != call.session_id:
            log.warning("dropping tool.result for %s from another session", call_id)
            return None
        self._close(call, CallState.ANSWERED)
        return call

    def finish(self, call_id: str, state: CallState) -> PendingCall | None:
        """The host gave up on a call (``TIMED_OUT``/``CANCELLED``/``LOST``). None if it had
        already settled (then the answer won and nothing changes)."""
        call = self.pending.get(call_id)
        if call is None:
            return None
        self._close(call, state)
        return call

    def lose_all(self) -> list[PendingCall]:
        """Every pending call becomes ``LOST``; returns them."""
        calls = list(self.pending.values())
        for call in calls:
            self._close(call, CallState.LOST)
        return calls
