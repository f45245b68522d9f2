"""The relay Chrome starts: cold start and added round-trip latency, against same-run baselines.

Everything runs against a real daemon in a temporary ``BROWY_HOME`` (``[daemon]
idle_exit_seconds = 30``), started before the first figure and stopped at the end.

- Cold start: from spawning ``python -m nativehost.relay.main <origin>`` (with the ``hello`` frame
  written at once, as Chrome queues ``postMessage``) to reading ``hello.ack``, daemon already
  running; N runs, median and p90. Baselines, interleaved with the relay runs: ``python -c pass``,
  ``python -c "import asyncio, orjson, msgpack"`` and ``python -c "import <the relay's modules>"``
  (which splits imports from the rest), each from spawn to a byte it writes once its code has run
  (no interpreter teardown, like the relay's figure). Goal: median <= 100 ms.
- Import time of the relay's start-up modules (``python -X importtime``), top 5 cumulative.
- Round trips: ``ping`` -> ``pong`` through relay and daemon, sequential, after a warm-up, against
  a pipe echo process with the same framing (read a frame, write it back); and straight to the
  daemon over the link (``open_link`` as role ``relay``, ``LinkData``) to split relay from daemon
  cost. All three clients are the same asyncio loop in this process, so its overhead cancels out
  of the differences. Goal: the relay + link add <= 150 us to the median round trip.

Run: ``python -m bench relay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from actors.link.link_stream import LinkStream
from messages.link import LINK_MAX_FRAME, LinkData
from nativehost.daemon.process import start_daemon, stop_daemon
from nativehost.link import open_link
from nativehost.origins import OUR_EXTENSION_ID, origin_of

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent
ORIGIN = origin_of(OUR_EXTENSION_ID)
COLD_RUNS = 20
COLD_GOAL_MS = 80.0
COLD_GOAL_P90_MS = 100.0
#: The same goal against ``python -c "import asyncio, orjson, msgpack"`` in the same run.
COLD_GOAL_RATIO = 1.9
RTT_COUNT = 1_000
RTT_WARMUP = 200
RTT_GOAL_US = 150.0
#: The same goals as ratios to the pipe echo of the same run: relay + link added, the daemon's
#: own ping over the link.
RTT_GOAL_RATIO = 12.0
DAEMON_GOAL_RATIO = 3.0
IDLE_EXIT_S = 30
IMPORTTIME_REPEATS = 3
#: What the relay imports before it can answer ``hello``: its own module, then what ``main`` and
#: ``_serve`` import (origins, home, logger, framer, uplink, link, daemon for spawn_detached, the
#: backoff policy that drives the Uplink's connector).
RELAY_MODULES = (
    "nativehost.relay.main",
    "nativehost.home",
    "nativehost.origins",
    "actors.runtime.logger",
    "actors.relay.stdio_framer",
    "actors.relay.uplink",
    "nativehost.link",
    "nativehost.daemon.process",
    "actors.runtime.backoff",
)
BARE_IMPORTS = "import asyncio, orjson, msgpack"
#: Times every ``compile`` (dataclasses generate their methods with exec) while the relay's
#: modules import, after the bare imports; prints ``calls ms``.
COMPILE_PROBE = f"""\
import builtins, time
{BARE_IMPORTS}
spent = []
_compile = builtins.compile
def timed(*a, **k):
    t = time.perf_counter()
    try:
        return _compile(*a, **k)
    finally:
        spent.append(time.perf_counter() - t)
builtins.compile = timed
import {", ".join(RELAY_MODULES)}
print(len(spent), sum(spent) * 1e3)
"""
HELLO = orjson.dumps({"type": "hello", "client": "extension", "protocol": 1})

ECHO_SOURCE = """\
import sys
r = sys.stdin.buffer
w = sys.stdout.buffer
while True:
    h = r.read(4)
    if len(h) < 4:
        break
    w.write(h + r.read(int.from_bytes(h, "little")))
    w.flush()
"""


#: The link's transport without a daemon: accept one Unix-socket connection and send every
#: link frame straight back (blocking, like the pipe echo).
LINK_ECHO_SOURCE = """\
import socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(1)
sys.stdout.write("ready\\n")
sys.stdout.flush()
conn, _ = server.accept()
r = conn.makefile("rb")
while True:
    h = r.read(4)
    if len(h) < 4:
        break
    conn.sendall(h + r.read(int.from_bytes(h, "little")))
