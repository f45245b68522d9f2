"""``browy mcp``: the user's live browser as an MCP server (the official ``mcp`` SDK).

Each MCP connection (one over stdio; one per MCP session over Streamable HTTP) is a
:class:`~nativehost.mcp.daemon_session.DaemonSession`: a local client of the running daemon,
named by the client's ``clientInfo``. Its tools are the daemon's (``tools.list``), shown with
truthful annotations (:mod:`nativehost.mcp.tool_set`). A call:

- is checked against the tool's schema here (an unknown tool is a protocol error; bad or huge
  arguments are a tool error with a stable code), then run by the daemon as a turn of its own:
  queued behind the tab's lock, asked about in the side panel when the site's policy says so,
  journaled, never repeated;
- reports progress while it waits (approval, consent, a long navigation), so the client's call
  timeout does not fire;
- is cancelled by the client's ``notifications/cancelled`` (the SDK cancels the handler: the
  daemon is told, and cancels the browser call in flight);
- after a daemon restart, ends with its outcome from the journal (``unknown`` for a page change
  that was cut) — the next call reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from nativehost.link import DaemonUnavailable
from nativehost.mcp.daemon_session import CallOutcome, DaemonSession, SessionRefused
from nativehost.mcp.playwright_names import SLEEP
from nativehost.mcp.tool_set import Naming, ToolError, ToolSet, UnknownTool, mcp_content

__all__ = ["INSTRUCTIONS", "BrowyMcp"]

_STATE_KEY = "browy.client"
#: The form of a guarded action's question, when the client's user is asked too.
_DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"decision": {"type": "string", "enum": ["allow", "deny"], "title": "Allow it?"}},
    "required": ["decision"],
}

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Browy drives the user's own browser (their logins, their extensions). Start with the page "
    "snapshot tool (inspect_page, or browser_snapshot): it numbers the page's elements; click and "
    "type by those numbers. Page-changing actions may wait for the user's approval in the Browy "
    "side panel. A result with outcome 'unknown' means the action was sent but its effect is not "
    "known: it was not repeated — look at the page before trying again."
)


def _error(code: str, text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"error {code}: {text}")], is_error=True
    )


def _result(outcome: CallOutcome) -> types.CallToolResult:
    content = mcp_content(outcome.content)
    if outcome.outcome == "unknown":
        note = (
            "outcome unknown: the action was sent to the page but its effect is not known "
            "(cancelled, or the browser or daemon went away); it was not repeated. Look at the "
            "page before trying again."
        )
        content = [types.TextContent(text=note), *content]
    return types.CallToolResult(content=content, is_error=outcome.outcome != "ok")


class _Client:
    """One MCP connection's side: its daemon session and the tools it was shown."""

    def __init__(self, session: DaemonSession, naming: Naming) -> None:
        self.session = session
        self.naming = naming
        self.tools: ToolSet | None = None

    async def tool_set(self, progress: Callable[[str], Any] | None = None) -> ToolSet:
        specs = await self.session.tools(progress)
        self.tools = ToolSet(specs, self.naming)
        return self.tools


