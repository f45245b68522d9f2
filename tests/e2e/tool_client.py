"""A local client that calls the daemon's tools one by one, for synchronous end-to-end tests.

It is the MCP server's own session with the daemon (:class:`nativehost.mcp.daemon_session.
DaemonSession`: a ``mcp`` link, ``tool.call`` turns), run in this process on a loop of its own, so
a test drives the browser through the real daemon, relay and extension — the code of this
checkout, with no ``browy mcp`` process in between — and reads each tool's full result.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from nativehost.mcp.daemon_session import CallOutcome, DaemonSession
from tests.e2e.browser import E2EBrowser, wait_until

T = TypeVar("T")

__all__ = ["Result", "ToolClient", "client_on_protocol", "index_of"]


@dataclass(frozen=True, slots=True)
class Result:
    """One call: how it ended, its text, and how long it took."""

    outcome: str
    text: str
    code: str | None
    seconds: float
    progress: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


def _text(outcome: CallOutcome) -> str:
    content = outcome.content
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


class ToolClient:
    """Tool calls as one local client (by *name*) of the daemon under *home*."""

    def __init__(self, home: Path, name: str = "e2e-pages") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.session = DaemonSession(home, client_name=name)

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def call(self, tool: str, args: dict[str, Any] | None = None, timeout: float = 40) -> Result:
        started = time.monotonic()
        notes: list[str] = []

        async def progress(note: str) -> None:
            notes.append(note)

        outcome = self._run(self.session.call(tool, args or {}, progress=progress), timeout)
        took = time.monotonic() - started
        return Result(outcome.outcome, _text(outcome), outcome.code, took, tuple(notes))

    def ok(self, tool: str, args: dict[str, Any] | None = None, timeout: float = 40) -> str:
        """Call and insist on ``ok``; the text."""
        result = self.call(tool, args, timeout)
        assert result.ok, f"{tool} {args}: {result}"
        return result.text

    def close(self) -> None:
        try:
            self._run(self.session.close(), 10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()


def index_of(snapshot: str, needle: str) -> int:
    """The element number of the first snapshot line that mentions *needle*."""
    for line in snapshot.splitlines():
        match = re.match(r"^\*?\[(\d+)\]", line)
        if match and needle in line:
            return int(match.group(1))
    raise AssertionError(f"no element with {needle!r} in:\n{snapshot}")


@contextlib.contextmanager
def client_on_protocol(browser: E2EBrowser, protocol: int, name: str) -> Iterator[ToolClient]:
    """A local client (by *name*) of the daemon, with the extension speaking *protocol* (switched
    with ``browyTest.useProtocol`` unless it already does, and ready)."""

    def ready() -> bool:
        state = browser.state()
        on = str(state.get("detail", "")).endswith(f"protocol {protocol}")
        return state.get("state") == "ready" and on

    if not ready():
        browser.worker.evaluate("(n) => globalThis.browyTest.useProtocol(n)", protocol)
    wait_until(ready, timeout=20, what=f"the extension ready on protocol {protocol}")
    tools = ToolClient(browser.home, name=name)
    try:
        yield tools
    finally:
        with contextlib.suppress(Exception):
            tools.close()
