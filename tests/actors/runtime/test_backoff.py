"""Backoff, step by step (no event loop): exponential growth, the cap, each kind of jitter."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from actors.runtime.backoff import Backoff, Jitter

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


def test_building_a_backoff_imports_neither_random_nor_dataclasses() -> None:
    # The relay builds its policies on its start-up path; random comes only with the first delay.
    code = (
        "import sys\n"
        "from actors.runtime.backoff import Backoff\n"
        "b = Backoff(initial=0.05, max_delay=1.0)\n"
        "print(' '.join(sorted({'random', 'dataclasses'} & set(sys.modules))))\n"
        "b.delay(0)\n"
        "print('random' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["", "True"]
