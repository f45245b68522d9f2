"""Stopping is clean whatever the signal: ``browy demo --keep-open`` and ``browy run --launch``,
run as real processes and sent SIGTERM, SIGINT or SIGHUP, stop their Chromium (its own process
group), the relay, the servers and the private daemon — no process of the run is left."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/lib/chromium/chromium")
_MODEL_ENV = ("BROWY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]


@pytest.fixture(autouse=True)
def _needs_chromium() -> None:
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"{CHROMIUM} is not installed")


def processes_of(root: Path, *, besides: frozenset[int] = frozenset()) -> dict[int, str]:
    """Live processes (zombies aside) whose command line or environment names *root*: the
    Chromium (profile, TMPDIR), its helpers, the relay and the daemon (BROWY_HOME)."""
    needle = str(root).encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in besides | {os.getpid()}:
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except (OSError, IndexError):
            continue
        if state != "Z" and (needle in cmdline or needle in environ):
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")[:160]
    return found


class Lines:
    """A child's merged stdout and stderr, read on a thread; :meth:`wait_for` a line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        assert proc.stdout is not None
        stream = proc.stdout

        def pump() -> None:
            with stream:
                for line in stream:
                    self._queue.put(line)
            self._queue.put(None)

        self._thread = threading.Thread(target=pump, daemon=True)
        self._thread.start()

    def wait_for(self, needle: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if needle in line:
                return line
        raise AssertionError(f"no {needle!r} in:\n{''.join(self.seen)}")

    def rest(self, timeout: float = 5.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                break
            self.seen.append(line)
        self._thread.join(timeout)  # it closes the pipe at its end
        return "".join(self.seen)


@pytest.fixture
def root() -> Iterator[Path]:
    """A short folder of the test's own (Chromium refuses a profile socket path over 107
    bytes, so not pytest's deep tmp_path)."""
    path = Path(tempfile.mkdtemp(prefix="bstop-", dir="/tmp"))
    yield path
    # A failed test must not leave its Chromium behind either: what is still running of this
    # run (found by pid, never by name) is killed before the folder goes.
    for pid in processes_of(path):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def env(root: Path) -> dict[str, str]:
    """Everything the run makes lives under *root*: its temporary folders (TMPDIR), the
    demo's home (XDG_CACHE_HOME), the user's BROWY_HOME."""
    (root / "tmp").mkdir()
    environ = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV}
    environ.update(
        TMPDIR=str(root / "tmp"),
        XDG_CACHE_HOME=str(root / "cache"),
        BROWY_HOME=str(root / "user-home"),
        BROWY_CHROMIUM=str(CHROMIUM),
        PYTHONUNBUFFERED="1",
    )
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "NO_COLOR"):
        environ.pop(var, None)
    return environ


def browy(env: dict[str, str], *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nativehost.cli.main", *argv],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # as from a shell: its own group, apart from pytest's
    )


def assert_nothing_left(root: Path, text: str, besides: frozenset[int] = frozenset()) -> None:
    deadline = time.monotonic() + 15
    while processes_of(root, besides=besides) and time.monotonic() < deadline:
        time.sleep(0.2)  # polling /proc: the kernel has no event for "a stranger exited"
    left = processes_of(root, besides=besides)
    assert not left, f"left running: {left}\n--- output ---\n{text}"


def _kinds(found: dict[int, str]) -> set[str]:
    kinds = set()
    for cmd in found.values():
        if "chromium" in cmd and "--user-data-dir" in cmd:
            kinds.add("chromium")
        if "nativehost.daemon.process" in cmd:
            kinds.add("daemon")
        if "nativehost.relay.main" in cmd:
            kinds.add("relay")
    return kinds


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_demo_keep_open_stops_everything_on_a_signal(
    root: Path, env: dict[str, str], sig: signal.Signals
) -> None:
    proc = browy(env, "demo", "--scripted", "--keep-open", "--no-panel")
    lines = Lines(proc)
    try:
        lines.wait_for("--keep-open: the browser stays up", timeout=90)
        running = processes_of(root, besides=frozenset({proc.pid}))
        assert {"chromium", "daemon", "relay"} <= _kinds(running), running
        os.kill(proc.pid, sig)
        code = proc.wait(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = lines.rest()
    assert code == 0, text  # the expected way out of --keep-open; the demo itself succeeded
    assert "demo succeeded" in text
    assert_nothing_left(root, text)


@pytest.fixture
def hanging_model(root: Path, env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """The scripted model server as a process: one tool call, then an answer that starts and
    never finishes (the turn is in progress when the signal comes)."""
    script = root / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "get_page_info", "arguments": {}}]},
                {"text": "Looking at it", "fault": {"kind": "hang", "after_chunks": 2}},
            ]
        )
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "nativehost.demo.model_server", "--script", str(script)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    base_url = server.stdout.readline().strip()
    assert base_url.startswith("http://127.0.0.1:"), base_url
    try:
        yield base_url, server.pid
    finally:
        server.terminate()
        server.wait(timeout=10)
        server.stdout.close()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_run_launch_stops_everything_on_a_signal_mid_turn(
    root: Path, env: dict[str, str], hanging_model: tuple[str, int], sig: signal.Signals
) -> None:
    base_url, server_pid = hanging_model
    user_home = Path(env["BROWY_HOME"])
    user_home.mkdir()
    (user_home / "config.toml").write_text(
        f'[model]\nbase_url = "{base_url}"\nmodel = "scripted"\napi_key = "sk-test"\n'
        '[tools]\napproval_mode = "never"\n'
    )
    proc = browy(env, "run", "--launch", "what is on the page?")
    lines = Lines(proc)
    besides = frozenset({proc.pid, server_pid})
    try:
        # get_page_info ran: the turn goes on, and the model's next answer never ends.
        lines.wait_for("✓ ok", timeout=90)
        running = processes_of(root, besides=besides)
        assert {"chromium", "daemon", "relay"} <= _kinds(running), running
        os.kill(proc.pid, sig)
        code = proc.wait(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = lines.rest()
    # Ctrl-C during a turn cancels the turn (exit 1); SIGTERM and SIGHUP stop the command.
    assert code == {signal.SIGINT: 1, signal.SIGTERM: 143, signal.SIGHUP: 129}[sig], text
    assert "Traceback" not in text
    assert_nothing_left(root, text, besides=frozenset({server_pid}))
    assert not list((root / "tmp").glob("browy-run-*")), "the private home was not removed"
