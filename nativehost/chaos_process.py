"""``browy chaos --process``: the fault-injection harness with real processes.

Each simulated browser profile (:class:`ProcessPeer`) starts the real relay as Chrome does —
``python -m nativehost.relay chrome-extension://<id>/`` with pipes, native-messaging frames (4-byte
little-endian length + UTF-8 JSON) on its stdin and stdout — and behaves like the extension's
service worker (``extension/lib/background.js``, ``native.js``): ``hello`` on every new port, the
live ``session.start``s once ``hello.ack`` is in, messages queued while the port is not ready and
sent after the registrations, ``cdp.send``/``tab.*`` answered with ``tool.result`` by an in-memory
browser (:class:`nativehost.chaos_peer.FakeBrowser`), approval prompts allowed. The relays start
the real daemon on a temporary ``BROWY_HOME`` (exactly one, by its lock), whose config points the
model at an in-process :class:`nativehost.model_server.ScriptedModelServer`; every session runs
turns without pause (a page-changing ``new_tab`` and a host-side ``note_set``, then an answer).

Faults, from a schedule drawn from ``--seed``:

- ``relay_kill``: SIGKILL of one profile's relay process while its turns run. As the real service
  worker does on ``onDisconnect``, the profile starts a new relay after a short jittered backoff
  and sends ``hello`` and its ``session.start``s again; the daemon, which ended the dead
  connection's turns, delivers each kept end after the session's ``session.ready`` (protocol.md
  section 7, "Ends that find no panel").
- ``daemon_kill``: SIGKILL of the daemon (pid from ``BROWY_HOME/run/browyd.pid``). Every relay
  ends its turns in flight itself (``CONNECTION_LOST``), reconnects, starts a new daemon (one, by
  the lock), tells it ``turns_ended`` and re-sends its registrations.

The invariants are those of the in-process mode (see :mod:`nativehost.chaos`), with ``flat``
measured on the daemon's open descriptors and memory, plus ``no_leftover``: when the run is over
no relay and no daemon of it is left (every pid it started or saw is gone; the harness ends them
by recorded pid, never by name). Recovery is measured per fault from the kill to the first
``chat.done`` of a turn sent after it on a session the fault hit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import signal
import struct
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from nativehost.chaos import (
    FD_SLACK,
    PROCESS_FAULTS,
    RSS_SLACK_BYTES,
    SCRIPT_HEAD,
    ChaosOptions,
    ChaosReport,
    _Injected,
    _marker,
    _Run,
    _tag,
    turn_steps,
)
from nativehost.chaos_peer import (
    HOST_REQUESTS,
    ORIGIN,
    FakeBrowser,
    Recorder,
    TurnRecord,
    to_panels,
)
from nativehost.daemon import pid_path
from nativehost.model_server import ScriptedModelServer

__all__ = ["ProcessPeer", "RelayProtocol", "run_process_chaos"]

log = logging.getLogger(__name__)

#: The service worker gives a new port this long for its ``hello.ack`` (native.js helloTimeoutMs).
HELLO_TIMEOUT_S = 30.0
#: Messages the service worker holds while its port is not ready (native.js queueLimit).
QUEUE_LIMIT = 500
#: Seconds a session waits after a definite error before its next turn (a user would, too; it
#: keeps a session from running through its script while the daemon restarts).
AFTER_ERROR_S = 0.3
#: Environment variables that would point the daemon elsewhere than the scripted model.
_MODEL_ENV = ("BROWY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def frame(obj: dict[str, Any]) -> bytes:
    """One native-messaging frame: 4-byte little-endian length, then UTF-8 JSON."""
    payload = orjson.dumps(obj)
    return struct.pack("<I", len(payload)) + payload


class RelayProtocol(asyncio.SubprocessProtocol):
    """Chrome's end of the pipes: splits the relay's stdout into frames."""

    def __init__(self, on_frame: Callable[[bytes], None]) -> None:
        self.on_frame = on_frame
        self.buffer = bytearray()
        self.exited = asyncio.Event()
        self.stdout_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        if fd != 1:
            return
        buf = self.buffer
        buf += data
        while len(buf) >= 4:
            (length,) = struct.unpack_from("<I", buf)
            if len(buf) < 4 + length:
                break
            payload = bytes(buf[4 : 4 + length])
            del buf[: 4 + length]
            self.on_frame(payload)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.stdout_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


def pid_alive(pid: int) -> bool:
    """True when *pid* runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return state != b"Z"


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _proc_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _proc_rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class _Relay:
    """One relay process of a profile (one Chrome native port)."""

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.transport: asyncio.SubprocessTransport | None = None
        self.protocol: RelayProtocol | None = None
        self.pid = 0
        self.linked = False  # hello.ack seen
        self.killed = False  # by the harness

    def write(self, obj: dict[str, Any]) -> bool:
        transport = self.transport
        if transport is None or transport.get_returncode() is not None:
            return False
        pipe = transport.get_pipe_transport(0)
        if not isinstance(pipe, asyncio.WriteTransport) or pipe.is_closing():
            return False
        try:
            pipe.write(frame(obj))
        except (ConnectionError, OSError, RuntimeError):
            return False
        return True


