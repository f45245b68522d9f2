"""One finding of ``browy doctor`` (:class:`Check`), and how a list of them is shown and scored.

A check has a name, ok or not, a one-line detail and, when not ok, a fix; a ``warning`` is ok but
worth reading. :func:`format_checks` prints one line per check (what ``browy doctor`` shows),
:func:`exit_code` is 0 when every check is ok, else 1. The checks themselves are
:mod:`nativehost.setup.doctor` and :mod:`nativehost.setup.manifest_checks`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Check", "exit_code", "format_checks"]


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False  # ok, but worth reading

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def exit_code(checks: list[Check]) -> int:
    return 0 if all(c.ok for c in checks) else 1


def format_checks(checks: list[Check]) -> str:
    """One line per check: ``ok  ``, ``warn``, ``FAIL``, the name, the detail, the fix."""
    lines = []
    for c in checks:
        tag = "FAIL" if not c.ok else ("warn" if c.warning else "ok  ")
        line = f"{tag}  {c.name}: {c.detail}"
        if c.fix and (not c.ok or c.warning):
            line += f" -> fix: {c.fix}"
        lines.append(line)
    return "\n".join(lines)
