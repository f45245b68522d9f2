"""What a ``browy chaos`` run is asked to do and what it found: options, report, JSON and table.

:class:`ChaosOptions` is what :func:`nativehost.chaos.in_process.run_chaos` and
:func:`nativehost.chaos.process_mode.run_process_chaos` run; :class:`ChaosReport` is the outcome
they return (:meth:`ChaosReport.as_json` for ``--json``, :func:`format_table` for the human table).
The invariants named in :data:`INVARIANTS` are described in :mod:`nativehost.chaos.harness` and
checked in :mod:`nativehost.chaos.checks`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nativehost.chaos.faults import ACTOR_TARGETS, IN_PROCESS_FAULTS

__all__ = [
    "INVARIANTS",
    "LATE_FROM",
    "TURN_DEADLINE_S",
    "ChaosOptions",
    "ChaosReport",
    "format_table",
]

INVARIANTS = (
    "one_end",
    "no_duplicate",
    "unknown_reported",
    "journaled",
    "recovered",
    "flat",
    "supervised",  # in-process mode only
    "no_leftover",  # process mode only
)

TURN_DEADLINE_S = 45.0
#: Where the later part of a run starts, as a share of its duration: by then the daemon's
#: bounded structures are full, so what it grows by from there to the end is what still leaks
#: (the one-hour soak's "last 45 minutes").
LATE_FROM = 0.25
MIB = 2**20


@dataclass(frozen=True, slots=True, kw_only=True)
class ChaosOptions:
    """What ``browy chaos`` runs (see :func:`main` for the command line)."""

    seed: int = 1
    duration: float = 60.0
    sessions: int = 8
    faults: tuple[str, ...] = IN_PROCESS_FAULTS
    peers: int = 0  # 0: one peer per 3 sessions
    actor_targets: tuple[str, ...] = ACTOR_TARGETS
    turn_deadline: float = TURN_DEADLINE_S
    home: Path | None = None
    #: Given the live status line once a second while the run goes on (a terminal), or None.
    live: Callable[[str], None] | None = None


@dataclass(slots=True)
class ChaosReport:
    """The outcome of one run; ``ok`` is False when an invariant failed."""

    seed: int
    duration: float
    sessions: int
    faults_injected: dict[str, int] = field(default_factory=dict)
    turns_run: int = 0
    turns_completed: int = 0
    definite_errors: int = 0
    hung: int = 0
    duplicated: int = 0
    lost: int = 0
    extra_ends: int = 0
    not_unknown: int = 0
    not_journaled: int = 0
    page_changing_executed: int = 0
    recovery_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    fds: tuple[int, int] = (0, 0)
    rss: tuple[int, int] = (0, 0)
    #: Bytes held by the harness's own records (in-process mode) at the same two points: they
    #: grow with the turns run and are not the daemon's, so ``flat`` leaves them out.
    harness: tuple[int, int] = (0, 0)
    rss_samples: list[tuple[float, int]] = field(default_factory=list)  # (seconds in, bytes)
    #: The later part of the run (in-process mode), from :data:`LATE_FROM` of the duration to
    #: the end: (seconds in at its start, at its end), and RSS and the harness's records at both.
    late_window: tuple[float, float] = (0.0, 0.0)
    late_rss: tuple[int, int] = (0, 0)
    late_harness: tuple[int, int] = (0, 0)
    #: What the daemon's objects come to at both points (all that is reachable from its server):
    #: its growth without the allocator's fragmentation, which RSS also shows.
    late_objects: tuple[int, int] = (0, 0)
    invariants: dict[str, bool] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    mode: str = "in-process"
    processes: dict[str, int] = field(default_factory=dict)  # process mode: relays, daemons...
    supervision: dict[str, int] = field(default_factory=dict)  # in-process: exited, restarted...

    @property
    def ok(self) -> bool:
        return all(self.invariants.values())

    @property
    def daemon_growth(self) -> int:
        """RSS growth from warm to end less the growth of the harness's own records."""
        return (self.rss[1] - self.rss[0]) - (self.harness[1] - self.harness[0])

    @property
    def late_minutes(self) -> float:
        return max(0.0, self.late_window[1] - self.late_window[0]) / 60

    @property
    def late_daemon_growth(self) -> int:
        """What the daemon grew by over the later part of the run (RSS less the harness's
        records); 0 when it was not measured."""
        if not self.late_minutes:
            return 0
        return (self.late_rss[1] - self.late_rss[0]) - (self.late_harness[1] - self.late_harness[0])

    @property
    def late_harness_growth(self) -> int:
        return self.late_harness[1] - self.late_harness[0] if self.late_minutes else 0

    def _late_json(self) -> dict[str, Any]:
        minutes = self.late_minutes
        per_min = (lambda b: round(b / MIB / minutes, 3)) if minutes else (lambda b: 0.0)
        return {
            "from_s": round(self.late_window[0], 1),
            "to_s": round(self.late_window[1], 1),
            "rss_bytes": {"start": self.late_rss[0], "end": self.late_rss[1]},
            "harness_record_bytes": {"start": self.late_harness[0], "end": self.late_harness[1]},
            "daemon_growth_bytes": self.late_daemon_growth,
            "daemon_mib_per_min": per_min(self.late_daemon_growth),
            "harness_growth_bytes": self.late_harness_growth,
            "harness_mib_per_min": per_min(self.late_harness_growth),
            "daemon_object_bytes": {"start": self.late_objects[0], "end": self.late_objects[1]},
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "seed": self.seed,
            "duration_s": self.duration,
            "sessions": self.sessions,
            "faults_injected": self.faults_injected,
            "turns_run": self.turns_run,
            "turns_completed": self.turns_completed,
            "definite_errors": self.definite_errors,
            "hung": self.hung,
            "duplicated": self.duplicated,
            "lost": self.lost,
            "extra_ends": self.extra_ends,
            "interrupted_not_unknown": self.not_unknown,
            "completed_not_journaled": self.not_journaled,
            "page_changing_executed": self.page_changing_executed,
            "recovery_ms": self.recovery_ms,
            "open_fds": {"warm": self.fds[0], "end": self.fds[1]},
            "rss_bytes": {"warm": self.rss[0], "end": self.rss[1]},
            "harness_record_bytes": {"warm": self.harness[0], "end": self.harness[1]},
            "daemon_growth_bytes": self.daemon_growth,
            **({"late": self._late_json()} if self.late_minutes else {}),
            "rss_samples": [[round(t, 1), b] for t, b in self.rss_samples],
            **({"processes": self.processes} if self.mode == "process" else {}),
            **({"supervision": self.supervision} if self.mode != "process" else {}),
            "invariants": self.invariants,
            "ok": self.ok,
            "problems": self.problems[:50],
        }


