"""Per-call overhead of the tool path against a bare CDP round trip, in one run.

Run: ``.venv/bin/python -m bench tools`` (a few seconds). Needs /usr/lib/chromium/chromium.

One headless Chromium, one tab on a small local page, one ``CdpSession`` (the test helper's
websocket client). Two ways to read the same thing:

- tool path: ``Registry.run("get_page_info", {}, ctx)`` — policy check, argument validation,
  the tool's ``Runtime.evaluate``, the result formatted for the model, the outcome built;
- bare CDP: the same ``Runtime.evaluate`` expression through the same ``CdpSession``.

200 calls each after 50 warm-up calls each, interleaved in blocks of 10 so drift hits both alike;
median and p99 in microseconds, the ratio of medians, and the added median cost of the tool path.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

__all__ = ["main"]

_CALLS = 200
_WARMUP = 50
_BLOCK = 10
# The expression get_page_info evaluates (actors/tools/reading.py), for the bare round trip.
_EXPR = """({url: location.href, title: document.title,
          readyState: document.readyState, viewport: [innerWidth, innerHeight],
          scroll: [scrollX, scrollY], document: [document.documentElement.scrollWidth,
          document.documentElement.scrollHeight]})"""


class _Tab:
    """The test helper's websocket session as the tools' ``TabSession``."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.tab_id: int | None = 1

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        page_changing: bool = False,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.ws.send(
            method, params, page_changing=page_changing, timeout=timeout
        )
        return result

    def subscribe(self, callback: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        return lambda: None


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _timed(fn: Callable[[], Awaitable[Any]], n: int, out: list[float]) -> None:
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t0) * 1e6)


async def _run() -> None:
    from actors.tools.catalog import default_registry
    from actors.tools.tool_def import ToolContext
    from tests.helpers.cdp_ws import CdpWsSession
    from tests.helpers.chromium import Chromium, PageServer, chromium_available

    if not chromium_available():
        print("skipped: needs /usr/lib/chromium/chromium")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "p.html").write_text("<title>Bench</title><h1>Hello</h1><button>Go</button>")
        with Chromium.launched() as browser, PageServer(root) as site:
            ws = await CdpWsSession.open(browser.http_base)
            try:
                await ws.navigate(site.url("p.html"))
                tab = _Tab(ws)
                reg = default_registry()
                ctx = ToolContext(session_id="bench", cdp=tab)
                params = {"expression": _EXPR, "returnByValue": True, "awaitPromise": True}

                async def tool() -> None:
                    out = await reg.run("get_page_info", {}, ctx)
                    assert out.ok, out.content_for_model

                async def bare() -> None:
                    await tab.send("Runtime.evaluate", params)

                sink: list[float] = []
                await _timed(tool, _WARMUP, sink)
                await _timed(bare, _WARMUP, sink)
                tool_us: list[float] = []
                bare_us: list[float] = []
                for _ in range(_CALLS // _BLOCK):
                    await _timed(tool, _BLOCK, tool_us)
                    await _timed(bare, _BLOCK, bare_us)
            finally:
                await ws.close()

    t_med, b_med = statistics.median(tool_us), statistics.median(bare_us)
    print(f"{'path':<28}{'calls':>7}{'median µs':>12}{'p99 µs':>10}")
    for name, vals in (
        ("Registry.run(get_page_info)", tool_us),
        ("bare Runtime.evaluate", bare_us),
    ):
        print(f"{name:<28}{len(vals):>7}{statistics.median(vals):>12.0f}{_pct(vals, 0.99):>10.0f}")
    print(f"ratio of medians (tool / bare): {t_med / b_med:.2f}x")
    print(f"tool path adds {t_med - b_med:.0f} µs per call at the median")


def main() -> None:
    asyncio.run(_run())


if __name__ == "__main__":
    main()
