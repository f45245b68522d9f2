"""Restart policy, pure (no asyncio): which children to restart, whether, and how often.

The rules are Erlang/OTP's (``supervisor`` behaviour, "Restart Strategy" and "Child
Specification" in the OTP design principles):

=================  ==============================================================
strategy           children restarted when ``failed`` must be restarted
=================  ==============================================================
ONE_FOR_ONE        ``failed`` only
ONE_FOR_ALL        every child, in start order
REST_FOR_ONE       ``failed`` and every child started after it, in start order
=================  ==============================================================

=================  =================  =================
restart type       normal exit        abnormal exit
=================  =================  =================
PERMANENT          restart            restart
TRANSIENT          no                 restart
TEMPORARY          no                 no
=================  =================  =================

An exit is *abnormal* when the child ended with an ``Exception``; a requested stop, a return and a
cancellation are normal. Restart intensity: more than ``max_restarts`` restarts within
``within_seconds`` means restarting does not help, so the supervisor stops its children and fails
upward. Backoff (not in OTP; for children that depend on something outside the process) is
``actors.runtime.backoff.Backoff``, given per child in its ``ChildSpec``.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "RestartIntensity",
    "RestartType",
    "Strategy",
    "children_to_restart",
    "should_restart",
]


class Strategy(enum.Enum):
    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


class RestartType(enum.Enum):
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    TEMPORARY = "temporary"


def should_restart(restart_type: RestartType, abnormal: bool) -> bool:
    """Whether a child that exited (``abnormal``: with an Exception) is to be restarted."""
    if restart_type is RestartType.PERMANENT:
        return True
    if restart_type is RestartType.TRANSIENT:
        return abnormal
    return False


def children_to_restart(strategy: Strategy, ordered_names: Sequence[str], failed: str) -> list[str]:
    """The children to (stop and) restart because ``failed`` must be restarted, in start order.

    ``ordered_names`` is the supervisor's children in start order; ``failed`` must be among them.
    """
    if failed not in ordered_names:
        raise ValueError(f"unknown child {failed!r}")
    if strategy is Strategy.ONE_FOR_ONE:
        return [failed]
    if strategy is Strategy.ONE_FOR_ALL:
        return list(ordered_names)
    return list(ordered_names[ordered_names.index(failed) :])


@dataclass(slots=True)
class RestartIntensity:
    """At most ``max_restarts`` restarts in any window of ``within_seconds``."""

    max_restarts: int = 3
    within_seconds: float = 5.0
    _times: deque[float] = field(default_factory=deque, init=False, repr=False)

    def record(self, now: float) -> bool:
        """Record a restart at ``now`` (monotonic seconds); False: intensity exceeded, escalate."""
        times = self._times
        times.append(now)
        while times and times[0] <= now - self.within_seconds:
            times.popleft()
        return len(times) <= self.max_restarts

    @property
    def recent(self) -> int:
        """Restarts recorded in the current window (as of the last ``record``)."""
        return len(self._times)
