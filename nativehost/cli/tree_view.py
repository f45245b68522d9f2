"""``browy daemon tree``: the running daemon's supervision tree, drawn like Erlang's observer.

Each line is one child: its name, kind, state, restart type, mailbox depth (actors), restarts
since its supervisor started, and the uptime of its current incarnation; a supervisor's line
adds its strategy and restart intensity, and its children follow, indented.
"""

from __future__ import annotations

from collections.abc import Iterator

from supervisors.introspection import ChildInfo, SupervisorInfo

__all__ = ["format_tree"]


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def _policy(sup: SupervisorInfo) -> str:
    return f"{sup['strategy']}, {sup['max_restarts']} restarts in {sup['within_seconds']:g} s"


def _rows(sup: SupervisorInfo, prefix: str) -> Iterator[tuple[str, ChildInfo]]:
    children = sup["children"]
    for i, child in enumerate(children):
        last = i == len(children) - 1
        yield prefix + ("└── " if last else "├── ") + child["name"], child
        nested = child["supervisor"]
        if nested:
            yield from _rows(nested, prefix + ("    " if last else "│   "))


def format_tree(tree: SupervisorInfo) -> str:
    """The tree as text (see the module docstring)."""
    rows = list(_rows(tree, ""))
    width = max([len(tree["name"]), *(len(label) for label, _ in rows)]) + 2
    lines = [
        f"{tree['name']:<{width}}supervisor  {_policy(tree)}",
        f"{'':<{width}}{'kind':<11} {'state':<11} {'restart':<10} {'mailbox':>7} "
        f"{'restarts':>8} {'up':>6}",
    ]
    for label, child in rows:
        depth = child["mailbox_depth"]
        line = (
            f"{label:<{width}}{child['kind']:<11} {child['state']:<11} {child['restart']:<10} "
            f"{'-' if depth is None else depth:>7} {child['restarts']:>8} "
            f"{_age(child['uptime_s']):>6}"
        )
        nested = child["supervisor"]
        if nested:
            line += f"  ({_policy(nested)})"
        lines.append(line.rstrip())
    return "\n".join(lines)
