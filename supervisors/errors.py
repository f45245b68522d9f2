"""The supervisor's errors: what the owner of a supervision tree learns when it ends badly.

Errors::

    SupervisorError           the supervisor is not running (a request came too late), or:
     +-- SupervisorEscalation restart intensity exceeded: the children were stopped, it gave up
     +-- ChildStartFailed     a child failed to start in ``start()``; the started ones were stopped
"""

from __future__ import annotations

__all__ = ["ChildStartFailed", "SupervisorError", "SupervisorEscalation"]


class SupervisorError(Exception):
    """Base of the supervisor's errors."""


class SupervisorEscalation(SupervisorError):
    """Restart intensity exceeded: the supervisor stopped its children and gave up."""

    def __init__(self, name: str, cause: BaseException | None) -> None:
        super().__init__(f"supervisor {name!r}: restart intensity exceeded")
        self.supervisor_name = name
        self.__cause__ = cause


class ChildStartFailed(SupervisorError):
    """A child failed to start during ``start()``; the started ones were stopped."""
