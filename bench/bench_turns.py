"""Chat turns through the daemon against bare model calls measured in the same run.

The real :class:`nativehost.daemon.server.DaemonServer` runs in this process on a temporary
``BROWY_HOME`` (``tests.helpers.daemon_harness.DaemonHarness``) with the scripted model server in
``echo`` mode (no delay) over real HTTP. ``PEERS`` LinkPeers play relays speaking protocol 2;
``PANELS`` panels (sessions) spread over them each run ``TURNS`` turns one after the other (the
next ``chat.send`` once the previous turn has fully ended: ``chat.done`` + ``status.idle``).

Figures, for each ``[daemon] turn_concurrency`` in ``CONCURRENCIES``:

- turns/s over the whole run (1,000 turns);
- queue wait, p50 / p99: ``chat.send`` to the turn's ``event.activity status.thinking``, seen at
  the peer (``chat.queued`` before it does not count as the start);
- turn latency (``status.thinking`` to ``chat.done``) against the latency of the bare calls;
- overhead per turn: process CPU time per daemon turn minus process CPU time per bare call. The
  baseline replays the very request bodies the daemon sent (same messages and tools) through a
  :class:`actors.model.openai_gateway.ModelGateway`, straight to the same model server (the daemon
  idle), with the same concurrency. Daemon, peers and model server share this process and its one
  event loop: the model server's share cancels out of the difference, the peers' share (decoding ~12
  frames per turn, plus ``chat.queued`` updates) does not, so the figure is an upper bound. CPU
  time rather than wall time, so that other processes on the machine do not skew the ratio.

Idle sessions: ``IDLE_SESSIONS`` more ``session.start`` (no turns) after a warm-up; the
``tracemalloc`` snapshot difference (after a ``gc.collect()``, with the peers' logs emptied)
divided by their number, and the top allocation sites.

Also printed: the journal records per turn (by kind, from the panels' journals). Goals: overhead
<= 2 ms per turn, idle session <= 64 KiB. ``BENCH_TURNS_PROFILE=1`` adds one more, profiled,
daemon run at the first concurrency: where a turn's CPU goes by part
(:mod:`bench.turn_costs`: the turn, the journal, the link, the runtime, the event loop, the
peers, and the model call the bare baseline also makes), and the top functions by own time.
About 60-80 s (25 s more with the profile).
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import io
import logging
import os
import pstats
import statistics
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.model.openai_gateway import ModelGateway
from actors.model.types import ModelSettings
from actors.store.journal_records import scan_records
from bench.turn_costs import cost_table, journal_records_per_turn
from bench.turn_peers import (
    _connect,
    _one_turn,
    _Router,
    _start_sessions,
    _Turn,
)
from tests.helpers.daemon_harness import DaemonHarness, LinkPeer

__all__ = ["main"]

PEERS = 10
PANELS = 100  # sessions, PANELS // PEERS per peer
TURNS = 10  # per panel, one after the other
CONCURRENCIES = (4, 16)  # [daemon] turn_concurrency (4 is the default)
IDLE_SESSIONS = 1000
WARMUP_TURNS = 2  # per peer, on sessions of their own, before the measurement
OVERHEAD_GOAL_MS = 2.0
IDLE_GOAL_BYTES = 64 * 1024
SCRIPT = {"mode": "echo"}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


@dataclass
class _DaemonRun:
    concurrency: int
    wall: float
    cpu: float  # process CPU seconds
    waits: list[float]  # s, chat.send -> status.thinking
    latencies: list[float]  # s, status.thinking -> chat.done
    errors: int
    frames: float  # session frames per turn seen at the peers
    queued: float  # of which chat.queued (position updates)
    records: str = ""  # journal records per turn, by kind
    profile: pstats.Stats | None = None


@dataclass
class _BareRun:
    wall: float
    cpu: float
    latencies: list[float]
    errors: int


async def _measure(concurrency: int, profile: bool) -> tuple[_DaemonRun, _BareRun]:
    """The daemon run, then the bare baseline on the same model server (the daemon idle)."""
    with tempfile.TemporaryDirectory(prefix="browy-bench-") as tmp:
        home = Path(tmp) / "home"
        config = f"turn_concurrency = {concurrency}\n"
        async with DaemonHarness(home, SCRIPT, config=config) as h:
            peers = await _connect(h, PEERS)
            per_peer = PANELS // PEERS
            sids = [[f"sp-{p}-{s}" for s in range(per_peer)] for p in range(PEERS)]
            await asyncio.gather(*(_start_sessions(p, s) for p, s in zip(peers, sids, strict=True)))
            for peer in peers:
                await _start_sessions(peer, [f"warm-{id(peer)}"])
            routers = [_Router(p) for p in peers]

            # Warm-up: HTTP connections, journals, code paths; not measured.
            async def warm(peer: LinkPeer, router: _Router) -> None:
                for n in range(WARMUP_TURNS):
                    await _one_turn(peer, router, f"warm-{id(peer)}", f"warm up {n}")

            await asyncio.gather(*(warm(p, r) for p, r in zip(peers, routers, strict=True)))
            first_request = len(h.model.requests)

            async def panel(peer: LinkPeer, router: _Router, sid: str) -> list[_Turn]:
                return [
                    await _one_turn(peer, router, sid, f"panel {sid} turn {n}: hello there")
                    for n in range(TURNS)
                ]

            gc.collect()
            profiler = cProfile.Profile() if profile else None
            if profiler is not None:
                profiler.enable()
            cpu, start = time.process_time(), time.perf_counter()
            results = await asyncio.gather(
                *(
                    panel(p, r, sid)
                    for p, r, ss in zip(peers, routers, sids, strict=True)
                    for sid in ss
                )
            )
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            if profiler is not None:
                profiler.disable()
            turns = [t for r in results for t in r]
            for router in routers:
                await router.close()
            for peer in peers:
                peer.log.clear()
            daemon = _DaemonRun(
                concurrency=concurrency,
                wall=wall,
                cpu=cpu,
                waits=[t.started.result() - t.sent for t in turns],
                latencies=[t.done.result() - t.started.result() for t in turns],
                errors=sum(1 for t in turns if "chat.error" in t.kinds),
                frames=sum(len(t.kinds) for t in turns) / len(turns),
                queued=sum(t.kinds.count("chat.queued") for t in turns) / len(turns),
                records=_records(home, len(turns)),
                profile=pstats.Stats(profiler) if profiler is not None else None,
            )
            # The baseline: the same model server, the daemon idle.
            bare = await _bare_run(h.model.base_url, h.model.requests[first_request:], concurrency)
            return daemon, bare


def _records(home: Path, turns: int) -> str:
    """The journal records of the measured panels' chats, per turn, by kind."""
    kinds: list[str] = []
    for path in (home / "sessions").rglob("sp-*.journal"):
        records, _ = scan_records(path.read_bytes())
        kinds += [str(r.get("k")) for r in records if r.get("k") != "chat"]
    return journal_records_per_turn(kinds, turns)


