"""Backoff, pure (no asyncio): how long to wait before the next try of something outside.

Exponential backoff with jitter, so that many clients retrying the same thing (relays
reconnecting to one daemon, children restarting) do not retry in step.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random

__all__ = ["Backoff", "Jitter"]


class Jitter(enum.Enum):
    NONE = "none"
    FULL = "full"  # uniform in [0, capped exponential]
    DECORRELATED = "decorrelated"  # uniform in [initial, previous delay * 3], capped


class Backoff:
    """Exponential backoff with jitter (AWS Architecture Blog, "Exponential Backoff And Jitter").

    ``delay(attempt)`` with attempt 0, 1, 2, ... for consecutive tries: the step
    ``min(max_delay, initial * factor**attempt)``, then jittered. Pass a seeded ``random.Random``
    as ``rng`` for reproducible delays; without one, a private generator is made at the first
    jittered delay.

    A plain slotted class rather than a dataclass, and ``random`` imported only when a delay
    is drawn: the relay builds its policies on its start-up path (bench/bench_relay.py), where
    neither a dataclass's generated methods nor ``random`` would be used before a failure.
    """

    __slots__ = ("_previous", "factor", "initial", "jitter", "max_delay", "rng")

    def __init__(
        self,
        initial: float = 0.1,
        factor: float = 2.0,
        max_delay: float = 10.0,
        jitter: Jitter = Jitter.FULL,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.factor = factor
        self.max_delay = max_delay
        self.jitter = jitter
        self.rng = rng
        self._previous = 0.0

    def __repr__(self) -> str:
        return (
            f"Backoff(initial={self.initial!r}, factor={self.factor!r}, "
            f"max_delay={self.max_delay!r}, jitter={self.jitter})"
        )

    def step(self, attempt: int) -> float:
        """The capped exponential for ``attempt``, before jitter."""
        if attempt < 0:
            raise ValueError("attempt must be >= 0")
        try:
            return min(self.max_delay, self.initial * self.factor**attempt)
        except OverflowError:  # a long outage: the step has long been capped
            return self.max_delay

    def delay(self, attempt: int) -> float:
        capped = self.step(attempt)
        if self.jitter is Jitter.NONE:
            result = capped
        else:
            rng = self.rng
            if rng is None:
                import random

                rng = self.rng = random.Random()
            if self.jitter is Jitter.FULL:
                result = rng.uniform(0.0, capped)
            else:
                # Each delay grows from the previous one; attempt 0 starts a new series.
                previous = self.initial if attempt == 0 else max(self._previous, self.initial)
                result = min(self.max_delay, rng.uniform(self.initial, previous * 3.0))
        self._previous = result
        return result
