"""The daemon SIGKILLed mid-turn: how long until the same native port has a working turn again.

A real relay (``python -m nativehost.relay.main``, pipes as Chrome gives them) on a temporary
``BROWY_HOME`` whose model is the scripted model server (in this process, real HTTP). The panel
(protocol 2, one session, no tab) starts a turn whose model call hangs; once the model has the
request, the daemon is SIGKILLed. From then on the panel sends a ``chat.send`` as soon as the
previous one is answered (10 ms after the relay's own end, ``CONNECTION_LOST``, which each
gets while the relay relinks); the first one that a daemon starts (``event.activity
status.thinking``) is "a new turn accepted", and its ``chat.done`` follows.

Two cases, ``ROUNDS`` kills each, interleaved:

- with a standby (the default, :mod:`nativehost.daemon.standby`): the daemon started one when
  its first relay linked; the bench waits until it is ready (its pid file) before each kill;
- without one (``BROWY_DAEMON_STANDBY=0``), the baseline measured in the same run: the relay's
  backoff starts a new daemon, which pays its whole start-up.

Also printed: the relay's reconnect steps (its log) and the daemon's start-up, spawn to serving
(the time a cold daemon costs). Goal: a new turn accepted <= 0.5 s after the kill, with a
standby. Run: ``python -m bench restart`` (about 20-30 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from nativehost.daemon.instance import is_running, read_pid
from nativehost.daemon.standby import standby_pid_path
from nativehost.demo.model_server import ScriptedModelServer
from tests.helpers.native_peer import RelayPeer

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5
GOAL_S = 0.5
#: The pause before the next chat.send when the relay ended one (the figures' resolution).
RETRY_S = 0.01
SESSION = "bench-restart"
HANG = {"fault": {"kind": "hang"}}
BACK = {"text": "back"}


async def _wait(predicate: Any, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)  # a deadline-bounded poll of another process's state


async def _until_event(peer: RelayPeer, event: str) -> None:
    """Read the session's frames up to its ``event.activity`` *event*."""
    while True:
        msg, _ = await peer.recv_until("event.activity", session_id=SESSION, timeout=20.0)
        if msg.get("event") == event:
            return


async def _turn_until_accepted(peer: RelayPeer, n: int) -> bool:
    """Send chat.send ``t<n>``; True when a daemon started it, False when the relay ended it."""
    turn = f"t{n}"
    await peer.send({"type": "chat.send", "sessionId": SESSION, "text": turn, "turnId": turn})
    while True:
        msg = await peer.recv(timeout=20.0)
        if msg.get("sessionId") != SESSION:
            continue
        if msg.get("type") == "chat.error":
            # This turn's end from the relay, or the cut turn's: its status.error follows.
            await peer.recv_until("event.activity", session_id=SESSION, timeout=20.0)
            if msg.get("turnId") == turn:
                return False
        elif msg.get("type") == "event.activity" and msg.get("event") == "status.thinking":
            return True  # the only turn in flight: this one


async def _one_kill(
    peer: RelayPeer, home: Path, model: ScriptedModelServer, n: int
) -> tuple[float, float, int]:
    """Kill the daemon mid-turn; (s to a new turn accepted, s to its chat.done, relay ends)."""
    model.extend([HANG, BACK])
    asked = model.request_count
    await peer.send({"type": "chat.send", "sessionId": SESSION, "text": "hang", "turnId": f"h{n}"})
    await _until_event(peer, "status.thinking")
    await _wait(lambda: model.request_count > asked, timeout=20, what="the model request")
    pid = read_pid(home)
    assert pid is not None
    killed = time.perf_counter()
    os.kill(pid, signal.SIGKILL)
    ends = 0
    while not await _turn_until_accepted(peer, n + ends):
        ends += 1
        await asyncio.sleep(RETRY_S)  # as a user's retry would, without hogging a core
    accepted_s = time.perf_counter() - killed
    await peer.recv_until("chat.done", session_id=SESSION, timeout=20.0)
    done_s = time.perf_counter() - killed
    await _until_event(peer, "status.idle")
    return accepted_s, done_s, ends


async def _case(root: Path, standby: bool) -> dict[str, list[float]]:
    home = root / ("standby" if standby else "cold")
    home.mkdir()
    out: dict[str, list[float]] = {"accepted": [], "done": [], "relay ends": [], "ready": []}
    async with ScriptedModelServer([]) as model:
        (home / "config.toml").write_text(
            f'[model]\nbase_url = "{model.base_url}"\nmodel = "m"\napi_key = "sk-bench"\n'
        )
        env = {"BROWY_DAEMON_STANDBY": "1" if standby else "0", "BROWY_IDLE_EXIT_SECONDS": "30"}
        peer = await RelayPeer.start(home, **env)
        try:
            await peer.send(
                {"type": "hello", "client": "extension", "protocol": 2, "installId": "bench",
                 "extensionVersion": "0.1.0", "capabilities": []}
            )  # fmt: skip
            await peer.recv_until("hello.ack", timeout=30.0)
            await peer.send({"type": "session.start", "sessionId": SESSION, "capabilities": []})
            await peer.recv_until("models.list", timeout=30.0)
            for n in range(ROUNDS):
                if standby:
                    started = time.perf_counter()
                    await _wait(lambda: standby_pid_path(home).exists(), timeout=30, what="standby")
                    out["ready"].append(time.perf_counter() - started)
                accepted, done, ends = await _one_kill(peer, home, model, n * 100)
                out["accepted"].append(accepted)
                out["done"].append(done)
                out["relay ends"].append(float(ends))
        finally:
            await peer.kill()
            pid = read_pid(home)
            if pid is not None and is_running(home):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await _wait(lambda: not is_running(home), timeout=10, what="the daemon's exit")
    return out


async def _run(root: Path) -> dict[str, dict[str, list[float]]]:
    return {"cold start (no standby)": await _case(root, False), "standby": await _case(root, True)}


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="browy-bench-restart-"))
    saved = os.environ.get("PYTHONPATH")
    # The relay and the daemons it starts run this checkout's code, wherever the venv points.
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + saved if saved else "")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: .pyc files are written
    try:
        results = asyncio.run(_run(root))
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
        shutil.rmtree(root, ignore_errors=True)
    print(f"daemon SIGKILLed mid-turn, {ROUNDS} times per case; s from the kill")
    print(f"{'case':<28}{'new turn accepted':>20}{'max':>8}{'its chat.done':>16}{'relay ends':>12}")
    for case, r in results.items():
        print(
            f"{case:<28}{statistics.median(r['accepted']):>20.3f}{max(r['accepted']):>8.3f}"
            f"{statistics.median(r['done']):>16.3f}{statistics.median(r['relay ends']):>12.0f}"
        )
    ready = results["standby"]["ready"]
    print(f"the standby was ready {statistics.median(ready):.2f} s (median) after the round began")
    cold = statistics.median(results["cold start (no standby)"]["accepted"])
    fast = statistics.median(results["standby"]["accepted"])
    print(f"standby / cold start: {fast / cold:.2f}x")
    print(f"goal: a new turn accepted <= {GOAL_S} s after the kill (median, standby): "
          f"{'met' if fast <= GOAL_S else 'NOT met'}")  # fmt: skip


if __name__ == "__main__":
    main()
