"""``browy chaos``: the fault-injection harness, run as a product feature and in CI (seeded, short).

In-process mode runs the daemon's real actors (:class:`nativehost.daemon.server.DaemonServer` on a
temporary ``BROWY_HOME``, over its real Unix-socket link) against the scripted model server
(:mod:`nativehost.demo.model_server`, real HTTP) and several fake extension peers
(:mod:`nativehost.chaos.peer`, each a v2 browser profile behind the real relay rules), many
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

Process mode (``--process``, :mod:`nativehost.chaos.process_mode`): each browser profile is a real
relay process (``python -m nativehost.relay.main``, pipes as Chrome starts it) that starts the real
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
- ``flat``: open file descriptors and memory do not grow over the run;
- ``supervised`` (in-process): every exit of a supervised agent actor was followed by its restart
  within 5 s, restarts stayed within the restart intensity, more exits than it allows escalated,
  and every injected crash shows as an exit (:func:`nativehost.chaos.checks.check_supervision`).
  A daemon whose supervisor escalated exits; the harness starts a new one, as the relays would.

The report (JSON, plus a human table) has faults injected by kind, turns run, completed, definite
errors, hung, duplicated, lost, and the recovery time p50/p99 per fault kind.

The harness's modules: :mod:`nativehost.chaos.faults` (the fault kinds, the fsync and
crash-on-cue seams, the scripted model's steps), :mod:`nativehost.chaos.report` (options, the
report, its JSON and the human table), :mod:`nativehost.chaos.checks` (the invariant checks over
the records and journals), :mod:`nativehost.chaos.measure` (descriptors, memory, processes),
:mod:`nativehost.chaos.peer` with :mod:`nativehost.chaos.panels` and
:mod:`nativehost.chaos.fake_browser` (the fake extension), and :mod:`nativehost.chaos.process_mode`
with :mod:`nativehost.chaos.relay_peer` (process mode). This module runs the in-process mode
(:func:`run_chaos`) and the command line (:func:`main`), and re-exports the names above that the
command line and the tests use.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from actors.store.chat_store import ChatStore, sessions_dir
from nativehost.chaos.faults import (
    ALL_FAULTS,
    BROWSER_FAULTS,
    FRAME_FAULTS,
    IN_PROCESS_FAULTS,
    MODEL_FAULTS,
    PROCESS_FAULTS,
    SCRIPT_HEAD,
    FaultyFsync,
    _CrashOnCue,
    _Injected,
    _marker,
    _tag,
    turn_steps,
)
from nativehost.chaos.measure import _fds, _rss, deep_size
from nativehost.chaos.peer import ChaosPeer
from nativehost.chaos.report import INVARIANTS, ChaosOptions, ChaosReport, format_table
from nativehost.chaos.run import ChaosRun
from nativehost.config import load_config
from nativehost.daemon.server import DaemonServer
from nativehost.demo.model_server import ScriptedModelServer
from supervisors.agent import AgentHub

__all__ = [
    "ALL_FAULTS",
    "INVARIANTS",
    "IN_PROCESS_FAULTS",
    "PROCESS_FAULTS",
    "ChaosOptions",
    "ChaosReport",
    "FaultyFsync",
    "deep_size",
    "format_table",
    "main",
    "run_chaos",
    "turn_steps",
]

log = logging.getLogger(__name__)


class _Run(ChaosRun):
    """One in-process run (see the module docstring)."""

    def __init__(self, opts: ChaosOptions, home: Path) -> None:
        super().__init__(opts, home)
        self.fsync = FaultyFsync()
        self.peers: list[ChaosPeer] = []
        self.server: DaemonServer | None = None
        self._hubs: list[AgentHub] = []  # every daemon of the run (one, unless one escalated)
        self._stopping = False
        self.daemon_restarts = 0

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
        self._start_server()
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

    def _start_server(self) -> None:
        config = load_config(self.home, env={})
        # The store seam (ChatStore(fsync_fn=)): a store whose fsync can fail.
        server = DaemonServer(
            self.home,
            config,
            version="chaos",
            store=ChatStore(sessions_dir(self.home), fsync_fn=self.fsync),
        )
        self.server = server
        self._hubs.append(server.hub)
        self._serve_task = asyncio.ensure_future(server.serve())

    async def _keep_daemon(self) -> None:
        """A daemon whose agent supervisor escalated exits; the relays would start a new one.
        So does the harness (the peers reconnect as relays do)."""
        while True:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._serve_task)
            if self._stopping:
                return
            log.warning("chaos: the daemon exited (its supervisor escalated); starting a new one")
            self.daemon_restarts += 1
            self._start_server()

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

    # -- the run --------------------------------------------------------------------------------

    async def run(self) -> ChaosReport:
        report = ChaosReport(
            seed=self.opts.seed, duration=self.opts.duration, sessions=self.opts.sessions
        )
        started = time.monotonic()
        self.stop_sending = started + self.opts.duration
        keeper: asyncio.Future[None] | None = None
        try:
            await self._start()
            keeper = asyncio.ensure_future(self._keep_daemon())
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
            self.supervision = [e for hub in self._hubs for e in hub.supervision]
            first = self._hubs[0]._sup if self._hubs else None
            if first is not None:
                self.intensity = (first.intensity.max_restarts, first.intensity.within_seconds)
        finally:
            self._stopping = True
            if keeper is not None:
                keeper.cancel()
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
        if self.daemon_restarts:
            report.supervision["daemon restarted"] = self.daemon_restarts
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


async def run_chaos(opts: ChaosOptions) -> ChaosReport:
    """Run one in-process chaos run and check its invariants (see the module docstring)."""
    if opts.home is not None:
        return await _Run(opts, opts.home).run()
    with tempfile.TemporaryDirectory(prefix="browy-chaos-") as tmp:
        return await _Run(opts, Path(tmp) / "home").run()


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
        from nativehost.chaos.process_mode import run_process_chaos

        report = asyncio.run(run_process_chaos(opts))
    else:
        report = asyncio.run(run_chaos(opts))
    out.write(format_table(report) + "\n")
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_json(), indent=2) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
