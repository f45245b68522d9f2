"""``browy chaos`` in-process: the daemon's real actors in this process, fake extensions around.

The run (:func:`run_chaos`) starts :class:`nativehost.daemon.server.DaemonServer` on a temporary
``BROWY_HOME``, over its real Unix-socket link, against the scripted model server
(:mod:`nativehost.demo.model_server`, real HTTP) and several fake extension peers
(:mod:`nativehost.chaos.peer`, each a v2 browser profile behind the real relay rules), many
sessions at once, and injects faults from a schedule drawn from ``--seed``.

Fault kinds and their seam:

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

Besides the invariants of both modes (:mod:`nativehost.chaos.harness`) it checks ``supervised``
from what the daemon's agent supervisor did, and measures ``flat`` on this process, less what the
harness's own records grew (:meth:`_InProcessRun._harness_bytes`: what the panels saw, what the
fake browsers executed, the faults, the supervision events it checks, the scripted steps not yet
taken), from warm-up to the end and over the later part of the run (:data:`LATE_FROM`). A
daemon whose supervisor escalated exits; the run starts a new one, as the relays would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from actors.runtime.private_files import write_private
from actors.store.chat_store import ChatStore, sessions_dir
from nativehost.chaos.checks import supervision_checked
from nativehost.chaos.faults import (
    BROWSER_FAULTS,
    FRAME_FAULTS,
    IN_PROCESS_FAULTS,
    MODEL_FAULTS,
    SCRIPT_HEAD,
    FaultyFsync,
    _CrashOnCue,
    _Injected,
    _marker,
    _tag,
    turn_steps,
)
from nativehost.chaos.measure import _fds, _rss, deep_size, object_graph_size
from nativehost.chaos.peer import ChaosPeer
from nativehost.chaos.report import LATE_FROM, ChaosOptions, ChaosReport
from nativehost.chaos.run import ChaosRun
from nativehost.config import load_config
from nativehost.daemon.server import DaemonServer
from nativehost.demo.model_server import ScriptedModelServer
from supervisors.introspection import SupervisionEvent

__all__ = ["run_chaos"]

log = logging.getLogger(__name__)


class _InProcessRun(ChaosRun):
    """One in-process run (see the module docstring)."""

    def __init__(self, opts: ChaosOptions, home: Path) -> None:
        super().__init__(opts, home)
        self.fsync = FaultyFsync()
        self.peers: list[ChaosPeer] = []
        self.server: DaemonServer | None = None
        #: What the daemons' supervisors did (every daemon of the run: one, unless one escalated).
        self.events: list[SupervisionEvent] = []
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
        write_private(
            self.home / "config.toml",
            "[model]\n"
            f'base_url = "{base_url}"\n'
            'model = "chaos-model"\n'
            'api_key = "sk-chaos"\n'
            "request_timeout = 2.5\n"
            "[daemon]\n"
            "idle_exit_seconds = 0\n"
            f"turn_concurrency = {min(64, max(4, self.opts.sessions))}\n",
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
            observer=self._observe,
        )
        self.server = server
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

    def _observe(self, event: SupervisionEvent) -> None:
        # Only what ``supervised`` checks: not one event for every turn and link of the run.
        if supervision_checked(event):
            self.events.append(event)

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
            # A turn that ended early (a fault) left steps no request will take.
            self.model.drop_steps(_marker(index), _tag(number))
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
        ref: Any = None
        if target == "connection":
            refs = self.server.connection_refs()
            ref = self.rng.choice(refs) if refs else None
        else:
            named = [r for n, r in self.server.actor_refs().items() if n.startswith(target)]
            ref = self.rng.choice(named) if named else None
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
        live: asyncio.Future[None] | None = None
        try:
            await self._start()
            live = self._start_live()
            keeper = asyncio.ensure_future(self._keep_daemon())
            sessions = [asyncio.ensure_future(self._session(s)) for s in self.session_peer]
            faults = asyncio.ensure_future(self._faults())
            # Warm: after the first faults and once the caches are full (the store keeps up to
            # 64 open chats), not before.
            await asyncio.sleep(min(60.0, 0.15 * self.opts.duration))
            warm = (_fds(), _rss(), self._harness_bytes())
            sampler = asyncio.ensure_future(self._sample_rss(report, started))
            late = asyncio.ensure_future(self._late_start(report, started))
            await asyncio.gather(*sessions)
            faults.cancel()
            sampler.cancel()
            for task in (faults, sampler):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await asyncio.sleep(1.0)  # late extra ends, if any, arrive now
            late.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await late
            end = (_fds(), _rss(), self._harness_bytes())
            report.fds = (warm[0], end[0])
            report.rss = (warm[1], end[1])
            report.harness = (warm[2], end[2])
            if report.late_window[0]:
                report.late_window = (report.late_window[0], time.monotonic() - started)
                report.late_rss = (report.late_rss[0], end[1])
                report.late_harness = (report.late_harness[0], end[2])
                report.late_objects = (report.late_objects[0], self._daemon_bytes())
            self.supervision = list(self.events)
        finally:
            self._stopping = True
            for helper in (keeper, live):
                if helper is not None:
                    helper.cancel()
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

    async def _late_start(self, report: ChaosReport, started: float) -> None:
        """Mark the start of the later part of the run (:data:`LATE_FROM` of the duration)."""
        await asyncio.sleep(max(0.0, started + LATE_FROM * self.opts.duration - time.monotonic()))
        report.late_window = (time.monotonic() - started, 0.0)
        report.late_rss = (_rss(), 0)
        report.late_harness = (self._harness_bytes(), 0)
        report.late_objects = (self._daemon_bytes(), 0)

    def _daemon_bytes(self) -> int:
        """What the daemon's objects hold: all that is reachable from its server, the harness's
        own objects left out."""
        if self.server is None:
            return 0
        return object_graph_size(self.server, skip_modules=("nativehost.chaos", "nativehost.demo"))

    def _harness_bytes(self) -> int:
        """What the harness's records hold (they grow with the turns; the daemon's do not)."""
        rec = self.recorder
        roots: list[object] = [
            rec.turns,
            rec.ended_turn_ids,
            rec.tool_outcomes,
            rec.extra_ends,
            self.injected,
            self.events,
            *(p.browser.executed for p in self.peers),
        ]
        if self.model is not None:
            roots += [self.model.served_faults, self.model.pending_steps()]
        return deep_size(roots)


async def run_chaos(opts: ChaosOptions) -> ChaosReport:
    """Run one in-process chaos run and check its invariants (see the module docstring)."""
    if opts.home is not None:
        return await _InProcessRun(opts, opts.home).run()
    with tempfile.TemporaryDirectory(prefix="browy-chaos-") as tmp:
        return await _InProcessRun(opts, Path(tmp) / "home").run()
