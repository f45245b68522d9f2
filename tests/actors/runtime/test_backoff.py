"""Backoff and the relay's reconnect plan, step by step: no event loop, a clock given by the
test, seeded (or rigged) random numbers."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path

import pytest

from actors.runtime.backoff import (
    DAEMON_START_INTERVAL_S,
    FIRST_CONNECT_BUDGET_S,
    Backoff,
    Jitter,
    ReconnectPlan,
    link_backoff,
)

ROOT = Path(__file__).resolve().parents[3]


def test_backoff_without_jitter_grows_exponentially_up_to_the_cap() -> None:
    backoff = Backoff(initial=0.1, factor=2.0, max_delay=0.5, jitter=Jitter.NONE)
    assert [backoff.delay(a) for a in range(5)] == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])


def test_full_jitter_stays_within_zero_and_the_capped_exponential() -> None:
    backoff = Backoff(initial=0.1, factor=2.0, max_delay=1.0, rng=random.Random(7))
    for attempt in range(10):
        assert 0.0 <= backoff.delay(attempt) <= min(1.0, 0.1 * 2.0**attempt)


def test_decorrelated_jitter_stays_between_initial_and_the_cap() -> None:
    backoff = Backoff(initial=0.1, max_delay=2.0, jitter=Jitter.DECORRELATED, rng=random.Random(3))
    delays = [backoff.delay(attempt) for attempt in range(20)]
    assert all(0.1 <= d <= 2.0 for d in delays)
    assert max(delays) > 0.3  # it does grow


def test_equal_jitter_keeps_at_least_half_the_step() -> None:
    backoff = Backoff(
        initial=0.5, factor=2.0, max_delay=30.0, jitter=Jitter.EQUAL, rng=random.Random(5)
    )
    for attempt in range(12):
        step = min(30.0, 0.5 * 2.0**attempt)
        assert step / 2 <= backoff.delay(attempt) <= step


def test_a_seeded_rng_makes_the_delays_reproducible() -> None:
    def run() -> list[float]:
        backoff = Backoff(rng=random.Random(42))
        return [backoff.delay(a) for a in range(6)]

    assert run() == run()


def test_a_negative_attempt_is_an_error() -> None:
    with pytest.raises(ValueError, match="attempt"):
        Backoff().delay(-1)


def test_a_very_long_series_stays_at_the_cap_instead_of_overflowing() -> None:
    backoff = Backoff(initial=0.05, factor=2.0, max_delay=1.0, jitter=Jitter.NONE)
    assert backoff.delay(5_000) == 1.0
    assert 0.0 <= Backoff(max_delay=1.0, rng=random.Random(1)).delay(5_000) <= 1.0


def test_building_a_backoff_or_a_plan_imports_neither_random_nor_dataclasses() -> None:
    # The relay builds its policies on its start-up path; random comes only with the first delay.
    code = (
        "import sys\n"
        "from actors.runtime.backoff import Backoff\n"
        "from actors.runtime.backoff import ReconnectPlan\n"
        "b = Backoff(initial=0.05, max_delay=1.0)\n"
        "ReconnectPlan(budget_s=20.0, now=0.0)\n"
        "print(' '.join(sorted({'random', 'dataclasses'} & set(sys.modules))))\n"
        "b.delay(0)\n"
        "print('random' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["", "True"]


class Highest(random.Random):
    """Rigged: every draw is the top of its range, so each delay is the whole step."""

    def uniform(self, a: float, b: float) -> float:
        return b


def test_the_link_policy_doubles_from_50_ms_to_a_1_s_cap_with_full_jitter() -> None:
    assert [link_backoff(Highest()).delay(n) for n in range(7)] == pytest.approx(
        [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    )
    seeded = link_backoff(random.Random(11))
    assert all(0.0 <= seeded.delay(n) <= min(1.0, 0.05 * 2**n) for n in range(30))


def test_the_plan_waits_the_link_backoff_between_attempts() -> None:
    plan = ReconnectPlan(budget_s=10.0, now=100.0, backoff=link_backoff(Highest()))
    delays = [plan.next_delay(100.0 + t) for t in (0.0, 0.1, 0.2, 0.5, 1.0, 2.0)]
    assert delays == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.0])
    assert plan.failures == 6


def test_a_seeded_plan_draws_the_same_delays_as_a_seeded_link_backoff() -> None:
    plan = ReconnectPlan(budget_s=10.0, now=0.0, backoff=link_backoff(random.Random(3)))
    reference = link_backoff(random.Random(3))
    assert [plan.next_delay(0.0) for _ in range(8)] == [reference.delay(n) for n in range(8)]


def test_the_budget_runs_from_the_plans_start_and_is_checked_after_each_attempt() -> None:
    plan = ReconnectPlan(budget_s=10.0, now=50.0, backoff=link_backoff(Highest()))
    assert plan.next_delay(59.99) is not None
    assert plan.next_delay(60.0) is None  # spent: give up


def test_the_daemon_is_started_at_the_first_silence_then_at_most_every_3_s() -> None:
    plan = ReconnectPlan(budget_s=20.0, now=0.0)
    assert DAEMON_START_INTERVAL_S == 3.0
    answers = [(t, plan.should_start_daemon(t)) for t in (0.0, 1.0, 3.0, 3.01, 5.0, 6.02)]
    assert answers == [
        (0.0, True),
        (1.0, False),
        (3.0, False),  # not yet *more* than 3 s
        (3.01, True),
        (5.0, False),
        (6.02, True),
    ]


def test_a_relay_that_never_reaches_a_daemon_gives_up_once_the_budget_is_spent() -> None:
    # The connector's loop with a clock the test moves: every attempt fails at once, nothing
    # answers; the daemon is started at the first failure and again every 3 s.
    now = 0.0
    plan = ReconnectPlan(budget_s=FIRST_CONNECT_BUDGET_S, now=now, backoff=link_backoff(Highest()))
    daemon_starts: list[float] = []
    while True:
        if plan.should_start_daemon(now):
            daemon_starts.append(now)
        delay = plan.next_delay(now)
        if delay is None:
            break
        now += delay
    assert FIRST_CONNECT_BUDGET_S <= now < FIRST_CONNECT_BUDGET_S + 1.0  # the last wait is <= 1 s
    assert daemon_starts[0] == 0.0
    # At most every 3 s, and again as soon as an attempt fails after that (waits are <= 1 s).
    assert all(3.0 < b - a <= 4.0 for a, b in itertools.pairwise(daemon_starts))
    assert daemon_starts[-1] > FIRST_CONNECT_BUDGET_S - 4.0