def format_table(report: ChaosReport) -> str:
    """The human-readable report."""
    lines = [
        f"browy chaos{'  --process' if report.mode == 'process' else ''}  seed={report.seed}  "
        f"duration={report.duration:g}s  sessions={report.sessions}",
        "",
        f"{'fault':<20}{'injected':>9}{'recovery p50 ms':>17}{'p99 ms':>10}",
    ]
    for kind, n in sorted(report.faults_injected.items()):
        rec = report.recovery_ms.get(kind, {})
        p50 = f"{rec['p50']:.0f}" if rec else "-"
        p99 = f"{rec['p99']:.0f}" if rec else "-"
        lines.append(f"{kind:<20}{n:>9}{p50:>17}{p99:>10}")
    lines += [
        "",
        f"turns run {report.turns_run}   completed {report.turns_completed}   "
        f"definite errors {report.definite_errors}",
        f"hung {report.hung}   duplicated {report.duplicated}   lost {report.lost}   "
        f"extra ends {report.extra_ends}   page-changing executed {report.page_changing_executed}",
        f"open fds {report.fds[0]} -> {report.fds[1]}   "
        f"rss {report.rss[0] // 2**20} -> {report.rss[1] // 2**20} MiB"
        + ("  (the daemon's)" if report.mode == "process" else "")
        + (
            f" (the harness's records: {report.harness[0] // 2**20} -> "
            f"{report.harness[1] // 2**20} MiB)"
            if report.harness[1]
            else ""
        ),
    ]
    if report.late_minutes:
        minutes = report.late_minutes
        daemon, harness = report.late_daemon_growth / MIB, report.late_harness_growth / MIB
        lines.append(
            f"late {LATE_FROM:.0%} -> end ({report.late_window[0]:.0f} -> "
            f"{report.late_window[1]:.0f} s, {minutes:.1f} min): daemon {daemon:+.1f} MiB "
            f"({daemon / minutes:+.2f} MiB/min), the harness's records {harness:+.1f} MiB "
            f"({harness / minutes:+.2f} MiB/min); the daemon's objects "
            f"{(report.late_objects[1] - report.late_objects[0]) / MIB:+.1f} MiB"
        )
    if report.processes:
        lines.append("processes " + "   ".join(f"{k} {v}" for k, v in report.processes.items()))
    if report.supervision:
        lines.append(
            "supervisor " + "   ".join(f"{k} {v}" for k, v in sorted(report.supervision.items()))
        )
    lines.append("")
    for name in INVARIANTS:
        if name in report.invariants:
            lines.append(f"  {'PASS' if report.invariants[name] else 'FAIL'}  {name}")
    for problem in report.problems[:20]:
        lines.append(f"  ! {problem}")
    lines.append("OK" if report.ok else "FAILED: an invariant does not hold")
    return "\n".join(lines)