async def _bare_run(base_url: str, requests: list[dict[str, Any]], concurrency: int) -> _BareRun:
    """The same request bodies, straight through a ModelGateway, *concurrency* at a time."""
    gateway = ModelGateway(
        ModelSettings(base_url=base_url, api_key="sk-test-key", model="scripted-model")
    )
    latencies: list[float] = []
    errors = 0

    def on_text(piece: str) -> None:
        pass

    async def call(body: dict[str, Any]) -> None:
        nonlocal errors
        t0 = time.perf_counter()
        try:
            await gateway.stream_turn(body["messages"], body.get("tools") or [], on_text=on_text)
        except Exception:
            errors += 1
        latencies.append(time.perf_counter() - t0)

    try:
        for _ in range(2):  # warm-up: *concurrency* pooled connections
            await asyncio.gather(*(call(body) for body in requests[:concurrency]))
        latencies.clear()
        pending = iter(requests)

        async def worker() -> None:
            for body in pending:
                await call(body)

        gc.collect()
        cpu, start = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        await gateway.aclose()
    return _BareRun(wall=wall, cpu=cpu, latencies=latencies, errors=errors)


async def _idle_memory() -> tuple[float, int, list[tuple[str, int]]]:
    """Bytes per idle session (tracemalloc difference), the count, the top allocation sites."""
    with tempfile.TemporaryDirectory(prefix="browy-bench-") as tmp:
        async with DaemonHarness(Path(tmp) / "home", SCRIPT) as h:
            peers = await _connect(h, PEERS)
            # Warm-up: first-time allocations (caches, interned names) are not per session.
            await asyncio.gather(
                *(
                    _start_sessions(p, [f"warm-{n}-{i}" for i in range(5)])
                    for n, p in enumerate(peers)
                )
            )
            for peer in peers:
                peer.log.clear()
            per_peer = IDLE_SESSIONS // PEERS
            tracemalloc.start(1)
            try:
                gc.collect()
                before = tracemalloc.take_snapshot()
                await asyncio.gather(
                    *(
                        _start_sessions(p, [f"idle-{n}-{i}" for i in range(per_peer)])
                        for n, p in enumerate(peers)
                    )
                )
                await asyncio.sleep(0.05)  # let trailing frames arrive
                for peer in peers:
                    peer.log.clear()
                    while not peer.inbox.empty():
                        peer.inbox.get_nowait()
                gc.collect()
                after = tracemalloc.take_snapshot()
            finally:
                tracemalloc.stop()
            ignore = (
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "*/tests/helpers/*"),
            )
            diff = after.filter_traces(ignore).compare_to(before.filter_traces(ignore), "lineno")
            total = sum(d.size_diff for d in diff)
            count = per_peer * PEERS
            top = sorted(diff, key=lambda d: d.size_diff, reverse=True)[:6]
            sites = [(_site(d), d.size_diff // count) for d in top if d.size_diff > 0]
            return total / count, count, sites


def _site(stat: tracemalloc.StatisticDiff) -> str:
    if not stat.traceback:
        return "?"
    frame = stat.traceback[0]
    parts = Path(frame.filename).parts
    for anchor in ("site-packages", "main"):
        if anchor in parts:
            parts = parts[parts.index(anchor) + 1 :]
            break
    return f"{'/'.join(parts[-3:])}:{frame.lineno}"


async def _run(profile: bool) -> tuple[list[tuple[_DaemonRun, _BareRun]], tuple[Any, ...]]:
    rows = [await _measure(concurrency, False) for concurrency in CONCURRENCIES]
    if profile:  # a run of its own: the profiler must not slow the measured ones
        profiled, _ = await _measure(CONCURRENCIES[0], True)
        rows[0][0].profile = profiled.profile
    idle = await _idle_memory()
    return rows, idle


def main() -> None:
    profile = os.environ.get("BENCH_TURNS_PROFILE", "") not in ("", "0")
    # The daemon logs every turn; keep the console for the table.
    logging.getLogger().setLevel(logging.WARNING)
    rows, (idle_bytes, idle_count, sites) = asyncio.run(_run(profile))
    turns = PANELS * TURNS
    print(
        f"bench_turns: {PANELS} panels x {TURNS} turns over {PEERS} v2 peers, echo model, "
        "no delay; ms unless said"
    )
    header = (
        f"{'turn_concurrency':<18}{'turns/s':>9}{'bare/s':>9}{'wait p50':>10}"
        f"{'wait p99':>10}{'lat mean':>10}{'bare lat':>10}{'cpu/turn':>10}{'bare cpu':>10}"
        f"{'overhead':>10}{'x bare':>8}"
    )
    print(header)
    worst = 0.0
    for daemon, bare in rows:
        per_turn = daemon.cpu / turns * 1e3
        per_call = bare.cpu / len(bare.latencies) * 1e3
        overhead = per_turn - per_call
        worst = max(worst, overhead)
        print(
            f"{daemon.concurrency:<18}{turns / daemon.wall:>9,.0f}"
            f"{len(bare.latencies) / bare.wall:>9,.0f}"
            f"{_pct(daemon.waits, 0.5) * 1e3:>10.1f}{_pct(daemon.waits, 0.99) * 1e3:>10.1f}"
            f"{statistics.fmean(daemon.latencies) * 1e3:>10.2f}"
            f"{statistics.fmean(bare.latencies) * 1e3:>10.2f}"
            f"{per_turn:>10.2f}{per_call:>10.2f}{overhead:>10.2f}{per_turn / per_call:>8.1f}"
        )
        if daemon.errors or bare.errors:
            print(f"  errors: {daemon.errors} daemon turns, {bare.errors} bare calls")
    frames = ", ".join(
        f"{d.frames:.1f} ({d.queued:.1f} chat.queued) at {d.concurrency}" for d, _ in rows
    )
    print(f"frames per turn at the peers: {frames}")
    records = ", ".join(f"{d.records} at {d.concurrency}" for d, _ in rows)
    print(f"journal records per turn: {records}")
    print(
        "wait: chat.send -> status.thinking; lat: status.thinking -> chat.done (daemon), one "
        "stream_turn (bare)"
    )
    print(
        "cpu/turn: process CPU / turns (daemon + peers + model server, one loop); bare cpu: the "
        "same per bare call; overhead = cpu/turn - bare cpu"
    )
    print(
        f"idle session: {idle_bytes / 1024:.1f} KiB each "
        f"(tracemalloc difference over {idle_count} session.start, no turns); top sites:"
    )
    for where, size in sites:
        print(f"  {where:<60}{size:>8,} B/session")
    print(
        f"goal: overhead <= {OVERHEAD_GOAL_MS:g} ms per turn (worst {worst:.2f} ms): "
        f"{_verdict(worst <= OVERHEAD_GOAL_MS)}"
    )
    print(
        f"goal: idle session <= {IDLE_GOAL_BYTES // 1024} KiB ({idle_bytes / 1024:.1f} KiB): "
        f"{_verdict(idle_bytes <= IDLE_GOAL_BYTES)}"
    )
    for daemon, bare in rows:
        if daemon.profile is not None:
            per_turn = daemon.cpu / turns * 1e3
            per_call = bare.cpu / len(bare.latencies) * 1e3
            print()
            print(
                f"where a turn's CPU goes, turn_concurrency {daemon.concurrency} (cProfile of a "
                "run of its own; daemon, peers and model server share the loop):"
            )
            print("\n".join(cost_table(daemon.profile, per_turn, per_call)))
            print()
            print("top functions by own time (the profiled run):")
            out = io.StringIO()
            daemon.profile.stream = out  # type: ignore[attr-defined]
            daemon.profile.sort_stats("tottime").print_stats(25)
            print(out.getvalue())
