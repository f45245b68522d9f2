"""One browser call through the real extension: the tool path's round trip, against baselines.

Everything runs in this process's event loop: the daemon
(:class:`nativehost.daemon.server.DaemonServer` on a temporary ``BROWY_HOME``), and the callers. A
headless Chromium loads the extension, whose native host is the real relay for that home; the relay
links to this daemon. The calls go out through the browser connection's own
:class:`actors.browser.cdp_proxy.CDPProxy` — exactly what a tool does — so each one crosses daemon
-> relay -> service worker -> (chrome.debugger) -> back.

Three paths, 1,000 sequential calls each after a warm-up, in interleaved blocks of 100 (so drift
hits all three alike), median and p99:

- ``cdp.send Runtime.evaluate("1+1")``: the full tool path, through ``chrome.debugger``;
- ``tab.list``: the bare extension path, the same hops but answered by ``chrome.tabs.query``
  without the debugger;
- ``Runtime.evaluate("1+1")`` straight over the browser's DevTools websocket (no extension).

Then, inside the service worker (over its DevTools target), 300 ``chrome.tabs.query`` and 300
``chrome.debugger.sendCommand(Runtime.evaluate)`` in a row: what the two paths end in, without our
code. Their difference is chrome.debugger's own cost (the hop to the page's renderer), which no
change of ours removes; the rest of the tool path's extra over the bare path is ours. The same
again with a 1 ms pause before each call (only the calls timed), as on the full path, where the
relay and the daemon run between two calls and the renderer may go idle: a tight loop keeps it
warm and may read chrome.debugger's cost low.

Goal: the tool path's median within 1.2x of the bare extension path's. Also printed: the same 20%
budget applied to our share alone (the extra less chrome.debugger's own cost), which is all a
host can change.

Run: ``python -m bench extension`` (about 15-30 s; needs /usr/lib/chromium/chromium).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
EXTENSION_DIR = REPO_ROOT / "extension"
CHROMIUM = Path("/usr/lib/chromium/chromium")
CALLS = 1000
BLOCK = 100
WARMUP = 100
GOAL_RATIO = 1.2
SESSION = "bench-extension"

_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
    "--remote-debugging-port=0",
)


#: Timed inside the service worker (its clock is coarse, so N calls in a row): the two Chrome
#: calls that the tool path and the bare path end in, without our code around them.
_IN_WORKER = """(async () => {
  const tabId = %d, n = 300, out = {};
  const time = async (name, fn) => {
    for (let i = 0; i < 30; i++) await fn();
    const t = performance.now();
    for (let i = 0; i < n; i++) await fn();
    out[name] = (performance.now() - t) / n;
  };
  const query = () => chrome.tabs.query({});
  const evaluate = () => chrome.debugger.sendCommand(
    {tabId}, 'Runtime.evaluate', {expression: '1+1', returnByValue: true});
  await time('chrome.tabs.query', query);
  await time('chrome.debugger.sendCommand Runtime.evaluate', evaluate);
  // The same with a 1 ms pause before each call, as on the full path (where the relay and the
  // daemon run between two calls, and the page's renderer may go idle); only the calls are timed.
  // The clock is coarse, but a call starts at a random phase of its tick: the sum stays fair.
  const paused = async (name, fn) => {
    let total = 0;
    for (let i = 0; i < 30 + n; i++) {
      await new Promise((done) => setTimeout(done, 1));
      const t = performance.now();
      await fn();
      if (i >= 30) total += performance.now() - t;
    }
    out[name] = total / n;
  };
  await paused('chrome.tabs.query after a pause', query);
  await paused('chrome.debugger.sendCommand Runtime.evaluate after a pause', evaluate);
  return JSON.stringify(out);
})()"""


async def _wait(probe: Callable[[], Any], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)  # poll interval of a deadline-bounded wait


def _python() -> str:
    venv = REPO_ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


class _Ws:
    """A bare CDP client on one page target's websocket."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = itertools.count(1)

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        n = next(self.ids)
        await self.ws.send(json.dumps({"id": n, "method": method, "params": params}))
        while True:
            msg = json.loads(await self.ws.recv())
            if msg.get("id") == n:
                return msg


async def _measure(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t0)
    return out


def _p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[98]


