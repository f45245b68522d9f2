"""An MCP client for the synchronous end-to-end tests: the SDK's own client on a loop of its own.

:class:`McpClient` starts ``browy mcp`` (stdio, with the test's ``BROWY_HOME``) or connects to
``browy mcp --http`` with the SDK's Streamable HTTP client, and keeps one ``ClientSession`` open
on a background thread; :meth:`McpClient.call` runs a call there and returns a
``concurrent.futures.Future``, so the test thread can drive the browser (answer a card in the
panel) while a call waits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp import ClientSession, StdioServerParameters, stdio_client, types

from tests.e2e.browser import REPO_ROOT

T = TypeVar("T")

BROWY = str(Path(sys.executable).with_name("browy"))


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


class McpClient:
    """One MCP client (by *name*) of ``browy mcp``; close it with :meth:`close`."""

    def __init__(
        self,
        home: Path,
        name: str,
        *,
        args: tuple[str, ...] = (),
        http_url: str | None = None,
        token: str | None = None,
    ) -> None:
        self.home = home
        self.name = name
        self.progress: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._stop = asyncio.Event()
        self._ready: concurrent.futures.Future[ClientSession] = concurrent.futures.Future()
        serve = self._serve(args, http_url, token)
        self._main = asyncio.run_coroutine_threadsafe(serve, self._loop)
        self.session = self._ready.result(timeout=30)

    async def _serve(self, args: tuple[str, ...], http_url: str | None, token: str | None) -> None:
        self._stop = asyncio.Event()
        info = types.Implementation(name=self.name, version="1.0")
        try:
            async with contextlib.AsyncExitStack() as stack:
                if http_url is None:
                    # This checkout's code, whatever checkout the venv's editable install names.
                    path = os.pathsep.join(
                        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])
                    )
                    env = {**os.environ, "BROWY_HOME": str(self.home), "PYTHONPATH": path}
                    params = StdioServerParameters(
                        command=BROWY, args=["mcp", *args], env=env, cwd=str(REPO_ROOT)
                    )
                    read, write = await stack.enter_async_context(stdio_client(params))
                else:
                    from mcp.client.streamable_http import streamable_http_client
                    from mcp.shared._httpx_utils import create_mcp_http_client

                    http = await stack.enter_async_context(
                        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
                    )
                    read, write = await stack.enter_async_context(
                        streamable_http_client(http_url, http_client=http)
                    )
                session = await stack.enter_async_context(
                    ClientSession(read, write, client_info=info)
                )
                await session.initialize()
                self._ready.set_result(session)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def run(self, make: Callable[[], Awaitable[T]]) -> concurrent.futures.Future[T]:
        async def go() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(go(), self._loop)

    def call(
        self, tool: str, args: dict[str, Any] | None = None
    ) -> concurrent.futures.Future[types.CallToolResult]:
        async def progress(p: float, total: float | None, message: str | None) -> None:
            self.progress.append(message or "")

        return self.run(
            lambda: self.session.call_tool(tool, args or {}, progress_callback=progress)
        )

    def call_now(
        self, tool: str, args: dict[str, Any] | None = None, timeout: float = 30.0
    ) -> types.CallToolResult:
        return self.call(tool, args).result(timeout=timeout)

    def cancel_after(
        self, seconds: float, tool: str, args: dict[str, Any]
    ) -> concurrent.futures.Future[bool]:
        """Call *tool*, and cancel the call after *seconds* as a client does (the SDK sends
        ``notifications/cancelled``). The future says whether it was cancelled."""

        async def go() -> bool:
            import anyio

            with anyio.move_on_after(seconds) as scope:
                await self.session.call_tool(tool, args)
            return scope.cancelled_caught

        return asyncio.run_coroutine_threadsafe(go(), self._loop)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        with contextlib.suppress(Exception):
            self._loop.call_soon_threadsafe(self._stop.set)
            self._main.result(timeout=15)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        with contextlib.suppress(Exception):
            self._loop.close()
