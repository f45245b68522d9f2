"""What every ``browy chaos`` run has, in-process or with real processes: :class:`ChaosRun`.

A run owns its options, its ``BROWY_HOME``, a random generator seeded from ``--seed`` (every draw
of the run comes from it), the recorder of what the panels saw, the faults it injected, the fake
browser profile that serves each session, and the scripted model server. It plays its schedule of
faults — each ``(seconds after the start, kind)`` of :meth:`ChaosRun._schedule`, injected by
:meth:`ChaosRun._inject` — and afterwards checks the invariants
(:class:`nativehost.chaos.checks.InvariantChecks`).

The two modes are subclasses: ``_InProcessRun`` (:mod:`nativehost.chaos.in_process`) and
``_ProcessRun`` (:mod:`nativehost.chaos.process_mode`).
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

from nativehost.chaos.checks import InvariantChecks, PeerLike
from nativehost.chaos.faults import _Injected
from nativehost.chaos.live import live_line
from nativehost.chaos.panels import Recorder
from nativehost.chaos.report import ChaosOptions, ChaosReport
from nativehost.demo.model_server import ScriptedModelServer

__all__ = ["ChaosRun"]


class ChaosRun(InvariantChecks):
    """One run of the harness; a mode says how it starts, what it injects, and how it runs."""

    def __init__(self, opts: ChaosOptions, home: Path) -> None:
        self.opts = opts
        self.home = home
        self.rng = random.Random(opts.seed)
        self.recorder = Recorder()
        self.injected: list[_Injected] = []
        self.session_peer: dict[str, tuple[PeerLike, int]] = {}
        self.model: ScriptedModelServer | None = None
        self.model_faults: dict[tuple[int, int], str] = {}
        self.stop_sending = 0.0

    def _schedule(self) -> list[tuple[float, str]]:
        """The faults to inject: (seconds after the start, kind), in time order."""
        raise NotImplementedError

    async def _inject(self, kind: str) -> None:
        """Inject one fault of *kind* now."""
        raise NotImplementedError

    async def _faults(self) -> None:
        start = time.monotonic()
        for at, kind in self._schedule():
            delay = start + at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await self._inject(kind)

    async def run(self) -> ChaosReport:
        """Run, stop everything the run started, check the invariants, return the report."""
        raise NotImplementedError

    def live_status(self, elapsed: float) -> str:
        """The run so far in one line (:func:`nativehost.chaos.live.live_line`)."""
        peers = {p.index: p for p, _ in self.session_peer.values()}.values()
        return live_line(
            elapsed=elapsed,
            duration=self.opts.duration,
            recorder=self.recorder,
            faults=len(self.injected),
            executed=[e for p in peers for e in p.browser.executed],
        )

    def _start_live(self) -> asyncio.Future[None] | None:
        """Give ``opts.live`` the status line once a second, until cancelled."""
        show = self.opts.live
        if show is None:
            return None

        async def tick() -> None:
            started = time.monotonic()
            while True:
                show(self.live_status(time.monotonic() - started))
                await asyncio.sleep(1.0)

        return asyncio.ensure_future(tick())
