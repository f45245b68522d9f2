"""One tool call through ``browy mcp`` against the same call on the daemon's own tool path.

The real :class:`nativehost.daemon.server.DaemonServer` runs in this process on a temporary
``BROWY_HOME`` (``tests.helpers.daemon_harness.DaemonHarness``, ``allow_local_clients`` on,
approvals off); a ``LinkPeer`` plays the browser connection (protocol 2, a side panel open) and
answers ``tab.list`` at once, so what is measured is Browy's own path, not a page's.

Two paths, ``CALLS`` sequential ``list_tabs`` calls each after a warm-up, in interleaved blocks
(drift hits both alike), median and p99:

- **daemon tool path**: ``tool.call`` on a local client's link
  (:class:`nativehost.mcp.daemon_session.DaemonSession`): a turn without the model — queued,
  journaled, run by the ToolWorker, the browser request over the relay link, the result back;
- **MCP**: the same call by the MCP SDK's own client (``ClientSession.call_tool``) to a real
  ``browy mcp`` process over stdio, which checks the arguments against the schema and makes the
  same ``tool.call``.

Goal: MCP adds at most 1 ms to the median. Run: ``python -m bench mcp`` (about 15 s).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client, types

from nativehost.mcp.daemon_session import DaemonSession
from tests.helpers.daemon_harness import DaemonHarness, FakeTab

__all__ = ["main"]

CALLS = 600
BLOCK = 50
WARMUP = 60
GOAL_MS = 1.0
CONFIG = 'allow_local_clients = true\n[tools]\napproval_mode = "never"\n'


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _timed(call: Callable[[], Awaitable[Any]], n: int, out: list[float]) -> None:
    for _ in range(n):
        start = time.perf_counter()
        await call()
        out.append((time.perf_counter() - start) * 1000)


async def _run() -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="browy-bench-mcp-") as tmp:
        home = Path(tmp) / "home"
        async with DaemonHarness(home, {"steps": []}, config=CONFIG) as harness:
            peer = await harness.peer(FakeTab())
            await peer.hello(protocol=2)
            await peer.start("sp-bench", tabs=True)

            direct = DaemonSession(home, client_name="bench-direct")
            params = StdioServerParameters(
                command=str(Path(sys.executable).with_name("browy")),
                args=["mcp"],
                env={**os.environ, "BROWY_HOME": str(home)},
            )
            async with (
                stdio_client(params) as (read, write),
                ClientSession(
                    read, write, client_info=types.Implementation(name="bench", version="1")
                ) as session,
            ):
                await session.initialize()

                async def daemon_path() -> None:
                    outcome = await direct.call("list_tabs", {}, read_only=True)
                    assert outcome.outcome == "ok", outcome

                async def mcp_path() -> None:
                    result = await session.call_tool("list_tabs", {})
                    assert not result.is_error, result

                warm: list[float] = []
                await _timed(daemon_path, WARMUP, warm)
                await _timed(mcp_path, WARMUP, warm)
                times: dict[str, list[float]] = {"daemon tool path": [], "MCP (stdio)": []}
                for _ in range(CALLS // BLOCK):
                    await _timed(daemon_path, BLOCK, times["daemon tool path"])
                    await _timed(mcp_path, BLOCK, times["MCP (stdio)"])
            await direct.close()
            return times


def main() -> None:
    times = asyncio.run(_run())
    print(f"list_tabs, {CALLS} calls per path, interleaved blocks of {BLOCK}")
    for name, values in times.items():
        print(
            f"  {name:<18} median {statistics.median(values):6.3f} ms"
            f"   p99 {_pct(values, 0.99):6.3f} ms"
        )
    base = statistics.median(times["daemon tool path"])
    mcp = statistics.median(times["MCP (stdio)"])
    added = mcp - base
    verdict = "met" if added <= GOAL_MS else "missed"
    print(
        f"  MCP adds {added:.3f} ms to the median ({mcp / base:.2f}x the daemon tool path);"
        f" goal <= {GOAL_MS:.1f} ms: {verdict}"
    )


if __name__ == "__main__":
    main()
