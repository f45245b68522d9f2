"""The turn queue's rules, step by step (no asyncio)."""

from __future__ import annotations

from actors.turn_scheduler import Queued, Refused, Start, TurnQueue, TurnTicket
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
