"""TurnScheduler: which turns run, which wait in line, and how a turn is stopped.

The rules are a pure :class:`TurnQueue` (tested step by step); the :class:`TurnScheduler` actor
applies its decisions: it launches turn tasks, cancels them, and reports queue positions.

Rules (protocol.md sections 3b and 4, architecture.md section 2):

- **One turn per session at a time.** A second ``chat.send`` on a session that has a turn
  running or waiting is refused with ``BUSY`` (v1 ``aborted``), or — v2, when the config says
  ``queue`` — waits behind it.
- **Across sessions: FIFO under a concurrency limit** (default 4; 1 gives "one turn at a time,
  others wait in line"). A waiting turn starts when a slot is free *and* its session has no turn
  running; it keeps its place otherwise.
- **Waiting for the user gives the slot up.** A turn blocked on an approval or ``ask_user``
  ``yield_slot``s; when answered it ``reclaim``s at once (it may run over the limit for a moment
  rather than make the user wait twice).
- **Cancel.** A queued turn is removed (it ends with ``CANCELLED``); a running turn's task is
  cancelled with a reason — the user's cancel ends in ``chat.done`` with the partial text, a lost
  connection in ``CONNECTION_LOST``. The turn itself sends its end; the scheduler never does for a
  running turn, so there is exactly one.
- **A connection drops:** its sessions' queued turns are dropped and their running turns
  cancelled with ``CONNECTION_LOST``.

Rebuilding after a restart: the scheduler fails what it held (its turn tasks are cancelled with
``INTERNAL`` and end definitely); the journal keeps the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from actors.agent.turn_queue import CancelReason, Queued, Start, TurnQueue, TurnTicket
from actors.runtime.actor import Actor
from actors.runtime.ref import Overflow
from messages.errors import ErrorCode

__all__ = [
    "CancelTurns",
    "DropLinkTurns",
    "Reclaim",
    "SchedulerMsg",
    "SetLimit",
    "SubmitTurn",
    "TurnBoard",
    "TurnEnded",
    "TurnScheduler",
    "YieldSlot",
]

log = logging.getLogger(__name__)

#: Waiting turns this near the front hear every change of their place in line.
EXACT_POSITIONS = 10
#: Place-in-line updates go out at most this often (seconds): a busy line moves many times a
#: second, and a panel needs its number, not every step of it.
POSITION_INTERVAL = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitTurn:
    ticket: TurnTicket


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnded:
    turn_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelTurns:
    session_id: str
    turn_id: str | None = None
    reason: CancelReason = CancelReason.USER


@dataclass(frozen=True, slots=True, kw_only=True)
class DropLinkTurns:
    link_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class YieldSlot:
    turn_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reclaim:
    turn_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetLimit:
    """The config changed: run at most ``limit`` turns at once from now on."""

    limit: int


SchedulerMsg = SubmitTurn | TurnEnded | CancelTurns | DropLinkTurns | YieldSlot | Reclaim | SetLimit


class TurnBoard:
    """What the rest of the agent may read of the scheduler, synchronously: the current
    incarnation's queue and why a turn was cancelled. Plain data handed to each incarnation
    (like the route table), written only by the scheduler."""

    def __init__(self) -> None:
        self.queue: TurnQueue | None = None
        #: Why a running turn was cancelled; read by the turn as it ends, dropped when it ended.
        self.cancel_reasons: dict[str, CancelReason] = {}

    def is_running(self, session_id: str) -> bool:
        """Has *session_id* a turn running or waiting?"""
        queue = self.queue
        return queue is not None and any(
            t.session_id == session_id for t in queue.running() + queue.waiting()
        )

    def in_flight(self, turn_id: str) -> bool:
        """Is turn *turn_id* running?"""
        return self.queue is not None and any(t.turn_id == turn_id for t in self.queue.running())

    def cancel_reason(self, turn_id: str) -> CancelReason | None:
        return self.cancel_reasons.get(turn_id)


#: Starts a turn's task (a supervised temporary child); the scheduler keeps it to cancel it. The
#: task must end the turn itself.
Launch = Callable[[TurnTicket], Awaitable["asyncio.Task[None]"]]
#: Ends a turn that never ran (cancelled while queued, or its connection dropped).
EndQueued = Callable[[TurnTicket, ErrorCode], Awaitable[None]]
#: Tells a waiting turn its place in line (v2 ``chat.queued``).
NotifyQueued = Callable[[TurnTicket, int], Awaitable[None]]


class TurnScheduler(Actor[SchedulerMsg]):
    """Applies the :class:`TurnQueue`'s decisions: launches turns, cancels them, reports places
    in line (see the module docstring). One per daemon, in the agent's supervisor."""

    mailbox_size = 1024
    overflow = Overflow.WAIT

    def __init__(
        self,
        *,
        board: TurnBoard,
        launch: Launch,
        end_queued: EndQueued,
        notify_queued: NotifyQueued,
        limit: int = 4,
        same_session: str = "queue",
        position_interval: float = POSITION_INTERVAL,
    ) -> None:
        self.queue = TurnQueue(limit, same_session=same_session)
        self.board = board
        board.queue = self.queue  # what the agent reads: this incarnation's line
        self.position_interval = position_interval
        self._last_report = float("-inf")  # loop time of the last place-in-line round
        self._report_due: asyncio.Task[None] | None = None
        self._launch = launch
        self._end_queued = end_queued
        self._notify_queued = notify_queued
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.cancel_reasons = board.cancel_reasons
        self._told: dict[str, int] = {}  # turn id -> the place in line it was last told

    async def handle(self, msg: SchedulerMsg) -> Any:
        if isinstance(msg, SubmitTurn):
            decision = self.queue.submit(msg.ticket)
            if isinstance(decision, Start):
                await self._start(decision.ticket)
            elif isinstance(decision, Queued):
                self._told[msg.ticket.turn_id] = decision.position  # the submitter tells it
            return decision
        if isinstance(msg, TurnEnded):
            self._tasks.pop(msg.turn_id, None)
            self.cancel_reasons.pop(msg.turn_id, None)
            await self._started(self.queue.finish(msg.turn_id))
        elif isinstance(msg, CancelTurns):
            removed, running = self.queue.cancel(msg.session_id, msg.turn_id)
            await self._cancel(removed, running, msg.reason)
        elif isinstance(msg, DropLinkTurns):
            removed, running = self.queue.drop_link(msg.link_id)
            await self._cancel(removed, running, CancelReason.CONNECTION_LOST)
        elif isinstance(msg, YieldSlot):
            await self._started(self.queue.yield_slot(msg.turn_id))
        elif isinstance(msg, Reclaim):
            self.queue.reclaim(msg.turn_id)
        elif isinstance(msg, SetLimit):
            await self._started(self.queue.set_limit(msg.limit))
        return None

    async def _start(self, ticket: TurnTicket) -> None:
        self._told.pop(ticket.turn_id, None)
        self._tasks[ticket.turn_id] = await self._launch(ticket)

    async def _started(self, tickets: list[TurnTicket]) -> None:
        for ticket in tickets:
            await self._start(ticket)
        if tickets:
            await self._line_moved()

    async def _line_moved(self) -> None:
        """The line moved: report places now, or once ``position_interval`` has passed since the
        last round (one round covers every move in between)."""
        if self._report_due is not None:
            return  # a round is already due and will see this move
        wait = self._last_report + self.position_interval - asyncio.get_running_loop().time()
        if wait <= 0:
            await self._report_positions()
        else:
            self._report_due = asyncio.ensure_future(self._report_later(wait))

    async def _report_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        self._report_due = None
        try:
            await self._report_positions()
        except Exception:  # a panel's connection may be gone; its turn ends on its own path
            log.exception("could not report places in line")

    async def _report_positions(self) -> None:
        """Tell waiting v2 turns their new place in line.

        Every turn that starts moves the whole line, so telling everyone every time costs
        O(n^2) frames with n turns waiting (bench/bench_turns.py). A turn hears of its new place
        when it is near the front (within ``EXACT_POSITIONS``) or has moved up by a tenth since
        the last place it was told: what a panel shows is never far off, and the frames stay few.
        Rounds are at most ``position_interval`` apart (:meth:`_line_moved`).
        """
        self._last_report = asyncio.get_running_loop().time()
        for position, ticket in enumerate(self.queue.waiting(), 1):
            if ticket.protocol < 2:
                continue
            told = self._told.get(ticket.turn_id)
            if told == position:
                continue
            if told is None or position <= EXACT_POSITIONS or position <= told * 0.9:
                self._told[ticket.turn_id] = position
                await self._notify_queued(ticket, position)

    async def _cancel(
        self, removed: list[TurnTicket], running: list[TurnTicket], reason: CancelReason
    ) -> None:
        code = ErrorCode.CANCELLED if reason is CancelReason.USER else ErrorCode.CONNECTION_LOST
        for ticket in removed:
            self._told.pop(ticket.turn_id, None)
            await self._end_queued(ticket, code)
        for ticket in running:
            task = self._tasks.get(ticket.turn_id)
            if task is not None and not task.done():
                self.cancel_reasons[ticket.turn_id] = reason
                task.cancel()
        if removed:
            await self._line_moved()

    async def on_stop(self) -> None:
        await self._fail_held()

    async def on_failure(self, exc: BaseException) -> None:
        log.error("the turn scheduler crashed; ending every turn it held")
        await self._fail_held()

    async def _fail_held(self) -> None:
        """A stopping or crashed scheduler fails what it holds with a definite end: waiting
        turns get ``chat.error`` here; running ones are cancelled and end themselves."""
        if self._report_due is not None:
            self._report_due.cancel()
            self._report_due = None
        for ticket in self.queue.waiting():
            try:
                await self._end_queued(ticket, ErrorCode.INTERNAL)
            except Exception:  # the connection may be gone: the journal has the turn
                log.exception("could not end queued turn %s", ticket.turn_id)
        self.queue = TurnQueue(self.queue.limit, same_session=self.queue.same_session)
        self.board.queue = self.queue
        self._cancel_all()

    def _cancel_all(self) -> None:
        for turn_id, task in list(self._tasks.items()):
            if not task.done():
                self.cancel_reasons.setdefault(turn_id, CancelReason.SHUTDOWN)
                task.cancel()
