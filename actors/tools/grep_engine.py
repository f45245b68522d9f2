"""The ``grep`` tool's regular expressions: RE2, so that a pattern from the model cannot freeze
the daemon.

Python's ``re`` backtracks, and holds the GIL while it matches: ``(a+)+$`` on a line of a few dozen
``a`` and a ``b`` takes minutes, during which no other thread of the daemon runs — not the event
loop, not the Logger. RE2 (the ``google-re2`` package) matches in time linear in the text whatever
the pattern, so grep needs no deadline and no subprocess. It takes Python's syntax except
backreferences and lookaround (the features that need backtracking); a pattern that uses them gets
a :class:`ToolError` saying so, which the model can act on.
"""

from __future__ import annotations

import re
from typing import Any

import re2

from actors.tools.tool_def import ToolError

__all__ = ["compile_for_grep"]

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # RE2 would print a refused pattern to stderr; we say it instead


def compile_for_grep(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (its ``search`` takes a ``str``); :class:`ToolError` for a
    pattern RE2 cannot run (saying which features it lacks) or that is not a regular expression
    at all (Python's own message)."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"bad regular expression: {exc}") from None
    raise ToolError(
        f"grep cannot run this pattern: {reason}. grep uses RE2 (linear time), which has no "
        "backreferences (\\1, (?P=name)), no lookaround ((?=...), (?!...), (?<=...), (?<!...)), "
        "no possessive quantifiers or atomic groups: rewrite the pattern without them"
    )