"""


def _frame(payload: bytes) -> bytes:
    return struct.pack("<I", len(payload)) + payload


# -- cold start (blocking pipes: nothing of ours runs between spawn and the answer) -------------


def _read_exactly(fd: int, n: int, deadline: float) -> bytes:
    buf = b""
    while len(buf) < n:
        left = deadline - time.perf_counter()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("no answer from the relay")
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError("the relay closed stdout")
        buf += chunk
    return buf


def _read_message(fd: int, deadline: float) -> dict[str, Any]:
    (length,) = struct.unpack("<I", _read_exactly(fd, 4, deadline))
    obj = orjson.loads(_read_exactly(fd, length, deadline))
    assert isinstance(obj, dict)
    return obj


def _relay_cold_start(env: dict[str, str]) -> float:
    """Seconds from spawning the relay to reading its ``hello.ack``."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nativehost.relay.main", ORIGIN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
        bufsize=0,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        os.write(proc.stdin.fileno(), _frame(HELLO))
        deadline = started + 15.0
        while _read_message(proc.stdout.fileno(), deadline).get("type") != "hello.ack":
            pass
        elapsed = time.perf_counter() - started
        proc.stdin.close()
        proc.wait(timeout=5.0)
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return elapsed


def _interpreter_start(env: dict[str, str], code: str) -> float:
    """Seconds from spawning ``python -c code`` to the byte it writes when *code* has run.

    Like the relay's figure, this stops before the interpreter's teardown.
    """
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", f"{code}\nimport os\nos.write(1, b'.')"],
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
        bufsize=0,
    )
    assert proc.stdout is not None
    try:
        _read_exactly(proc.stdout.fileno(), 1, started + 15.0)
        elapsed = time.perf_counter() - started
        proc.wait(timeout=5.0)
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return elapsed


def _pct(samples: list[float], q: int) -> float:
    """The *q*-th percentile (1..99) of *samples*."""
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


# -- import time ----------------------------------------------------------------------------------

