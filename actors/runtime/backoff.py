"""Backoff, pure (no asyncio): how long to wait before the next try of something outside.

One policy (docs/architecture.md section 3) for the three places that retry a connection or a
restart: exponential backoff with jitter, so that many clients retrying the same thing (relays
reconnecting to one daemon, restarting children) do not retry in step. Attempt ``n`` (0, 1, ...)
has the step ``min(cap, initial * factor**n)``, then jitter draws the delay:

=============  ==========================================
jitter         delay
=============  ==========================================
FULL           uniform in [0, step]
EQUAL          step / 2 + uniform in [0, step / 2]
DECORRELATED   uniform in [initial, previous * 3], capped
NONE           step
=============  ==========================================

Where it is used and with which numbers is stated once, in docs/architecture.md section 3: the
relay's link to the daemon (the constants below, and :class:`ReconnectPlan`, which drives the
Uplink's connector: delays, time budget, when to start the daemon), the relay supervisor's
Uplink restarts (:func:`link_backoff`), and the extension's reconnect to the host
(``extension/lib/native.js``, which implements the same policy in JavaScript).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random

__all__ = [
    "DAEMON_START_INTERVAL_S",
    "FIRST_CONNECT_BUDGET_S",
    "LINK_BACKOFF_CAP_S",
    "LINK_BACKOFF_FACTOR",
    "LINK_BACKOFF_INITIAL_S",
    "RECONNECT_BUDGET_S",
    "Backoff",
    "Jitter",
    "ReconnectPlan",
    "link_backoff",
]

LINK_BACKOFF_INITIAL_S = 0.05
LINK_BACKOFF_FACTOR = 2.0
LINK_BACKOFF_CAP_S = 1.0
#: How long the relay tries to reach a daemon before giving up: at start-up (Chrome waits for
#: ``hello.ack``, and a daemon may be starting) and after the link dropped.
FIRST_CONNECT_BUDGET_S = 20.0
RECONNECT_BUDGET_S = 10.0
#: A daemon takes a moment to start and listen; starting another sooner would only race it
#: (the daemon's lock makes the second one exit at once, so this saves work, not correctness).
DAEMON_START_INTERVAL_S = 3.0


class Jitter(enum.Enum):
    NONE = "none"
    FULL = "full"  # uniform in [0, capped exponential]
    EQUAL = "equal"  # half the capped exponential, plus uniform in [0, the other half]
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
            elif self.jitter is Jitter.EQUAL:
                result = capped / 2.0 + rng.uniform(0.0, capped / 2.0)
            else:
                # Each delay grows from the previous one; attempt 0 starts a new series.
                previous = self.initial if attempt == 0 else max(self._previous, self.initial)
                result = min(self.max_delay, rng.uniform(self.initial, previous * 3.0))
        self._previous = result
        return result


def link_backoff(rng: random.Random | None = None) -> Backoff:
    """The relay's link policy: FULL jitter, 50 ms doubling to 1 s."""
    return Backoff(
        initial=LINK_BACKOFF_INITIAL_S,
        factor=LINK_BACKOFF_FACTOR,
        max_delay=LINK_BACKOFF_CAP_S,
        jitter=Jitter.FULL,
        rng=rng,
    )


class ReconnectPlan:
    """The Uplink connector's schedule once its first, cheap attempt has failed.

    Create it at that failure (``now``: monotonic seconds; the budget runs from here). After each
    further failed attempt the connector asks, in this order:

    1. ``should_start_daemon(now)`` if nothing answered (no socket, refused, timed out; not a
       handshake the daemon refused): True the first time, then once ``DAEMON_START_INTERVAL_S``
       has passed since the last start. A True answer counts as a start.
    2. ``next_delay(now)``: the wait before the next attempt, or None once ``budget_s`` has been
       spent (give up). As with tenacity's ``stop_after_delay``, the budget is checked after an
       attempt, so the last wait may end a little past it.
    """

    __slots__ = ("_backoff", "_daemon_started_at", "_started_at", "budget_s", "failures")

    def __init__(self, *, budget_s: float, now: float, backoff: Backoff | None = None) -> None:
        self.budget_s = budget_s
        self.failures = 0  # attempts failed since the plan began
        self._started_at = now
        self._daemon_started_at: float | None = None
        self._backoff = backoff if backoff is not None else link_backoff()

    def should_start_daemon(self, now: float) -> bool:
        started = self._daemon_started_at
        if started is not None and now - started <= DAEMON_START_INTERVAL_S:
            return False
        self._daemon_started_at = now
        return True

    def next_delay(self, now: float) -> float | None:
        self.failures += 1
        if now - self._started_at >= self.budget_s:
            return None
        return self._backoff.delay(self.failures - 1)