def _start_chromium(profile: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Chromium in its own session (the relay is its child: cleaned up by process group)."""
    return subprocess.Popen(
        [
            str(CHROMIUM),
            *_ARGS,
            f"--user-data-dir={profile}",
            f"--load-extension={EXTENSION_DIR}",
            f"--disable-extensions-except={EXTENSION_DIR}",
            "about:blank",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _json_list(port: int) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
        targets: list[dict[str, Any]] = json.loads(resp.read())
    return targets


async def _run(root: Path) -> dict[str, list[float]]:
    import websockets

    from nativehost.config import load_config
    from nativehost.daemon.server import DaemonServer
    from nativehost.setup.install import install_host
    from nativehost.setup.platforms import Platform

    home, profile = root / "home", root / "profile"
    home.mkdir()
    profile.mkdir()
    install_host(
        Platform.current(),
        home=home,
        target_dirs=[profile / "NativeMessagingHosts"],
        launcher_dir=home / "bin",
        python=_python(),
    )
    server = DaemonServer(home, load_config(home, env={}), version="bench")
    serving = asyncio.ensure_future(server.serve())
    env = dict(os.environ, BROWY_HOME=str(home))
    browser = _start_chromium(profile, env)
    try:
        # The extension's v2 connection (after hello), through the relay Chrome started.
        def browser_link() -> Any:
            for link in server.agent.links.all():
                if link.is_browser and link.info.protocol >= 2:
                    return link
            return None

        link = await _wait(browser_link, timeout=30, what="the extension's link")
        proxy = link.calls  # what a tool's calls go through: the link's CDPProxy

        async def tab_list() -> Any:
            return await proxy.tab(SESSION, "tab.list", timeout=10, owner_id=None)

        tabs = await tab_list()
        tab = next(t for t in tabs if t["url"] == "about:blank")
        tab_id = int(tab["tabId"])

        async def via_extension() -> Any:
            result = await proxy.cdp(
                SESSION,
                tab_id,
                "Runtime.evaluate",
                {"expression": "1+1", "returnByValue": True},
                page_changing=False,
                timeout=10,
                owner_id=None,
            )
            assert result["result"]["value"] == 2, result
            return result

        port = int((profile / "DevToolsActivePort").read_text().split()[0])
        targets = await asyncio.to_thread(_json_list, port)
        page = next(t for t in targets if t["type"] == "page" and t["url"] == "about:blank")
        async with websockets.connect(page["webSocketDebuggerUrl"], max_size=None) as raw:
            ws = _Ws(raw)

            async def direct() -> Any:
                answer = await ws.call(
                    "Runtime.evaluate", {"expression": "1+1", "returnByValue": True}
                )
                assert answer["result"]["result"]["value"] == 2, answer
                return answer

            paths: dict[str, Callable[[], Awaitable[Any]]] = {
                "tool path: cdp.send Runtime.evaluate via chrome.debugger": via_extension,
                "bare extension path: tab.list (no debugger)": tab_list,
                "direct CDP websocket: Runtime.evaluate": direct,
            }
            for fn in paths.values():
                await _measure(fn, WARMUP)
            times: dict[str, list[float]] = {name: [] for name in paths}
            for _ in range(CALLS // BLOCK):
                for name, fn in paths.items():
                    times[name] += await _measure(fn, BLOCK)
        worker = next(t for t in targets if t["type"] == "service_worker")
        async with websockets.connect(worker["webSocketDebuggerUrl"], max_size=None) as raw:
            probe = await _Ws(raw).call(
                "Runtime.evaluate",
                {"expression": _IN_WORKER % tab_id, "awaitPromise": True, "returnByValue": True},
            )
        for name, ms in json.loads(probe["result"]["result"]["value"]).items():
            times[f"in the worker: {name}"] = [ms / 1e3]
        return times
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(browser.pid, signal.SIGTERM)
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(browser.pid, signal.SIGKILL)
            browser.wait(timeout=10)
        server._stop.set()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await serving


def main() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        print(f"skipped: {CHROMIUM} is not installed")
        return
    root = Path(tempfile.mkdtemp(prefix="browy-bench-ext-"))
    started = time.monotonic()
    try:
        times = asyncio.run(_run(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    names = list(times)
    bare = statistics.median(times[names[1]])
    print(f"{CALLS} sequential calls per path, interleaved in blocks of {BLOCK}")
    print(f"{'path':<58} {'median ms':>10} {'p99 ms':>8} {'x bare':>7}")
    for name in names:
        xs = times[name]
        med = statistics.median(xs)
        p99 = f"{_p99(xs) * 1e3:>8.3f}" if len(xs) > 1 else f"{'-':>8}"
        print(f"{name:<58} {med * 1e3:>10.3f} {p99} {med / bare:>7.2f}")
    ratio = statistics.median(times[names[0]]) / bare
    verdict = "met" if ratio <= GOAL_RATIO else "NOT met"
    floor = (
        times["in the worker: chrome.debugger.sendCommand Runtime.evaluate"][0]
        - times["in the worker: chrome.tabs.query"][0]
    )
    paused = (
        times["in the worker: chrome.debugger.sendCommand Runtime.evaluate after a pause"][0]
        - times["in the worker: chrome.tabs.query after a pause"][0]
    )
    extra = statistics.median(times[names[0]]) - bare
    print(
        f"the tool path's extra {extra * 1e3:.3f} ms: chrome.debugger's own "
        f"{floor * 1e3:.3f} ms over chrome.tabs.query (in the worker) + "
        f"{(extra - floor) * 1e3:.3f} ms of ours; with ours at 0 the ratio would be "
        f"{(bare + floor) / bare:.2f}x"
    )
    print(
        f"with a 1 ms pause before each call (the renderer idle between calls, as on the full "
        f"path): chrome.debugger's own {paused * 1e3:.3f} ms, ours "
        f"{(extra - paused) * 1e3:.3f} ms; with ours at 0 the ratio would be "
        f"{(bare + paused) / bare:.2f}x"
    )
    floor = paused  # the restated goal: chrome.debugger's cost as the full path meets it
    print(
        f"goal: tool path median <= {GOAL_RATIO}x the bare extension path: {verdict} "
        f"({ratio:.2f}x); took {time.monotonic() - started:.1f} s"
    )
    # The goal as stated compares a renderer round trip with a browser-process one: when
    # chrome.debugger's own cost alone is over 20% of the bare path, no host can meet it. The
    # same 20% budget applied to what is ours (the README's table says why):
    ours = (extra - floor) / bare
    print(
        f"restated: our share of the extra <= {GOAL_RATIO - 1:.0%} of the bare path: "
        f"{'met' if ours <= GOAL_RATIO - 1 else 'NOT met'} ({ours:.0%})"
    )


if __name__ == "__main__":
    main()