_IMPORTTIME_RE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def _import_times(env: dict[str, str]) -> list[tuple[str, int, int, int]]:
    """(module, self us, cumulative us, depth) of the relay's imports, the fastest of a few runs.

    Only what the ``-c`` statement imports: rows up to the interpreter's own ``site`` are dropped.
    """
    best: list[tuple[str, int, int, int]] = []
    best_total = None
    code = "import " + ", ".join(RELAY_MODULES)
    for _ in range(IMPORTTIME_REPEATS):
        run = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        rows = [
            (m.group(4), int(m.group(1)), int(m.group(2)), (len(m.group(3)) - 1) // 2)
            for m in map(_IMPORTTIME_RE.match, run.stderr.splitlines())
            if m
        ]
        site = max((i for i, r in enumerate(rows) if r[0] == "site" and r[3] == 0), default=-1)
        rows = rows[site + 1 :]
        total = sum(r[1] for r in rows)
        if best_total is None or total < best_total:
            best, best_total = rows, total
    return best


def _compile_cost(env: dict[str, str]) -> tuple[int, float]:
    """(compile calls, ms spent compiling) while the relay's modules import."""
    run = subprocess.run(
        [sys.executable, "-c", COMPILE_PROBE],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    calls, ms = run.stdout.split()
    return int(calls), float(ms)


# -- round trips (one asyncio client for all three paths) -----------------------------------------


async def _pipe_round_trips(argv: list[str], env: dict[str, str], *, relay: bool) -> list[int]:
    """Nanoseconds per sequential ping round trip through a child process's stdin/stdout."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None

    async def recv() -> bytes:
        (length,) = struct.unpack("<I", await stdout.readexactly(4))
        return await stdout.readexactly(length)

    samples: list[int] = []
    try:
        async with asyncio.timeout(30.0):
            if relay:
                stdin.write(_frame(HELLO))
                await stdin.drain()
                while orjson.loads(await recv()).get("type") != "hello.ack":
                    pass
            for i in range(RTT_WARMUP + RTT_COUNT):
                payload = orjson.dumps({"type": "ping", "id": i})
                started = time.perf_counter_ns()
                stdin.write(_frame(payload))
                await stdin.drain()
                answer = await recv()
                elapsed = time.perf_counter_ns() - started
                if relay:
                    if orjson.loads(answer) != {"type": "pong", "id": i}:
                        raise AssertionError(f"expected pong {i}, got {answer!r}")
                elif answer != payload:
                    raise AssertionError(f"the echo returned {answer!r}")
                if i >= RTT_WARMUP:
                    samples.append(elapsed)
    finally:
        stdin.close()
        try:
            async with asyncio.timeout(5.0):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()
    return samples


async def _link_round_trips(home: Path) -> list[int]:
    """Nanoseconds per sequential ping round trip straight to the daemon over the link."""
    stream, _welcome = await open_link(home, role="relay", origin=ORIGIN, timeout=5.0)

    async def recv() -> bytes:
        while True:
            env = await stream.recv()
            if env is None:
                raise EOFError("the daemon closed the link")
            if isinstance(env, LinkData):
                return env.payload

    samples: list[int] = []
    try:
        async with asyncio.timeout(30.0):
            stream.send(LinkData(HELLO))
            await stream.drain()
            while orjson.loads(await recv()).get("type") != "hello.ack":
                pass
            for i in range(RTT_WARMUP + RTT_COUNT):
                payload = orjson.dumps({"type": "ping", "id": i})
                started = time.perf_counter_ns()
                stream.send(LinkData(payload))
                await stream.drain()
                answer = await recv()
                elapsed = time.perf_counter_ns() - started
                if orjson.loads(answer) != {"type": "pong", "id": i}:
                    raise AssertionError(f"expected pong {i}, got {answer!r}")
                if i >= RTT_WARMUP:
                    samples.append(elapsed)
    finally:
        stream.close()
        await stream.wait_closed()
    return samples


async def _link_echo_round_trips(home: Path, env: dict[str, str]) -> list[int]:
    """Nanoseconds per ping round trip over a Unix socket to a process echoing link frames."""
    path = home / "echo.sock"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LINK_ECHO_SOURCE, str(path), stdout=asyncio.subprocess.PIPE, env=env
    )
    assert proc.stdout is not None
    samples: list[int] = []
    try:
        async with asyncio.timeout(30.0):
            await proc.stdout.readline()
            reader, writer = await asyncio.open_unix_connection(str(path))
            stream = LinkStream(reader, writer, max_frame=LINK_MAX_FRAME)
            for i in range(RTT_WARMUP + RTT_COUNT):
                payload = orjson.dumps({"type": "ping", "id": i})
                started = time.perf_counter_ns()
                stream.send(LinkData(payload))
                await stream.drain()
                answer = await stream.recv()
                elapsed = time.perf_counter_ns() - started
                if answer != LinkData(payload):
                    raise AssertionError(f"the link echo returned {answer!r}")
                if i >= RTT_WARMUP:
                    samples.append(elapsed)
            stream.close()
            await stream.wait_closed()
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
    return samples


async def _all_round_trips(home: Path, env: dict[str, str]) -> dict[str, list[int]]:
    return {
        "pipe echo (baseline)": await _pipe_round_trips(
            [sys.executable, "-c", ECHO_SOURCE], env, relay=False
        ),
        "relay + daemon": await _pipe_round_trips(
            [sys.executable, "-m", "nativehost.relay.main", ORIGIN], env, relay=True
        ),
        "daemon over link": await _link_round_trips(home),
        "link echo (socket + link framing, no daemon)": await _link_echo_round_trips(home, env),
    }


# -- set-up ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def _daemon_home() -> Iterator[tuple[Path, dict[str, str]]]:
    """A temporary BROWY_HOME with a running daemon; the relay's environment. Cleans up."""
    home = Path(tempfile.mkdtemp(prefix="browy-bench-"))
    (home / "config.toml").write_text(f"[daemon]\nidle_exit_seconds = {IDLE_EXIT_S}\n")
    saved = dict(os.environ)
    # start_daemon passes os.environ. The daemon (started with cwd /) and the relays run this
    # checkout's code whatever the venv's path entry points at, and write their .pyc files, as
    # an installed Browy does (a PYTHONDONTWRITEBYTECODE shell would make every spawn compile).
    os.environ["BROWY_IDLE_EXIT_SECONDS"] = str(IDLE_EXIT_S)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), saved.get("PYTHONPATH", "")) if p
    )
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    env = dict(os.environ)
    env["BROWY_HOME"] = str(home)
    try:
        start_daemon(home, timeout=15.0)
        yield home, env
    finally:
        os.environ.clear()
        os.environ.update(saved)
        with contextlib.suppress(Exception):
            stop_daemon(home)
        shutil.rmtree(home, ignore_errors=True)


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> None:
    """Measure, print the tables, and say whether each goal is met."""
    with _daemon_home() as (home, env):
        # Warm the page cache and the .pyc files once, then interleave the three kinds of start.
        relay_imports = "import " + ", ".join(RELAY_MODULES)
        interpreters = {
            "python -c pass": "pass",
            f"python -c '{BARE_IMPORTS}'": BARE_IMPORTS,
            "python -c 'import <relay modules, below>'": relay_imports,
        }
        for code in interpreters.values():
            _interpreter_start(env, code)
        _relay_cold_start(env)
        starts: dict[str, list[float]] = {label: [] for label in interpreters}
        starts["relay to hello.ack"] = []
        for _ in range(COLD_RUNS):
            for label, code in interpreters.items():
                starts[label].append(_interpreter_start(env, code))
            starts["relay to hello.ack"].append(_relay_cold_start(env))
        imports = _import_times(env)
        compiles, compile_ms = _compile_cost(env)
        rtts = asyncio.run(_all_round_trips(home, env))

    relay_start = statistics.median(starts["relay to hello.ack"])
    print(f"cold start: {COLD_RUNS} runs each, interleaved, daemon running; ms")
    print(f"{'case':<46}{'median':>9}{'p90':>9}{'relay/x':>9}")
    for label, samples in starts.items():
        median = statistics.median(samples)
        print(
            f"{label:<46}{median * 1e3:>9.1f}{_pct(samples, 90) * 1e3:>9.1f}"
            f"{relay_start / median:>8.1f}x"
        )
    bare = statistics.median(starts[f"python -c '{BARE_IMPORTS}'"])
    imported = statistics.median(starts["python -c 'import <relay modules, below>'"])
    print(f"relay adds {(relay_start - bare) * 1e3:.1f} ms over python + asyncio/orjson/msgpack: "
          f"{(imported - bare) * 1e3:.1f} ms importing its modules, "
          f"{(relay_start - imported) * 1e3:.1f} ms logging set-up, link and hello")  # fmt: skip
    relay_p90 = _pct(starts["relay to hello.ack"], 90)
    absolute = relay_start * 1e3 <= COLD_GOAL_MS and relay_p90 * 1e3 <= COLD_GOAL_P90_MS
    ratio = relay_start / bare
    print(f"goal: relay cold start median <= {COLD_GOAL_MS:.0f} ms, p90 <= "
          f"{COLD_GOAL_P90_MS:.0f} ms: {_verdict(absolute)}; as a same-run ratio, median <= "
          f"{COLD_GOAL_RATIO}x the bare imports: {ratio:.2f}x, "
          f"{_verdict(ratio <= COLD_GOAL_RATIO)}")  # fmt: skip

    total = sum(r[1] for r in imports)
    print()
    print(f"python -X importtime -c 'import {', '.join(RELAY_MODULES)}'")
    print(f"{total / 1e3:.1f} ms in all (asyncio etc. included); after the bare imports, "
          f"{compile_ms:.1f} ms go to {compiles} compile() calls (sources without a .pyc, "
          "typing's forward references)")  # fmt: skip
    print(f"{'top 5 cumulative':<46}{'cum ms':>9}{'self ms':>9}{'depth':>9}")
    for name, self_us, cum_us, depth in sorted(imports, key=lambda r: -r[2])[:5]:
        print(f"{name:<46}{cum_us / 1e3:>9.1f}{self_us / 1e3:>9.1f}{depth:>9}")
    print(f"{'top 5 self':<46}{'cum ms':>9}{'self ms':>9}{'depth':>9}")
    for name, self_us, cum_us, depth in sorted(imports, key=lambda r: -r[1])[:5]:
        print(f"{name:<46}{cum_us / 1e3:>9.1f}{self_us / 1e3:>9.1f}{depth:>9}")

    base = rtts["pipe echo (baseline)"]
    print()
    print(f"round trips: {RTT_COUNT} sequential pings after {RTT_WARMUP} warm-up; us")
    print(f"{'path':<46}{'median':>9}{'p99':>9}{'x echo':>9}")
    for label, rtt in rtts.items():
        median = statistics.median(rtt) / 1e3
        print(
            f"{label:<46}{median:>9.1f}{_pct([s / 1e3 for s in rtt], 99):>9.1f}"
            f"{median / (statistics.median(base) / 1e3):>8.1f}x"
        )
    med = {label: statistics.median(rtt) / 1e3 for label, rtt in rtts.items()}
    echo = med["pipe echo (baseline)"]
    link_echo = med["link echo (socket + link framing, no daemon)"]
    daemon, relay = med["daemon over link"], med["relay + daemon"]
    added = relay - echo
    print("per hop, from the medians (each path minus the one it adds a hop to):")
    print(f"  socket + link framing instead of a pipe   {link_echo - echo:>7.1f} us")
    print(f"  the daemon answering ping                 {daemon - link_echo:>7.1f} us")
    print(f"  the relay (its pipes, the link, both ways) {relay - daemon:>7.1f} us")
    print(f"relay + link add {added:.1f} us to the median round trip ({added / echo:.1f}x the "
          f"echo); the daemon's ping over the link is {daemon / echo:.1f}x the echo")  # fmt: skip
    print(f"goal: added median <= {RTT_GOAL_US:.0f} us: {_verdict(added <= RTT_GOAL_US)}; as "
          f"same-run ratios, added <= {RTT_GOAL_RATIO:.0f}x the echo: "
          f"{_verdict(added / echo <= RTT_GOAL_RATIO)}, the daemon's ping <= "
          f"{DAEMON_GOAL_RATIO:.0f}x: {_verdict(daemon / echo <= DAEMON_GOAL_RATIO)}")  # fmt: skip


if __name__ == "__main__":
    main()
