"""What the outside sees of a supervision tree, pushed and pulled.

* Pushed: a ``SupervisionEvent`` for each thing a supervisor does, given to its ``observer`` as
  it happens (the fault harness checks restarts and escalations against the intensity with them).
* Pulled: ``Supervisor.describe()`` returns a ``SupervisorInfo``, a snapshot of the tree in the
  manner of Erlang's observer, for ``browy daemon tree``. It is plain data — dicts, lists,
  strings and numbers, nested supervisors described recursively — so it goes through JSON or
  msgpack as it is::

      {"name": "agent", "strategy": "one_for_one", "max_restarts": 5, "within_seconds": 10.0,
       "children": [
         {"name": "session-router", "kind": "actor", "restart": "permanent",
          "state": "running", "mailbox_depth": 0, "restarts": 1,
          "restart_times": [1718000000.5], "uptime_s": 12.3, "supervisor": null},
         {"name": "turns", "kind": "supervisor", ..., "mailbox_depth": null,
          "supervisor": {"name": "turns", "strategy": "one_for_one", ..., "children": [...]}}]}

  TypedDicts rather than dataclasses: they cost next to nothing at import (the relay imports this on
  its start-up path) and need no conversion on the way out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict, runtime_checkable

__all__ = [
    "RESTART_HISTORY",
    "ChildInfo",
    "ChildKind",
    "ChildState",
    "Describable",
    "SupervisionEvent",
    "SupervisorInfo",
    "recent_restarts",
]

#: How many restart times each child keeps (the most recent ones).
RESTART_HISTORY = 64

#: ``task``: a coroutine child (or any other child without a mailbox that is not a supervisor).
ChildKind = Literal["actor", "thread", "task", "supervisor"]
#: ``restarting``: between an exit that is restarted and the new incarnation's start (stopping
#: siblings, waiting out the backoff, retrying a failed start); ``stopped``: not running and not
#: to be restarted (a transient child that ended normally, or a supervisor that has stopped).
ChildState = Literal["running", "restarting", "stopped"]


class ChildInfo(TypedDict):
    """One child of a described supervisor."""

    name: str
    kind: ChildKind
    restart: str  # the restart type: "permanent" | "transient" | "temporary"
    state: ChildState
    mailbox_depth: int | None  # messages queued; None without a mailbox or when not running
    restarts: int  # since the supervisor started
    restart_times: list[
        float
    ]  # wall clock (Unix seconds) of the last RESTART_HISTORY, oldest first
    uptime_s: float | None  # of the current incarnation; None unless running
    supervisor: SupervisorInfo | None  # a running nested supervisor's own description


class SupervisorInfo(TypedDict):
    """A supervisor: its strategy, its restart intensity, and its children in start order."""

    name: str
    strategy: str  # "one_for_one" | "one_for_all" | "rest_for_one"
    max_restarts: int  # restart intensity: at most this many restarts ...
    within_seconds: float  # ... in any window this long
    children: list[ChildInfo]


@runtime_checkable
class Describable(Protocol):
    """A child that describes itself: a nested supervisor."""

    def describe(self) -> SupervisorInfo: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisionEvent:
    """What a supervisor did: a child ``exited`` (``abnormal``: with an exception), was
    ``restarted``, or the supervisor ``escalated`` (child: the one whose exit was one too many)."""

    supervisor: str
    child: str
    kind: Literal["exited", "restarted", "escalated"]
    at: float  # the supervisor's clock (monotonic seconds)
    abnormal: bool = False


def recent_restarts(
    tree: SupervisorInfo, *, within_s: float = 3600.0, now: float | None = None
) -> list[tuple[str, int, float]]:
    """Children restarted in the last *within_s* seconds: (path, how many times, last time)."""
    now = time.time() if now is None else now
    found: list[tuple[str, int, float]] = []

    def walk(sup: SupervisorInfo, path: str) -> None:
        for child in sup["children"]:
            name = f"{path}/{child['name']}"
            times = [t for t in child["restart_times"] if now - t <= within_s]
            if times:
                found.append((name, len(times), max(times)))
            nested = child.get("supervisor")
            if nested:
                walk(nested, name)

    walk(tree, tree["name"])
    return found
