"""The invariants of ``browy chaos``, checked over a run's records and journals after it ends.

The invariants themselves (``one_end``, ``no_duplicate``, ``unknown_reported``, ``journaled``,
``recovered``, ``flat``) are described in :mod:`nativehost.chaos.harness`. :class:`InvariantChecks`
is the part of a run (:class:`nativehost.chaos.run.ChaosRun`, in both modes) that reads what the
panels saw (:class:`nativehost.chaos.panels.Recorder`), what the fake browsers executed, the faults
injected and the chats' journals, and fills in the :class:`ChaosReport`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from actors.store.chat_store import sessions_dir
from actors.store.journal import safe_name
from actors.store.journal_records import scan_records
from nativehost.chaos.fake_browser import Executed, FakeBrowser
from nativehost.chaos.faults import MODEL_FAULTS, _Injected, _marker, _tag
from nativehost.chaos.panels import Recorder, TurnRecord
from nativehost.chaos.report import ChaosOptions, ChaosReport
from nativehost.demo.model_server import ScriptedModelServer
from supervisors.introspection import SupervisionEvent
from supervisors.trees import AGENT_INTENSITY, LINK_INTENSITY

__all__ = [
    "FD_SLACK",
    "LATE_MIN_S",
    "LATE_SLACK_BYTES",
    "RSS_SLACK_BYTES",
    "InvariantChecks",
    "PeerLike",
    "late_flat",
    "supervision_checked",
]

FD_SLACK = 24
RSS_SLACK_BYTES = 96 * 1024 * 1024


#: What the daemon may grow by over the later part of a run (:data:`LATE_FROM` of the duration
#: to the end), once its bounded structures are full: the one-hour soak's "at most 5 MiB over
#: the last 45 minutes". Checked on runs whose later part lasts :data:`LATE_MIN_S` or more
#: (shorter ones are mostly warm-up and allocator noise).
LATE_SLACK_BYTES = 5 * 1024 * 1024
LATE_MIN_S = 450.0


def late_flat(report: ChaosReport) -> bool:
    """The later part of the run grew the daemon by at most :data:`LATE_SLACK_BYTES` (or it was
    too short to judge)."""
    if report.late_minutes * 60 < LATE_MIN_S:
        return True
    return report.late_daemon_growth <= LATE_SLACK_BYTES


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    at = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[at], 1)


class PeerLike(Protocol):
    """What the run and its checks need of a fake browser profile (in-process or process mode)."""

    index: int
    install_id: str
    browser: FakeBrowser

    async def wait_ready(self, session_id: str, timeout: float) -> bool: ...

    def send_chat(self, session_id: str, number: int, text: str) -> TurnRecord: ...


#: How soon a supervised child that exited must be running again (or its supervisor have given
#: up): a restart is immediate unless the child has a backoff.
RESTART_DEADLINE_S = 5.0


def supervision_checked(event: SupervisionEvent) -> bool:
    """The events ``supervised`` looks at: those of the children that are restarted — the
    agent's actors and each link's CDPProxy — and every escalation. A Connection, a turn and a
    link are temporary: their end is not a failure to restart (and a run need not keep one
    event per turn it ran)."""
    if event.kind == "escalated" or event.supervisor == "agent":
        return True
    return event.supervisor.startswith("link-") and event.child.startswith("cdp-proxy-")


def intensity_of(supervisor: str) -> tuple[int, float]:
    """The restart intensity (max restarts, window) of a supervisor of the daemon's tree."""
    return LINK_INTENSITY if supervisor.startswith("link-") else AGENT_INTENSITY


def check_supervision(
    events: list[SupervisionEvent],
    crashes: list[_Injected],
    *,
    intensity: Callable[[str], tuple[int, float]] = intensity_of,
) -> tuple[dict[str, int], list[str]]:
    """``supervised``: every exit of a restarted child was followed by its restart (or by its
    supervisor's escalation) within :data:`RESTART_DEADLINE_S`; each supervisor's restarts
    stayed within its intensity; more exits than that in a window escalated; every injected
    crash of a supervised actor shows as its exit. Returns the counts by event kind and the
    problems."""
    problems: list[str] = []
    events = [e for e in events if supervision_checked(e)]
    counts: dict[str, int] = {k: n for k, n in Counter(e.kind for e in events).items()}
    for name in sorted({e.supervisor for e in events}):
        max_restarts, within_s = intensity(name)
        problems += _check_one(
            name, [e for e in events if e.supervisor == name], max_restarts, within_s
        )
    exits = [e for e in events if e.kind == "exited"]
    for crash in crashes:
        if crash.detail == "connection":
            continue  # a connection is temporary: a crash closes its link
        if not any(x.child.startswith(crash.detail) and abs(crash.at - x.at) <= 2.0 for x in exits):
            problems.append(f"supervision: the injected crash of {crash.detail} shows no exit")
    return counts, problems


