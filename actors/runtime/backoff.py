"""Backoff, pure (no asyncio): how long to wait before the next try of something outside.

Exponential backoff with jitter, so that many clients retrying the same thing (relays
reconnecting to one daemon, children restarting) do not retry in step.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field

__all__ = ["Backoff", "Jitter"]


class Jitter(enum.Enum):
    NONE = "none"
    FULL = "full"  # uniform in [0, capped exponential]
    DECORRELATED = "decorrelated"  # uniform in [initial, previous delay * 3], capped


@dataclass(slots=True)
class Backoff:
    """Exponential backoff with jitter (AWS Architecture Blog, "Exponential Backoff And Jitter").

    ``delay(attempt)`` with attempt 0, 1, 2, ... for consecutive restarts. Pass a seeded
    ``random.Random`` as ``rng`` for reproducible delays.
    """

    initial: float = 0.1
    factor: float = 2.0
    max_delay: float = 10.0
    jitter: Jitter = Jitter.FULL
    rng: random.Random = field(default_factory=random.Random)
    _previous: float = field(default=0.0, init=False, repr=False)

    def delay(self, attempt: int) -> float:
        if attempt < 0:
            raise ValueError("attempt must be >= 0")
        capped = min(self.max_delay, self.initial * self.factor**attempt)
        if self.jitter is Jitter.NONE:
            result = capped
        elif self.jitter is Jitter.FULL:
            result = self.rng.uniform(0.0, capped)
        else:
            # Each delay grows from the previous one; attempt 0 starts a new series.
            previous = self.initial if attempt == 0 else max(self._previous, self.initial)
            result = min(self.max_delay, self.rng.uniform(self.initial, previous * 3.0))
        self._previous = result
        return result
