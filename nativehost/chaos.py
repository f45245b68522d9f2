"""``browy chaos``: the fault-injection harness, run as a product feature and in CI (seeded, short).

In-process mode runs the daemon's real actors (:class:`nativehost.server.DaemonServer` on a
temporary ``BROWY_HOME``, over its real Unix-socket link) against the scripted model server
(:mod:`nativehost.model_server`, real HTTP) and several fake extension peers
(:mod:`nativehost.chaos_peer`, each a v2 browser profile behind the real relay rules), many
sessions at once, and injects faults from a schedule drawn from ``--seed``.

Fault kinds (in-process) and their seam:

- ``actor_crash``: a message the actor cannot handle is told to a Connection or the SessionRouter
  (it raises inside ``handle``: a real crash); the TurnScheduler, which ignores unknown messages,
  is stopped through its ref.
- ``link_drop``: the peer closes its link (sometimes after bytes that are no link frame).
- ``frame_corrupt`` / ``frame_truncated`` / ``frame_duplicate`` / ``frame_delay`` /
  ``frame_reorder``: the next ``chat.send``/``tool.result`` the peer forwards is sent with invalid
  UTF-8 inserted (then intact), cut short (then intact) or as a torn link frame (the link then
  drops), twice, late, or after the frame behind it.
- ``model_5xx`` / ``model_hang`` / ``model_disconnect``: scripted faults of the model server
  (HTTP 503 before the stream; no bytes until the client's idle timeout; the connection cut after
  two chunks).
- ``browser_late`` / ``browser_never`` / ``browser_twice``: the fake browser executes the next
  page-changing command and answers after the host's deadline, never, or twice.
- ``fsync_fail``: the journal's fsync (``ChatStore(fsync_fn=...)``) raises ``EIO`` for a while.

Process mode (``--process``, :mod:`nativehost.chaos_process`): each browser profile is a real
relay process (``python -m nativehost.relay``, pipes as Chrome starts it) that starts the real
daemon; ``relay_kill`` SIGKILLs a relay mid-turn (the fake extension starts a new relay and sends
``hello`` and its ``session.start``s again, as the service worker does), ``daemon_kill`` SIGKILLs
the daemon mid-turn (the relays reconnect and start a new one). It adds the invariant
``no_leftover`` and measures ``flat`` on the daemon.

Invariants checked after every run (a non-zero exit if one fails):

- ``one_end``: every ``chat.send`` got exactly one ``chat.done`` or ``chat.error``, none later than
  its deadline (``hung = 0``, no extra ends);
- ``no_duplicate``: no page-changing command was executed twice (by call id or by target);
- ``unknown_reported``: every page-changing command that was executed but whose answer did not
  reach the host is journaled (and, if shown, reported) with outcome ``unknown`` — never ``ok`` or
  ``error``; none is ever reported ``error``;
- ``journaled``: every turn that ended in ``chat.done`` is in its chat's journal with an end;
- ``recovered``: after every fault, a turn sent later completed (``lost = 0``);
- ``flat``: open file descriptors and memory do not grow over the run.

The report (JSON, plus a human table) has faults injected by kind, turns run, completed, definite
errors, hung, duplicated, lost, and the recovery time p50/p99 per fault kind.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import json
import logging
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from actors.store import ChatStore, sessions_dir
from actors.store_writer import safe_name, scan_records
from nativehost.chaos_peer import (
    BROWSER_FAULTS,
    FRAME_FAULTS,
    ChaosPeer,
    Executed,
    FakeBrowser,
    Recorder,
    TurnRecord,
)
from nativehost.config import load_config
from nativehost.model_server import ScriptedModelServer
from nativehost.server import DaemonServer

__all__ = [
    "ALL_FAULTS",
    "INVARIANTS",
    "IN_PROCESS_FAULTS",
    "PROCESS_FAULTS",
    "ChaosOptions",
    "ChaosReport",
    "FaultyFsync",
    "format_table",
    "main",
    "run_chaos",
]

log = logging.getLogger(__name__)

MODEL_FAULTS = ("model_5xx", "model_hang", "model_disconnect")
IN_PROCESS_FAULTS: tuple[str, ...] = (
    "actor_crash",
    "link_drop",
    *FRAME_FAULTS,
    *MODEL_FAULTS,
    *BROWSER_FAULTS,
    "fsync_fail",
)
PROCESS_FAULTS: tuple[str, ...] = ("relay_kill", "daemon_kill")
ALL_FAULTS = IN_PROCESS_FAULTS + PROCESS_FAULTS
INVARIANTS = (
    "one_end",
    "no_duplicate",
    "unknown_reported",
    "journaled",
    "recovered",
    "flat",
    "no_leftover",  # process mode only
)
ACTOR_TARGETS = ("connection", "session-router", "turn-scheduler")

TURN_DEADLINE_S = 45.0
FD_SLACK = 24
RSS_SLACK_BYTES = 96 * 1024 * 1024


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
    invariants: dict[str, bool] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    mode: str = "in-process"
    processes: dict[str, int] = field(default_factory=dict)  # process mode: relays, daemons...

    @property
    def ok(self) -> bool:
        return all(self.invariants.values())

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
            "rss_samples": [[round(t, 1), b] for t, b in self.rss_samples],
            **({"processes": self.processes} if self.mode == "process" else {}),
            "invariants": self.invariants,
            "ok": self.ok,
            "problems": self.problems[:50],
        }


class FaultyFsync:
    """The journal's fsync seam: fails with ``EIO`` while armed, else ``os.fsync``."""

    def __init__(self) -> None:
        self.failing_until = 0.0
        self.failures = 0

    def arm(self, seconds: float) -> None:
        self.failing_until = time.monotonic() + seconds

    def __call__(self, fd: int) -> None:
        if time.monotonic() < self.failing_until:
            self.failures += 1
            raise OSError(errno.EIO, "chaos: injected fsync failure")
        os.fsync(fd)