def _check_one(
    name: str, events: list[SupervisionEvent], max_restarts: int, within_s: float
) -> list[str]:
    """The restart rules for the events of one supervisor."""
    problems: list[str] = []
    escalations = [e for e in events if e.kind == "escalated"]
    for i, e in enumerate(events):
        if e.kind != "exited":
            continue
        answered = any(
            (later.kind == "restarted" and later.child == e.child) or later.kind == "escalated"
            for later in events[i + 1 :]
            if later.at - e.at <= RESTART_DEADLINE_S
        )
        if not answered:
            problems.append(f"supervision: {name}/{e.child} exited and was not restarted in time")
    for kind in ("restarted", "exited"):
        times = [e.at for e in events if e.kind == kind]
        for j, t in enumerate(times):
            in_window = sum(1 for u in times[: j + 1] if u > t - within_s)
            if in_window <= max_restarts:
                continue
            if kind == "restarted":
                problems.append(f"supervision: {name}: {in_window} restarts within {within_s:g} s")
            elif not any(x.at >= t for x in escalations):
                problems.append(
                    f"supervision: {name}: {in_window} exits within {within_s:g} s, no escalation"
                )
    return problems


class InvariantChecks:
    """The invariant checks of a run, the base of :class:`nativehost.chaos.run.ChaosRun`:
    ``_check(report)`` fills in the report's counts, problems and invariants from what the run
    recorded."""

    opts: ChaosOptions
    home: Path
    recorder: Recorder
    injected: list[_Injected]
    session_peer: dict[str, tuple[PeerLike, int]]
    model: ScriptedModelServer | None
    model_faults: dict[tuple[int, int], str]
    #: In-process mode: what the daemon's supervisors did.
    supervision: list[SupervisionEvent] | None = None

    # -- the invariants -------------------------------------------------------------------------

    def _journals(self) -> dict[str, list[dict[str, Any]]]:
        by_session: dict[str, list[dict[str, Any]]] = {}
        for sid, (peer, _) in self.session_peer.items():
            path = (
                sessions_dir(self.home) / safe_name(peer.install_id) / (safe_name(sid) + ".journal")
            )
            try:
                records, _ = scan_records(path.read_bytes())
            except OSError:
                records = []
            by_session[sid] = records
        return by_session

    def _check(self, report: ChaosReport) -> None:
        rec = self.recorder
        turns = rec.turns
        report.turns_run = len(turns)
        report.turns_completed = sum(1 for t in turns if t.end_type == "chat.done")
        report.definite_errors = sum(1 for t in turns if t.end_type == "chat.error")
        report.hung = sum(1 for t in turns if t.ends == 0)
        report.extra_ends = len(rec.extra_ends)
        report.faults_injected = dict(sorted(Counter(i.kind for i in self.injected).items()))
        for kind in MODEL_FAULTS:
            served = self._model_faults_served(kind)
            self.injected += served
            if served:
                report.faults_injected[kind] = len(served)
        hung_turns = [t for t in turns if t.ends == 0]
        if hung_turns:
            journals = self._journals()
            for t in hung_turns:
                trail = [
                    str(r.get("k"))
                    for r in journals.get(t.session_id, [])
                    if r.get("turn") == t.turn_id
                ]
                report.problems.append(
                    f"hung: {t.turn_id} (no end in {self.opts.turn_deadline:g} s; journal: "
                    f"{' '.join(trail) or 'nothing'})"
                )
        for sid, kind, _ in rec.extra_ends:
            report.problems.append(f"extra {kind} for {sid} (no chat.send open)")

        peers = {p.index: p for p, _ in self.session_peer.values()}.values()
        executed = [e for p in peers for e in p.browser.executed if e.page_changing]
        report.page_changing_executed = len(executed)
        report.duplicated = self._duplicates(executed, report)
        journals = self._journals()
        report.not_unknown = self._check_unknown(executed, journals, report)
        report.not_journaled = self._check_journal(turns, journals, report)
        report.recovery_ms, report.lost = self._recovery(turns, report)

        supervised = True
        if self.supervision is not None:
            counts, problems = check_supervision(
                self.supervision,
                [i for i in self.injected if i.kind == "actor_crash"],
            )
            report.supervision = counts
            report.problems += problems
            supervised = not problems
        report.invariants = {
            "one_end": report.hung == 0 and report.extra_ends == 0,
            "no_duplicate": report.duplicated == 0,
            "unknown_reported": report.not_unknown == 0,
            "journaled": report.not_journaled == 0,
            "recovered": report.lost == 0,
            "flat": report.fds[1] - report.fds[0] <= FD_SLACK
            and report.daemon_growth <= RSS_SLACK_BYTES
            and late_flat(report),
            **({"supervised": supervised} if self.supervision is not None else {}),
        }
        if not report.invariants["flat"]:
            report.problems.append(
                f"fds {report.fds}, rss {report.rss}, harness {report.harness}, "
                f"late: daemon {report.late_daemon_growth} bytes in {report.late_minutes:.1f} min"
            )

    def _model_faults_served(self, kind: str) -> list[_Injected]:
        """The scripted model faults of *kind* that a request reached (at its arrival time)."""
        assert self.model is not None
        wanted = {
            (_marker(s), _tag(n)): f"session {s} turn {n}"
            for (s, n), k in self.model_faults.items()
            if k == kind
        }
        served: list[_Injected] = []
        for at, step in self.model.served_faults:
            where = wanted.pop((step.session or "", step.user_contains or ""), None)
            if where is not None:
                served.append(_Injected(kind, at, where))
        return served

    def _duplicates(self, executed: list[Executed], report: ChaosReport) -> int:
        by_call = Counter(f"{e.link}:{e.call_id}" for e in executed)
        by_key = Counter((e.op, e.key) for e in executed if e.op == "tab.new")
        dups = [c for c, n in by_call.items() if n > 1] + [
            f"{op} {key}" for (op, key), n in by_key.items() if n > 1
        ]
        for d in dups:
            report.problems.append(f"page-changing command executed twice: {d}")
        return len(dups)

    def _check_unknown(
        self,
        executed: list[Executed],
        journals: dict[str, list[dict[str, Any]]],
        report: ChaosReport,
    ) -> int:
        calls: dict[str, dict[str, Any]] = {}
        results: dict[str, dict[str, Any]] = {}
        for records in journals.values():
            for r in records:
                if r.get("k") == "call" and isinstance(r.get("args"), dict):
                    url = r["args"].get("url")
                    if isinstance(url, str):
                        calls[url] = r
                elif r.get("k") == "result":
                    results[str(r.get("id"))] = r
        bad = 0
        for e in executed:
            if e.op != "tab.new":
                continue
            call = calls.get(e.key)
            if call is None:
                continue  # a chat the journal lost is reported by the journal check
            result = results.get(str(call.get("id")))
            journaled = result.get("outcome") if result else None
            shown = self.recorder.tool_outcomes.get(str(call.get("id")))
            outcomes = {o for o in (journaled, shown) if o is not None}
            wrong = "error" in outcomes or (e.delivered is False and "ok" in outcomes)
            if wrong:
                bad += 1
                report.problems.append(
                    f"interrupted {e.op} {e.key} (fault {e.fault}) reported {sorted(outcomes)}"
                )
        return bad

    def _check_journal(
        self,
        turns: list[TurnRecord],
        journals: dict[str, list[dict[str, Any]]],
        report: ChaosReport,
    ) -> int:
        ended: dict[str, set[str]] = defaultdict(set)
        for sid, records in journals.items():
            for r in records:
                if r.get("k") == "end" and r.get("outcome") in ("done", "cancelled"):
                    ended[sid].add(str(r.get("turn")))
        bad = 0
        for t in turns:
            if t.end_type == "chat.done" and t.turn_id not in ended[t.session_id]:
                bad += 1
                report.problems.append(f"completed turn {t.turn_id} is not in the journal")
        return bad

    def _recovery(
        self, turns: list[TurnRecord], report: ChaosReport
    ) -> tuple[dict[str, dict[str, float]], int]:
        done = sorted(
            (t.session_id, t.sent_at, t.ended_at)
            for t in turns
            if t.end_type == "chat.done" and t.ended_at is not None
        )
        by_kind: dict[str, list[float]] = defaultdict(list)
        lost = 0
        for inj in self.injected:
            hit = inj.sessions
            after = [end for sid, sent, end in done if sent >= inj.at and (not hit or sid in hit)]
            if not any(t.sent_at >= inj.at and (not hit or t.session_id in hit) for t in turns):
                continue  # no turn was sent after it (the run ended): nothing to measure
            if not after:
                lost += 1
                report.problems.append(f"no turn completed after {inj.kind} ({inj.detail})")
                continue
            by_kind[inj.kind].append((min(after) - inj.at) * 1000)
        stats = {
            k: {"n": len(v), "p50": _pct(v, 0.5), "p99": _pct(v, 0.99)}
            for k, v in sorted(by_kind.items())
        }
        return stats, lost