class ProcessPeer:
    """One browser profile: the service worker's side of a real relay process, its panels'
    sessions and an in-memory browser (see the module docstring)."""

    def __init__(
        self,
        env: dict[str, str],
        index: int,
        session_ids: list[str],
        recorder: Recorder,
        rng: random.Random,
        daemon_pid: Callable[[], int | None],
    ) -> None:
        self.env = env
        self.daemon_pid = daemon_pid
        self.index = index
        self.install_id = f"chaos-install-{index}"
        self.session_ids = session_ids
        self.recorder = recorder
        self.rng = rng
        self.browser = FakeBrowser()
        self.ready: dict[str, asyncio.Event] = {s: asyncio.Event() for s in session_ids}
        self.relay: _Relay | None = None
        self.generation = 0
        self.queue: list[dict[str, Any]] = []
        self.relay_pids: list[int] = []
        self.unplanned_exits = 0
        self.errors: Counter[str] = Counter()
        self.problems: list[str] = []
        self._attempt = 0
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the port -------------------------------------------------------------------------------

    @property
    def linked(self) -> bool:
        return self.relay is not None and self.relay.linked

    async def start(self) -> None:
        await self._launch()

    async def _launch(self) -> None:
        """connectNative: a new relay process, then ``hello`` (native.js ``connect``)."""
        if self._closing:
            return
        self.generation += 1
        relay = _Relay(self.generation)
        self.relay = relay
        for event in self.ready.values():
            event.clear()
        loop = asyncio.get_running_loop()
        protocol = RelayProtocol(lambda payload: self._on_frame(relay, payload))
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
            sys.executable,
            "-m",
            "nativehost.relay",
            ORIGIN,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=self.env,
        )
        relay.transport = transport
        relay.protocol = protocol
        relay.pid = transport.get_pid()
        self.relay_pids.append(relay.pid)
        self._spawn(self._watch(relay))
        relay.write(
            {
                "type": "hello",
                "client": "extension",
                "protocol": 2,
                "installId": self.install_id,
                "extensionVersion": "0.0.0-chaos",
                "capabilities": [],
            }
        )

    async def _watch(self, relay: _Relay) -> None:
        """onDisconnect and the hello timer: a relay that exits, closes stdout or never acks."""
        assert relay.protocol is not None and relay.transport is not None
        protocol = relay.protocol
        waits = [
            asyncio.ensure_future(protocol.exited.wait()),
            asyncio.ensure_future(protocol.stdout_closed.wait()),
        ]
        try:
            try:
                async with asyncio.timeout(HELLO_TIMEOUT_S):
                    while not relay.linked:
                        done, _ = await asyncio.wait(waits, timeout=0.05)
                        if done:
                            break
            except TimeoutError:
                self.problems.append(f"peer {self.index}: no hello.ack from relay {relay.pid}")
                relay.transport.kill()
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        await self._gone(relay)

    async def _gone(self, relay: _Relay) -> None:
        assert relay.transport is not None and relay.protocol is not None
        relay.linked = False
        if relay is self.relay and not self._closing:
            # background.js endOpenTurns: the port dropped, so a chat.send it carried may have
            # died in the relay's pipe; the worker ends each open turn (by turnId) itself.
            for sid in self.session_ids:
                rec = self.recorder.open.get(sid)
                if rec is not None:
                    self.recorder.ended(sid, "chat.error", "CONNECTION_LOST", rec.turn_id)
        if relay.transport.get_returncode() is None and not self._closing:
            # stdout closed but the process lingers: Chrome would drop the port; so do we.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await relay.protocol.exited.wait()
            if relay.transport.get_returncode() is None:
                relay.transport.kill()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await relay.protocol.exited.wait()
        relay.transport.close()
        if self._closing or relay is not self.relay:
            return
        if not relay.killed:
            self.unplanned_exits += 1
            self.problems.append(
                f"peer {self.index}: relay {relay.pid} exited by itself "
                f"(code {relay.transport.get_returncode()})"
            )
        for event in self.ready.values():
            event.clear()
        # native.js: an exponential, jittered, bounded backoff before the next connectNative.
        delay = min(2.0, 0.05 * 2**self._attempt) * (1 + self.rng.random())
        self._attempt += 1
        await asyncio.sleep(delay)
        await self._launch()

    def kill_relay(self) -> int | None:
        """SIGKILL the current relay process (only a linked one); returns its pid."""
        relay = self.relay
        if relay is None or not relay.linked or relay.transport is None:
            return None
        if relay.transport.get_returncode() is not None:
            return None
        relay.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(relay.pid, signal.SIGKILL)
        return relay.pid

    def _send(self, obj: dict[str, Any]) -> bool:
        """native.js ``send``: now when ready, else queued (the registrations go first)."""
        relay = self.relay
        if relay is not None and relay.linked:
            return relay.write(obj)
        if len(self.queue) >= QUEUE_LIMIT:
            self._dropped(obj)
            return False
        self.queue.append(obj)
        return True

    def _dropped(self, obj: dict[str, Any]) -> None:
        """background.js ``handleDrop``: a chat.send that cannot be sent still ends."""
        if obj.get("type") == "chat.send":
            turn = obj.get("turnId")
            self.recorder.ended(
                str(obj.get("sessionId")),
                "chat.error",
                "CONNECTION_LOST",
                turn if isinstance(turn, str) else None,
            )

    # -- what the relay sends -------------------------------------------------------------------

    def _on_frame(self, relay: _Relay, payload: bytes) -> None:
        if relay is not self.relay:
            return
        try:
            msg = orjson.loads(payload)
            if isinstance(msg, dict):
                self._dispatch(relay, msg)
        except Exception as exc:  # a bad frame is a finding, not a crash of the harness
            self.problems.append(f"peer {self.index}: bad frame from the relay: {exc}")

    def _dispatch(self, relay: _Relay, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "hello.ack":
            if relay.linked:
                return
            relay.linked = True
            self._attempt = 0
            # On ready: every live session.start, then what was queued (background.js).
            for s in self.session_ids:
                relay.write(
                    {"type": "session.start", "sessionId": s, "capabilities": ["cdp.activeTab"]}
                )
            queued, self.queue = self.queue, []
            for obj in queued:
                if not relay.write(obj):
                    self._dropped(obj)
        elif kind == "ping":
            relay.write({"type": "pong", "id": msg.get("id")})
        elif kind in HOST_REQUESTS:
            self._spawn(self._answer(relay, msg))
        elif kind == "error":
            self.errors[str(msg.get("code"))] += 1
        else:
            to_panels(msg, self.recorder, self.ready, self._send)

    async def _answer(self, relay: _Relay, msg: dict[str, Any]) -> None:
        rec, ok, value = self.browser.execute(msg)
        # Call ids are per daemon connection: the relay's port and the daemon that asked.
        rec.link = f"{self.index}/{relay.generation}/{self.daemon_pid()}"
        answer: dict[str, Any] = {
            "type": "tool.result",
            "sessionId": rec.session_id,
            "callId": rec.call_id,
            "ok": ok,
        }
        answer["result" if ok else "error"] = value
        await asyncio.sleep(self.rng.uniform(0.0, 0.02))
        # The port the command came on is gone: its answer cannot reach the host (the worker's
        # CdpExecutor fails commands of a lost connection instead of sending them on a new one).
        if relay is not self.relay or not relay.linked:
            rec.delivered = False
            return
        rec.delivered = None if relay.write(answer) else False

    # -- the panels -----------------------------------------------------------------------------

    async def wait_ready(self, session_id: str, timeout: float) -> bool:
        try:
            async with asyncio.timeout(timeout):
                await self.ready[session_id].wait()
        except TimeoutError:
            return False
        return True

    def send_chat(self, session_id: str, number: int, text: str) -> TurnRecord:
        turn_id = f"{session_id}-t{number:04d}"
        rec = self.recorder.sent(session_id, turn_id, number)
        self._send({"type": "chat.send", "sessionId": session_id, "text": text, "turnId": turn_id})
        return rec

    # -- the end --------------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Close the port (EOF on the relay's stdin: it exits), then make sure it is gone."""
        self._closing = True
        relay = self.relay
        if relay is not None and relay.transport is not None and relay.protocol is not None:
            pipe = relay.transport.get_pipe_transport(0)
            if pipe is not None:
                pipe.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5.0):
                    await relay.protocol.exited.wait()
            if relay.transport.get_returncode() is None:
                self.problems.append(f"peer {self.index}: relay {relay.pid} ignored EOF")
                relay.transport.kill()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5.0):
                        await relay.protocol.exited.wait()
            relay.transport.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class _ProcessRun(_Run):
    """One process-mode run (see the module docstring)."""

    def __init__(self, opts: ChaosOptions, home: Path) -> None:
        super().__init__(opts, home)
        self.process_peers: list[ProcessPeer] = []
        self.daemon_pids: list[int] = []
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
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(
            "[model]\n"
            f'base_url = "{base_url}"\n'
            'model = "chaos-model"\n'
            'api_key = "sk-chaos"\n'
            "request_timeout = 5\n"
            "[daemon]\n"
            "idle_exit_seconds = 0\n"
            f"turn_concurrency = {min(64, max(4, self.opts.sessions))}\n"
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
        try:
            return int(pid_path(self.home).read_text().strip())
        except (OSError, ValueError):
            return None

    async def _watch_daemon(self) -> None:
        """Record every daemon pid this home's pid file names (to check and clean up later)."""
        while True:
            pid = self._daemon_pid()
            if pid is not None and pid not in self.daemon_pids and pid_alive(pid):
                self.daemon_pids.append(pid)
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
        if "nativehost.daemon" not in _cmdline(pid):
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
        try:
            await self._start()
            sessions = [asyncio.ensure_future(self._session(s)) for s in self.session_peer]
            faults = asyncio.ensure_future(self._faults())
            await asyncio.sleep(min(3.0, 0.15 * self.opts.duration))
            warm = self._daemon_usage()
            harness_fds = (_harness_fds(), 0)
            await asyncio.gather(*sessions)
            faults.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await faults
            await asyncio.sleep(1.0)  # late extra ends, if any, arrive now
            # The daemon at the end, against the one warmed up (a restarted one starts lower).
            end = self._daemon_usage()
            report.fds = (warm[0], end[0])
            report.rss = (warm[1], end[1])
        finally:
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
            if pid_alive(pid) and "nativehost.daemon" in _cmdline(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        await _until(lambda: not any(pid_alive(p) for p in self.daemon_pids), 10.0)
        leftover = []
        for pid in self.daemon_pids:
            if pid_alive(pid) and "nativehost.daemon" in _cmdline(pid):
                leftover.append(f"daemon {pid} did not stop on SIGTERM")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for peer in self.process_peers:
            for pid in peer.relay_pids:
                if pid_alive(pid) and "nativehost.relay" in _cmdline(pid):
                    leftover.append(f"relay {pid} of peer {peer.index} still runs")
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        # A process of this home that no pid file or port recorded (e.g. a second daemon).
        known = set(self.daemon_pids) | {p for peer in self.process_peers for p in peer.relay_pids}
        leftover += [
            f"unrecorded daemon {pid} of this home" for pid in _home_daemons(self.home, known)
        ]
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


def _home_daemons(home: Path, known: set[int]) -> list[int]:
    """Daemons of *home* that no pid file recorded (e.g. a second one), from /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.isdigit() and int(entry) not in known:
            line = _cmdline(int(entry))
            if "nativehost.daemon" in line and f"--home {home}" in line and pid_alive(int(entry)):
                found.append(int(entry))
    return found


def _harness_fds() -> int:
    return _proc_fds(os.getpid())


async def run_process_chaos(opts: ChaosOptions) -> ChaosReport:
    """Run one process-mode chaos run and check its invariants (see the module docstring)."""
    if opts.home is not None:
        return await _ProcessRun(opts, opts.home.absolute()).run()
    # A short path: the daemon's socket lives under BROWY_HOME/run when the path is short enough.
    with tempfile.TemporaryDirectory(prefix="browy-chaos-") as tmp:
        return await _ProcessRun(opts, Path(tmp) / "home").run()