class _CrashOnCue:
    """A message no actor knows: any attribute read raises, so a handler that looks at it
    crashes (conventions.md item 12: an actor that crashes on cue)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"chaos: crash on cue ({name})")


def _marker(index: int) -> str:
    return f"<chaos-s{index:02d}>"


def _tag(number: int) -> str:
    return f"[turn {number:04d}]"


def _url(index: int, number: int) -> str:
    return f"https://chaos.test/s{index:02d}/t{number:04d}"


#: The script a run's model server starts with; each turn's steps are added just before it
#: starts (``ScriptedModelServer.extend``), so a long run holds only the steps in flight.
SCRIPT_HEAD: dict[str, Any] = {"models": ["chaos-model"], "steps": []}


def turn_steps(s: int, n: int, fault: str | None = None) -> list[dict[str, Any]]:
    """The steps for session *s*, turn *n*: a tool step (one page-changing ``new_tab`` with a
    unique URL and a host-side ``note_set``), then a text answer; a model *fault* goes first."""
    marker = _marker(s)
    first = {"user_contains": _tag(n), "tool_result": False}
    steps: list[dict[str, Any]] = []
    if fault == "model_5xx":
        steps.append(
            {"session": marker, "match": first, "fault": {"kind": "status", "status": 503}}
        )
    elif fault == "model_hang":
        steps.append({"session": marker, "match": first, "fault": {"kind": "hang"}})
    tool_step: dict[str, Any] = {
        "session": marker,
        "match": first,
        "text": f"Opening step {n}.",
        "tool_calls": [
            {"name": "new_tab", "arguments": {"url": _url(s, n)}},
            {"name": "note_set", "arguments": {"key": f"s{s}", "value": str(n)}},
        ],
    }
    if fault == "model_disconnect":
        tool_step["fault"] = {"kind": "disconnect", "after_chunks": 3}
    steps.append(tool_step)
    steps.append(
        {
            "session": marker,
            "match": {"user_contains": _tag(n), "tool_result": True},
            "text": f"Done with step {n}.",
        }
    )
    return steps


def _fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def _rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def daemon_growth(report: ChaosReport) -> int:
    """RSS growth from warm to end less the growth of the harness's own records."""
    return (report.rss[1] - report.rss[0]) - (report.harness[1] - report.harness[0])


