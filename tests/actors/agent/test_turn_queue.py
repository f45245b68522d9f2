"""The turn queue's rules, step by step (no asyncio); then the scheduler's place-in-line reports."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from actors.agent.turn_queue import Queued, Refused, Start, TurnQueue, TurnTicket
from actors.agent.turn_scheduler import SubmitTurn, TurnBoard, TurnEnded, TurnScheduler
from actors.runtime.actor import spawn
from messages.errors import ErrorCode


def t(turn: str, session: str, link: int = 1, protocol: int = 2) -> TurnTicket:
    return TurnTicket(turn_id=turn, session_id=session, link_id=link, protocol=protocol)


def test_a_turn_starts_at_once_when_a_slot_is_free() -> None:
    q = TurnQueue(2)
    assert q.submit(t("a", "s1")) == Start(t("a", "s1"))


def test_with_limit_one_other_sessions_wait_in_line_and_start_in_order() -> None:
    q = TurnQueue(1)
    q.submit(t("a", "s1"))
    assert q.submit(t("b", "s2")) == Queued(t("b", "s2"), 1)
    assert q.submit(t("c", "s3")) == Queued(t("c", "s3"), 2)
    assert q.finish("a") == [t("b", "s2")]
    assert q.positions() == {"c": 1}
    assert q.finish("b") == [t("c", "s3")]


def test_a_second_send_on_a_v1_session_is_refused_busy() -> None:
    q = TurnQueue(4)
    q.submit(t("a", "s1", protocol=1))
    assert q.submit(t("b", "s1", protocol=1)) == Refused(t("b", "s1", protocol=1), ErrorCode.BUSY)


def test_a_second_v2_send_waits_behind_its_session_even_with_free_slots() -> None:
    q = TurnQueue(4)
    q.submit(t("a", "s1"))
    assert q.submit(t("b", "s1")) == Queued(t("b", "s1"), 1)
    assert q.submit(t("c", "s2")) == Start(t("c", "s2"))  # overtakes: its session is free
    assert q.finish("a") == [t("b", "s1")]


def test_v2_can_be_configured_to_refuse_instead_of_queueing() -> None:
    q = TurnQueue(4, same_session="refuse")
    q.submit(t("a", "s1"))
    assert isinstance(q.submit(t("b", "s1")), Refused)


def test_cancelling_a_queued_turn_removes_it_and_a_running_one_is_reported() -> None:
    q = TurnQueue(1)
    q.submit(t("a", "s1"))
    q.submit(t("b", "s2"))
    removed, running = q.cancel("s2")
    assert (removed, running) == ([t("b", "s2")], [])
    removed, running = q.cancel("s1")
    assert (removed, running) == ([], [t("a", "s1")])


def test_a_turn_waiting_for_the_user_gives_its_slot_to_the_next_in_line() -> None:
    q = TurnQueue(1)
    q.submit(t("a", "s1"))
    q.submit(t("b", "s2"))
    assert q.yield_slot("a") == [t("b", "s2")]
    q.reclaim("a")
    q.submit(t("c", "s3"))
    assert q.finish("b") == []  # a holds the slot again
    assert q.finish("a") == [t("c", "s3")]


def test_dropping_a_link_returns_its_queued_and_running_turns_only() -> None:
    q = TurnQueue(1)
    q.submit(t("a", "s1", link=1))
    q.submit(t("b", "s2", link=2))
    q.submit(t("c", "s3", link=1))
    removed, running = q.drop_link(1)
    assert removed == [t("c", "s3", link=1)]
    assert running == [t("a", "s1", link=1)]
    assert q.finish("a") == [t("b", "s2", link=2)]


@dataclass
class Line:
    """A scheduler whose turns run until the test ends them; what each waiting turn was told."""

    ref: Any = None
    told: list[tuple[str, int]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def submit_and_end(self, waiting: int, ended: int) -> None:
        for i in range(waiting):
            await self.ref.ask(SubmitTurn(ticket=t(f"t{i}", f"s{i}")), timeout=2)
        for i in range(ended):
            await self.ref.ask(TurnEnded(turn_id=f"t{i}"), timeout=2)


@asynccontextmanager
async def line(position_interval: float) -> AsyncIterator[Line]:
    result = Line()
    tasks: list[asyncio.Task[None]] = []

    async def launch(ticket: TurnTicket) -> asyncio.Task[None]:
        task = asyncio.ensure_future(asyncio.sleep(3600))
        tasks.append(task)
        return task

    async def end_queued(ticket: TurnTicket, code: ErrorCode) -> None:
        pass  # only when the scheduler stops at the end of the test

    async def notify(ticket: TurnTicket, position: int) -> None:
        result.told.append((ticket.turn_id, position))
        result.arrived.set()

    scheduler = TurnScheduler(
        board=TurnBoard(),
        launch=launch,
        end_queued=end_queued,
        notify_queued=notify,
        limit=1,
        position_interval=position_interval,
    )
    result.ref = await spawn(scheduler, name="sched")
    try:
        yield result
    finally:
        for task in tasks:
            task.cancel()
        await result.ref.stop()


async def test_waiting_turns_hear_their_place_near_the_front_and_on_big_moves_only() -> None:
    async with line(position_interval=0.0) as ln:  # every round at once: who hears what
        await ln.submit_and_end(waiting=40, ended=20)
    by_turn: dict[str, list[int]] = {}
    for turn, pos in ln.told:
        by_turn.setdefault(turn, []).append(pos)
    # The last in line (position 39 at submit) was told only on big moves, never more than a
    # tenth away from the truth; the front ones saw every step.
    last = by_turn["t39"]
    assert all(b <= a * 0.9 for a, b in itertools.pairwise(last))
    assert by_turn["t21"][-3:] == [3, 2, 1]  # near the front: every place
    assert len(ln.told) < 20 * 20  # far fewer than one frame per waiting turn per start


async def test_a_fast_moving_line_is_reported_in_rounds_that_end_on_the_true_places() -> None:
    async with line(position_interval=0.2) as ln:
        await ln.submit_and_end(waiting=30, ended=20)  # 20 starts in a burst, inside one interval
        last: dict[str, int] = {}

        def settled() -> bool:
            last.update(ln.told)
            return all(last.get(f"t{i}") == i - 20 for i in range(21, 30))

        async with asyncio.timeout(2):
            while not settled():
                ln.arrived.clear()
                await ln.arrived.wait()
    # The burst moved every waiting turn 20 places: the first move was reported at once (to the
    # 10 turns then near the front), the other 19 moves in one round, with the places the 9
    # still waiting have now. One round per move would have sent about 200 frames.
    assert [p for turn, p in ln.told if turn == "t25"] == [5]
    assert len(ln.told) == 10 + 9