class BrowyMcp:
    """The MCP server (see the module docstring). ``start_daemon(home)`` starts a daemon when
    none runs; the server closes every daemon session on :meth:`close`."""

    def __init__(
        self,
        home: Path,
        *,
        version: str,
        naming: Naming = "browy",
        start_daemon: Callable[[Path], None] | None = None,
        browser: str | None = None,
    ) -> None:
        self.home = home
        self.browser = browser
        self.naming: Naming = naming
        self._start_daemon = start_daemon
        self._sessions: set[DaemonSession] = set()
        self._by_name: dict[str, _Client] = {}
        self.server: Server[Any] = Server(
            "browy",
            version=version,
            title="Browy",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # -- one client per MCP connection ---------------------------------------------------------

    def _client(self, ctx: ServerRequestContext[Any]) -> _Client:
        """The daemon session of this request's MCP connection (made on its first request).

        A connection of the handshake protocols (stdio, a Streamable HTTP session) is the SDK's
        per-client ``Connection``: its ``state`` outlives requests and its ``exit_stack`` unwinds
        when the client goes, closing the daemon session. ``ServerSession`` keeps it as
        ``_connection`` (mcp 2.3 has no public accessor in a low-level handler). Without one
        (the single-exchange protocol), a client is known by its name."""
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
        name = (info.name if info is not None else "") or "mcp client"
        found: Connection | None = getattr(ctx.session, "_connection", None)
        conn = found if found and found.protocol_version not in MODERN_PROTOCOL_VERSIONS else None
        if conn is not None:
            client: _Client | None = conn.state.get(_STATE_KEY)
        else:
            client = self._by_name.get(name)
        if client is not None:
            return client
        session = DaemonSession(
            self.home, client_name=name, start_daemon=self._start_daemon, browser=self.browser
        )
        client = _Client(session, self.naming)
        self._sessions.add(session)
        if conn is not None:
            conn.state[_STATE_KEY] = client
            conn.exit_stack.push_async_callback(self._close_session, session)
        else:
            self._by_name[name] = client
        return client

    async def _close_session(self, session: DaemonSession) -> None:
        self._sessions.discard(session)
        await session.close()

    @staticmethod
    def _asker(ctx: ServerRequestContext[Any]) -> Callable[[dict[str, Any]], Any] | None:
        """How to ask this client's user about a guarded action (MCP elicitation), if the client
        can be asked; the daemon asks only clients in ``[mcp] elicit_clients``."""
        caps = ctx.session.client_capabilities
        if caps is None or caps.elicitation is None or not ctx.session.can_send_request:
            return None

        async def ask(request: dict[str, Any]) -> str:
            origin = f" on {request['origin']}" if request.get("origin") else ""
            result = await ctx.session.elicit_form(
                f"Browy asks before {request.get('tool')}{origin}: {request.get('summary', '')}",
                _DECISION_SCHEMA,
                related_request_id=ctx.request_id,
            )
            content = result.content or {}
            return (
                "allow"
                if result.action == "accept" and content.get("decision") == "allow"
                else "deny"
            )

        return ask

    @staticmethod
    def _progress(ctx: ServerRequestContext[Any]) -> Callable[[str], Any]:
        count = 0

        async def report(note: str) -> None:
            nonlocal count
            count += 1
            with contextlib.suppress(Exception):  # a client gone: the call ends anyway
                await ctx.session.report_progress(count, None, note)

        return report

    # -- the handlers --------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        client = self._client(ctx)
        try:
            tools = await client.tool_set(self._progress(ctx))
        except SessionRefused as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from exc
        except (DaemonUnavailable, OSError, TimeoutError) as exc:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"Browy's daemon is not reachable: {exc}. Run `browy doctor`.",
            ) from exc
        return types.ListToolsResult(tools=tools.tools())

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        client = self._client(ctx)
        progress = self._progress(ctx)
        try:
            tools = client.tools or await client.tool_set(progress)
            try:
                name, args = tools.resolve(params.name, params.arguments)
            except UnknownTool:
                tools = await client.tool_set(progress)  # the offer may have changed
                name, args = tools.resolve(params.name, params.arguments)
        except UnknownTool as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc
        except ToolError as exc:
            return _error(exc.code, str(exc))
        except SessionRefused as exc:
            return _error("APPROVAL_DENIED", str(exc))
        except (DaemonUnavailable, OSError, TimeoutError) as exc:
            return _error("CONNECTION_LOST", f"Browy's daemon is not reachable: {exc}")
        if name == SLEEP:
            await asyncio.sleep(float(args["seconds"]))
            return types.CallToolResult(
                content=[types.TextContent(text=f"waited {args['seconds']:g} s")]
            )
        try:
            outcome = await client.session.call(
                name,
                args,
                progress=progress,
                read_only=tools.read_only(params.name),
                ask=self._asker(ctx),
            )
        except SessionRefused as exc:
            return _error("APPROVAL_DENIED", str(exc))
        except (DaemonUnavailable, ConnectionError, OSError) as exc:
            return _error(
                "CONNECTION_LOST", f"Browy's daemon is not reachable ({exc}); the call was not sent"
            )
        return _result(outcome)

    # -- life -----------------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve one client on stdin/stdout until it goes."""
        from mcp.server.stdio import stdio_server

        from nativehost.mcp.stdio_pipes import pipe_stdio

        try:
            async with pipe_stdio() as pipes:
                stdin, stdout = pipes if pipes is not None else (None, None)
                async with stdio_server(stdin, stdout) as (read, write):  # type: ignore[arg-type]
                    options = self.server.create_initialization_options()
                    await self.server.run(read, write, options)
        finally:
            await self.close()

    async def close(self) -> None:
        sessions, self._sessions, self._by_name = list(self._sessions), set(), {}
        for session in sessions:
            with contextlib.suppress(Exception):
                await session.close()