def deep_size(root: object) -> int:
    """Bytes held by *root* and everything it reaches through containers and slotted records
    (each object counted once; shared immortal objects such as None and small ints excluded)."""
    seen: set[int] = set()
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, bool):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif hasattr(type(obj), "__slots__") and not isinstance(obj, str | bytes | int | float):
            slots: tuple[str, ...] = getattr(type(obj), "__slots__", ())
            stack.extend(getattr(obj, name, None) for name in slots)
    return total


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


@dataclass(slots=True)
class _Injected:
    kind: str
    at: float
    detail: str = ""
    sessions: frozenset[str] = frozenset()  # the sessions it hit; empty: all of them


class _Run:
    """One in-process run (see the module docstring)."""

    def __init__(self, opts: ChaosOptions, home: Path) -> None:
        self.opts = opts
        self.home = home
        self.rng = random.Random(opts.seed)
        self.recorder = Recorder()
        self.fsync = FaultyFsync()
        self.injected: list[_Injected] = []
        self.peers: list[ChaosPeer] = []
        self.session_peer: dict[str, tuple[PeerLike, int]] = {}
        self.server: DaemonServer | None = None
        self.model: ScriptedModelServer | None = None
        self.model_faults: dict[tuple[int, int], str] = {}
        self.stop_sending = 0.0

    # -- setup ----------------------------------------------------------------------------------

    def _draw_model_faults(self) -> None:
        kinds = [k for k in MODEL_FAULTS if k in self.opts.faults]
        if not kinds:
            return
        per_kind = max(1, int(self.opts.duration / 10))
        horizon = max(3, int(self.opts.duration / 3))  # turns every session surely reaches
        for kind in kinds:
            for _ in range(per_kind):
                s = self.rng.randrange(self.opts.sessions)
                n = self.rng.randrange(2, horizon + 1)
                self.model_faults.setdefault((s, n), kind)

    async def _start(self) -> None:
        self._draw_model_faults()
        self.model = ScriptedModelServer(SCRIPT_HEAD, keep_bodies=False)
        base_url = await self.model.start()
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(
            "[model]\n"
            f'base_url = "{base_url}"\n'
            'model = "chaos-model"\n'
            'api_key = "sk-chaos"\n'
            "request_timeout = 2.5\n"
            "[daemon]\n"
            "idle_exit_seconds = 0\n"
            f"turn_concurrency = {min(64, max(4, self.opts.sessions))}\n"
        )
        config = load_config(self.home, env={})
        # The store seam (ChatStore(fsync_fn=)): a store whose fsync can fail.
        server = DaemonServer(
            self.home,
            config,
            version="chaos",
            store=ChatStore(sessions_dir(self.home), fsync_fn=self.fsync),
        )
        self.server = server
        self._serve_task = asyncio.ensure_future(server.serve())
        npeers = self.opts.peers or max(1, (self.opts.sessions + 2) // 3)
        groups: list[list[str]] = [[] for _ in range(npeers)]
        for s in range(self.opts.sessions):
            groups[s % npeers].append(f"sp-chaos-{s:02d}")
        for i, sids in enumerate(groups):
            peer = ChaosPeer(self.home, i, sids, self.recorder, random.Random(self.rng.random()),
                             self._fault_fired)  # fmt: skip
            self.peers.append(peer)
            for sid in sids:
                self.session_peer[sid] = (peer, int(sid.rsplit("-", 1)[1]))
        await asyncio.gather(*(p.start() for p in self.peers))

    def _fault_fired(self, kind: str, peer: ChaosPeer) -> None:
        self.injected.append(_Injected(kind, time.monotonic(), f"peer {peer.index}"))

    # -- the sessions ---------------------------------------------------------------------------

    async def _session(self, sid: str) -> None:
        peer, index = self.session_peer[sid]
        await peer.wait_ready(sid, 15.0)
        number = 0
        while time.monotonic() < self.stop_sending:
            number += 1
            assert self.model is not None
            self.model.extend(turn_steps(index, number, self.model_faults.get((index, number))))
            rec = peer.send_chat(sid, number, f"{_marker(index)} please do {_tag(number)}")
            if not await self.recorder.wait_end(rec, self.opts.turn_deadline):
                self.recorder.open.pop(sid, None)  # hung: counted from its record
            await asyncio.sleep(self.rng.uniform(0.0, 0.05))

    # -- the schedule ---------------------------------------------------------------------------

    def _schedule(self) -> list[tuple[float, str]]:
        kinds = [k for k in self.opts.faults if k in IN_PROCESS_FAULTS and k not in MODEL_FAULTS]
        if not kinds:
            return []
        window = (0.1 * self.opts.duration, 0.7 * self.opts.duration)
        count = max(len(kinds), int(self.opts.duration * 0.8))
        plan = [(self.rng.uniform(*window), k) for k in kinds]  # each kind at least once
        plan += [
            (self.rng.uniform(*window), self.rng.choice(kinds)) for _ in range(count - len(kinds))
        ]
        return sorted(plan)

    async def _inject(self, kind: str) -> None:
        peer = self.rng.choice(self.peers)
        if kind in FRAME_FAULTS:
            peer.armed_frames.append(kind)  # fires on the peer's next chat.send/tool.result
        elif kind in BROWSER_FAULTS:
            peer.armed_browser.append(kind)  # fires on the next page-changing command
        elif kind == "link_drop":
            garbage = self.rng.random() < 0.3
            if peer.drop_link(garbage=garbage):
                self._fault_fired(kind, peer)
        elif kind == "fsync_fail":
            self.fsync.arm(self.rng.uniform(0.5, 2.0))
            self.injected.append(_Injected(kind, time.monotonic(), "store"))
        elif kind == "actor_crash":
            await self._crash_actor()

    async def _crash_actor(self) -> None:
        assert self.server is not None
        target = self.rng.choice(self.opts.actor_targets)
        hub = self.server.hub
        ref: Any = None
        if target == "connection":
            refs = self.server.connection_refs()
            ref = self.rng.choice(refs) if refs else None
        else:
            ref = hub.actor_refs().get(target)
        if ref is None or not ref.is_alive:
            return
        with contextlib.suppress(Exception):
            await ref.tell(_CrashOnCue(), timeout=1.0)
        await asyncio.sleep(0.05)
        if ref.is_alive:  # it ignores messages it does not know: stop it instead
            with contextlib.suppress(Exception):
                await ref.stop(timeout=1.0)
        self.injected.append(_Injected("actor_crash", time.monotonic(), target))

    async def _faults(self) -> None:
        start = time.monotonic()
        for at, kind in self._schedule():
            delay = start + at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await self._inject(kind)

    # -- the run --------------------------------------------------------------------------------

    async def run(self) -> ChaosReport:
        report = ChaosReport(
            seed=self.opts.seed, duration=self.opts.duration, sessions=self.opts.sessions
        )
        started = time.monotonic()
        self.stop_sending = started + self.opts.duration
        try:
            await self._start()
            sessions = [asyncio.ensure_future(self._session(s)) for s in self.session_peer]
            faults = asyncio.ensure_future(self._faults())
            # Warm: after the first faults and once the caches are full (the store keeps up to
            # 64 open chats), not before.
            await asyncio.sleep(min(60.0, 0.15 * self.opts.duration))
            warm = (_fds(), _rss(), self._harness_bytes())
            sampler = asyncio.ensure_future(self._sample_rss(report, started))
            await asyncio.gather(*sessions)
            faults.cancel()
            sampler.cancel()
            for task in (faults, sampler):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await asyncio.sleep(1.0)  # late extra ends, if any, arrive now
            end = (_fds(), _rss(), self._harness_bytes())
            report.fds = (warm[0], end[0])
            report.rss = (warm[1], end[1])
            report.harness = (warm[2], end[2])
        finally:
            for peer in self.peers:
                await peer.close()
            if self.server is not None:
                self.server._stop.set()
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(15):
                        await self._serve_task
            if self.model is not None:
                await self.model.stop()
        self._check(report)
        return report

    async def _sample_rss(self, report: ChaosReport, started: float) -> None:
        every = max(5.0, self.opts.duration / 60)
        while True:
            report.rss_samples.append((time.monotonic() - started, _rss()))
            await asyncio.sleep(every)

    def _harness_bytes(self) -> int:
        """What the harness's records hold (they grow with the turns; the daemon's do not)."""
        rec = self.recorder
        roots: list[object] = [
            rec.turns,
            rec.ended_turn_ids,
            rec.tool_outcomes,
            rec.extra_ends,
            self.injected,
            *(p.browser.executed for p in self.peers),
        ]
        if self.model is not None:
            roots.append(self.model.served_faults)
        return deep_size(roots)

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

        report.invariants = {
            "one_end": report.hung == 0 and report.extra_ends == 0,
            "no_duplicate": report.duplicated == 0,
            "unknown_reported": report.not_unknown == 0,
            "journaled": report.not_journaled == 0,
            "recovered": report.lost == 0,
            "flat": report.fds[1] - report.fds[0] <= FD_SLACK
            and daemon_growth(report) <= RSS_SLACK_BYTES,
        }
        if not report.invariants["flat"]:
            report.problems.append(f"fds {report.fds}, rss {report.rss}")

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


async def run_chaos(opts: ChaosOptions) -> ChaosReport:
    """Run one in-process chaos run and check its invariants (see the module docstring)."""
    if opts.home is not None:
        return await _Run(opts, opts.home).run()
    with tempfile.TemporaryDirectory(prefix="browy-chaos-") as tmp:
        return await _Run(opts, Path(tmp) / "home").run()


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
    if report.processes:
        lines.append("processes " + "   ".join(f"{k} {v}" for k, v in report.processes.items()))
    lines.append("")
    for name in INVARIANTS:
        if name in report.invariants:
            lines.append(f"  {'PASS' if report.invariants[name] else 'FAIL'}  {name}")
    for problem in report.problems[:20]:
        lines.append(f"  ! {problem}")
    lines.append("OK" if report.ok else "FAILED: an invariant does not hold")
    return "\n".join(lines)


def _parse_faults(text: str) -> tuple[str, ...]:
    if text in ("", "all"):
        return ALL_FAULTS  # filtered by the mode
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ALL_FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown fault kinds {', '.join(unknown)} (known: {', '.join(ALL_FAULTS)})"
        )
    return kinds


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """``browy chaos [--seed N] [--duration S] [--sessions N] [--faults k1,k2] [--json PATH]
    [--process]``: run the harness, print the table, write the JSON report; 1 if an invariant
    failed, 2 for bad arguments."""
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="browy chaos", description="Fault-injection run of the daemon with invariant checks."
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument(
        "--faults", type=_parse_faults, default=ALL_FAULTS,
        help=f"comma-separated kinds or 'all' (default; in-process: {', '.join(IN_PROCESS_FAULTS)};"
        f" --process: {', '.join(PROCESS_FAULTS)})",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the JSON report here")
    parser.add_argument("--process", action="store_true", help="the process-mode scenario")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2
    if args.sessions < 1 or args.duration <= 0:
        print("browy chaos: --sessions and --duration must be positive", file=sys.stderr)
        return 2
    known = PROCESS_FAULTS if args.process else IN_PROCESS_FAULTS
    faults = tuple(k for k in args.faults if k in known)
    if not faults:
        mode = "--process" if args.process else "in-process mode"
        print(f"browy chaos: none of those fault kinds applies to {mode}", file=sys.stderr)
        return 2
    opts = ChaosOptions(
        seed=args.seed, duration=args.duration, sessions=args.sessions, faults=faults
    )
    if args.process:
        from nativehost.chaos_process import run_process_chaos

        report = asyncio.run(run_process_chaos(opts))
    else:
        report = asyncio.run(run_chaos(opts))
    out.write(format_table(report) + "\n")
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_json(), indent=2) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
