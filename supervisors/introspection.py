"""What the outside sees of a supervision tree: a ``SupervisionEvent`` for each thing a
supervisor does, given to its ``observer`` as it happens (the fault harness checks restarts and
escalations against the intensity with them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SupervisionEvent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisionEvent:
    """What a supervisor did: a child ``exited`` (``abnormal``: with an exception), was
    ``restarted``, or the supervisor ``escalated`` (child: the one whose exit was one too many)."""

    supervisor: str
    child: str
    kind: Literal["exited", "restarted", "escalated"]
    at: float  # the supervisor's clock (monotonic seconds)
    abnormal: bool = False
