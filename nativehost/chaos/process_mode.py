"""``browy chaos --process``: the fault-injection harness with real processes.

Each simulated browser profile (``ProcessPeer``) starts the real relay as Chrome does —
``python -m nativehost.relay.main chrome-extension://<id>/`` with pipes, native-messaging frames
(4-byte little-endian length + UTF-8 JSON) on its stdin and stdout — and behaves like the
extension's service worker (``extension/lib/background.js``, ``native.js``): ``hello`` on every new
port, the live ``session.start``s once ``hello.ack`` is in, messages queued while the port is not
ready and sent after the registrations, ``cdp.send``/``tab.*`` answered with ``tool.result`` by an
in-memory browser (:class:`nativehost.chaos.fake_browser.FakeBrowser`), approval prompts allowed.
The relays start the real daemon on a temporary ``BROWY_HOME`` (exactly one, by its lock), whose
config points the model at an in-process :class:`nativehost.demo.model_server.ScriptedModelServer`;
every session runs turns without pause (a page-changing ``new_tab`` and a host-side ``note_set``,
then an answer).

Faults, from a schedule drawn from ``--seed``:

- ``relay_kill``: SIGKILL of one profile's relay process while its turns run. As the real service
  worker does on ``onDisconnect``, the profile starts a new relay after a short jittered backoff
  and sends ``hello`` and its ``session.start``s again; the daemon, which ended the dead
  connection's turns, delivers each kept end after the session's ``session.ready`` (protocol.md
  section 7, "Ends that find no panel").
- ``daemon_kill``: SIGKILL of the daemon (pid from ``BROWY_HOME/run/browyd.pid``). Every relay
  ends its turns in flight itself (``CONNECTION_LOST``), reconnects, starts a new daemon (one, by
  the lock), tells it ``turns_ended`` and re-sends its registrations.

The invariants are those of the in-process mode (see :mod:`nativehost.chaos.harness`), with ``flat``
measured on the daemon's open descriptors and memory, plus ``no_leftover``: when the run is over
no relay and no daemon of it is left (every pid it started or saw is gone; the harness ends them
by recorded pid, never by name). Recovery is measured per fault from the kill to the first
``chat.done`` of a turn sent after it on a session the fault hit.

The profile's side of the relay (``ProcessPeer``, ``RelayProtocol``) is in
:mod:`nativehost.chaos.relay_peer`; the process measurements (``pid_alive`` and the ``/proc``
readers) are in :mod:`nativehost.chaos.measure`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from actors.runtime.private_files import write_private
from nativehost.chaos.checks import FD_SLACK, RSS_SLACK_BYTES
from nativehost.chaos.faults import (
    PROCESS_FAULTS,
    SCRIPT_HEAD,
    _Injected,
    _marker,
    _tag,
    turn_steps,
)
from nativehost.chaos.measure import (
    _cmdline,
    _harness_fds,
    _home_daemons,
    _proc_fds,
    _proc_rss,
    pid_alive,
)
from nativehost.chaos.relay_peer import ProcessPeer
from nativehost.chaos.report import ChaosOptions, ChaosReport
from nativehost.chaos.run import ChaosRun
from nativehost.daemon.instance import pid_path
from nativehost.daemon.standby import standby_pid_path
from nativehost.demo.model_server import ScriptedModelServer

__all__ = ["run_process_chaos"]

log = logging.getLogger(__name__)

#: Seconds a session waits after a definite error before its next turn (a user would, too; it
#: keeps a session from running through its script while the daemon restarts).
AFTER_ERROR_S = 0.3
#: Environment variables that would point the daemon elsewhere than the scripted model.
_MODEL_ENV = ("BROWY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


class _ProcessRun(ChaosRun):
    """One process-mode run (see the module docstring)."""

    def __init__(self, opts: ChaosOptions, home: Path) -> None:
        super().__init__(opts, home)
        self.process_peers: list[ProcessPeer] = []
        self.daemon_pids: list[int] = []
        #: Standby daemons (nativehost.daemon.standby): they leave with the daemon at the end.
        self.standby_pids: list[int] = []
        self.relay_kills = 0
        self.daemon_kills = 0
        self._watcher: asyncio.Task[None] | None = None

    # -- setup ----------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV}
        env["BROWY_HOME"] = str(self.home)
        env["BROWY_IDLE_EXIT_SECONDS"] = "0"  # the harness stops it
        env.pop("BROWY_LINK_TRANSPORT", None)
        return env

    async def _start(self) -> None:
        self.model = ScriptedModelServer(SCRIPT_HEAD, keep_bodies=False)
        base_url = await self.model.start()
        write_private(
            self.home / "config.toml",
            "[model]\n"
            f'base_url = "{base_url}"\n'
            'model = "chaos-model"\n'
            'api_key = "sk-chaos"\n'
            "request_timeout = 5\n"
            "[daemon]\n"
            "idle_exit_seconds = 0\n"
            f"turn_concurrency = {min(64, max(4, self.opts.sessions))}\n",
        )
        self._watcher = asyncio.ensure_future(self._watch_daemon())
        env = self._env()
        npeers = self.opts.peers or max(1, (self.opts.sessions + 2) // 3)
        groups: list[list[str]] = [[] for _ in range(npeers)]
        for s in range(self.opts.sessions):
            groups[s % npeers].append(f"sp-chaos-{s:02d}")
        for i, sids in enumerate(groups):
            peer = ProcessPeer(
                env, i, sids, self.recorder, random.Random(self.rng.random()), self._daemon_pid
            )
            self.process_peers.append(peer)
            for sid in sids:
                self.session_peer[sid] = (peer, int(sid.rsplit("-", 1)[1]))
        await asyncio.gather(*(p.start() for p in self.process_peers))

    def _daemon_pid(self) -> int | None:
        return _read_pid(pid_path(self.home))

    async def _watch_daemon(self) -> None:
        """Record every daemon pid this home's pid file names (to check and clean up later)."""
        while True:
            pid = self._daemon_pid()
            if pid is not None and pid not in self.daemon_pids and pid_alive(pid):
                self.daemon_pids.append(pid)
            standby = _read_pid(standby_pid_path(self.home))
            if standby is not None and standby not in self.standby_pids and pid_alive(standby):
                self.standby_pids.append(standby)
            await asyncio.sleep(0.05)

    async def _live_daemon(self, timeout: float) -> int | None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while True:
                    pid = self._daemon_pid()
                    if pid is not None and pid_alive(pid):
                        if pid not in self.daemon_pids:
                            self.daemon_pids.append(pid)
                        return pid
                    await asyncio.sleep(0.05)
        return None

    # -- the sessions and the schedule ----------------------------------------------------------

    async def _session(self, sid: str) -> None:
        peer, index = self.session_peer[sid]
        await peer.wait_ready(sid, 30.0)
        number = 0
        while time.monotonic() < self.stop_sending:
            number += 1
            assert self.model is not None
            self.model.extend(turn_steps(index, number))
            rec = peer.send_chat(sid, number, f"{_marker(index)} please do {_tag(number)}")
            if not await self.recorder.wait_end(rec, self.opts.turn_deadline):
                self.recorder.open.pop(sid, None)  # hung: counted from its record
            pause = AFTER_ERROR_S if rec.end_type == "chat.error" else 0.05
            await asyncio.sleep(self.rng.uniform(0.0, pause))

    def _schedule(self) -> list[tuple[float, str]]:
        kinds = [k for k in self.opts.faults if k in PROCESS_FAULTS]
        if not kinds:
            return []
        window = (0.15 * self.opts.duration, 0.7 * self.opts.duration)
        count = max(len(kinds), int(self.opts.duration / 4))
        plan = [(self.rng.uniform(*window), k) for k in kinds]  # each kind at least once
        plan += [
            (self.rng.uniform(*window), self.rng.choice(kinds)) for _ in range(count - len(kinds))
        ]
        return sorted(plan)

    async def _inject(self, kind: str) -> None:
        if kind == "relay_kill":
            await self._kill_relay()
        elif kind == "daemon_kill":
            await self._kill_daemon()

    async def _kill_relay(self) -> None:
        # Mid-turn: a linked relay whose sessions have a turn open, if there is one.
        await _until(lambda: any(p.linked for p in self.process_peers), 10.0)
        linked = [p for p in self.process_peers if p.linked]
        busy = [p for p in linked if any(s in self.recorder.open for s in p.session_ids)]
        if not linked:
            self.problems_extra.append("relay_kill: no linked relay within 10 s")
            return
        peer = self.rng.choice(busy or linked)
        pid = peer.kill_relay()
        if pid is None:
            return
        self.relay_kills += 1
        self.injected.append(
            _Injected(
                "relay_kill", time.monotonic(), f"peer {peer.index} relay {pid}",
                frozenset(peer.session_ids),
            )
        )  # fmt: skip

    async def _kill_daemon(self) -> None:
        pid = await self._live_daemon(15.0)
        if pid is None:
            self.problems_extra.append("daemon_kill: no live daemon within 15 s")
            return
        if "nativehost.daemon.process" not in _cmdline(pid):
            self.problems_extra.append(f"daemon_kill: pid {pid} is not our daemon")
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        self.daemon_kills += 1
        self.injected.append(_Injected("daemon_kill", time.monotonic(), f"daemon {pid}"))

    # -- the run --------------------------------------------------------------------------------

    problems_extra: list[str]

    def _daemon_usage(self) -> tuple[int, int]:
        pid = self._daemon_pid()
        if pid is None or not pid_alive(pid):
            return (0, 0)
        return (_proc_fds(pid), _proc_rss(pid))

    async def _steady_usage(self) -> tuple[int, int]:
        """The daemon's fds and RSS once every relay is linked to it (waiting up to 10 s)."""
        await _until(lambda: all(p.linked for p in self.process_peers), 10.0)
        return self._daemon_usage()

    async def run(self) -> ChaosReport:
        self.problems_extra = []
        report = ChaosReport(
            seed=self.opts.seed,
            duration=self.opts.duration,
            sessions=self.opts.sessions,
            mode="process",
        )
        self.stop_sending = time.monotonic() + self.opts.duration
        harness_fds = (0, 0)
        live: asyncio.Future[None] | None = None
        try:
            await self._start()
            live = self._start_live()
            sessions = [asyncio.ensure_future(self._session(s)) for s in self.session_peer]
            faults = asyncio.ensure_future(self._faults())
            # Warm: once the caches have filled a little and every relay is linked (a daemon
            # just restarted, with half its links, would make any later one look grown).
            await asyncio.sleep(min(60.0, 0.15 * self.opts.duration))
            warm = await self._steady_usage()
            harness_fds = (_harness_fds(), 0)
            await asyncio.gather(*sessions)
            faults.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await faults
            await asyncio.sleep(1.0)  # late extra ends, if any, arrive now
            # The daemon at the end, against the one warmed up (a restarted one starts lower).
            end = await self._steady_usage()
            report.fds = (warm[0], end[0])
            report.rss = (warm[1], end[1])
        finally:
            if live is not None:
                live.cancel()
            leftover = await self._cleanup()
        harness_fds = (harness_fds[0], _harness_fds())
        self._check(report)
        self._check_process(report, leftover, harness_fds)
        return report

    async def _cleanup(self) -> list[str]:
        """Close every port, stop the daemon, then check that no process of the run is left."""
        for peer in self.process_peers:
            with contextlib.suppress(Exception):
                await peer.close()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        pid = self._daemon_pid()
        if pid is not None and pid not in self.daemon_pids and pid_alive(pid):
            self.daemon_pids.append(pid)
        for pid in self.daemon_pids:
            if pid_alive(pid) and "nativehost.daemon.process" in _cmdline(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        await _until(lambda: not any(pid_alive(p) for p in self.daemon_pids), 10.0)
        leftover = []
        for pid in self.daemon_pids:
            if pid_alive(pid) and "nativehost.daemon.process" in _cmdline(pid):
                leftover.append(f"daemon {pid} did not stop on SIGTERM")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        # A standby leaves when its daemon exits on purpose (no pid file left behind); one that
        # took over after a daemon_kill is a recorded daemon once its pid file names it.
        standbys = [p for p in self.standby_pids if p not in self.daemon_pids]
        await _until(lambda: not any(pid_alive(p) for p in standbys), 5.0)
        for pid in standbys:
            if pid_alive(pid) and "nativehost.daemon.process" in _cmdline(pid):
                leftover.append(f"standby daemon {pid} did not leave with its daemon")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for peer in self.process_peers:
            for pid in peer.relay_pids:
                if pid_alive(pid) and "nativehost.relay.main" in _cmdline(pid):
                    leftover.append(f"relay {pid} of peer {peer.index} still runs")
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        # A process of this home that no pid file or port recorded (e.g. a second daemon).
        known = set(self.daemon_pids) | set(self.standby_pids)
        known |= {p for peer in self.process_peers for p in peer.relay_pids}
        # A standby still starting when its daemon stopped leaves once it sees that (it polls).
        strays = _home_daemons(self.home, known)
        await _until(lambda: not any(pid_alive(p) for p in strays), 5.0)
        for pid in [p for p in strays if pid_alive(p)]:
            leftover.append(f"unrecorded daemon {pid} of this home")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.model is not None:
            await self.model.stop()
        return leftover

    def _check_process(
        self, report: ChaosReport, leftover: list[str], harness_fds: tuple[int, int]
    ) -> None:
        relays = sum(len(p.relay_pids) for p in self.process_peers)
        report.processes = {
            "relays_started": relays,
            "relay_kills": self.relay_kills,
            "relay_exits_unplanned": sum(p.unplanned_exits for p in self.process_peers),
            "daemons_seen": len(self.daemon_pids),
            "daemon_kills": self.daemon_kills,
            "leftover": len(leftover),
        }
        for peer in self.process_peers:
            report.problems += peer.problems
        report.problems += self.problems_extra
        report.problems += leftover
        report.invariants["no_leftover"] = not leftover
        if harness_fds[1] - harness_fds[0] > FD_SLACK:
            report.invariants["flat"] = False
            report.problems.append(f"harness fds {harness_fds}: pipes of dead relays not closed")
        if report.fds == (0, 0) or report.fds[1] == 0:
            report.problems.append("no daemon to measure at warm-up or at the end")
        # A restarted daemon may be measured at the end: only growth beyond the slack counts.
        report.invariants["flat"] = report.invariants.get("flat", True) and (
            report.fds[1] - report.fds[0] <= FD_SLACK
            and report.rss[1] - report.rss[0] <= RSS_SLACK_BYTES
        )


async def _until(predicate: Callable[[], bool], timeout: float) -> bool:
    """Poll *predicate* until it holds or *timeout* seconds pass (a liveness wait)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def run_process_chaos(opts: ChaosOptions) -> ChaosReport:
    """Run one process-mode chaos run and check its invariants (see the module docstring)."""
    if opts.home is not None:
        return await _ProcessRun(opts, opts.home.absolute()).run()
    # A short path: the daemon's socket lives under BROWY_HOME/run when the path is short enough.
    with tempfile.TemporaryDirectory(prefix="browy-chaos-") as tmp:
        return await _ProcessRun(opts, Path(tmp) / "home").run()


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None
