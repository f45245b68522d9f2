"""GitHub Copilot as the model: :class:`CopilotGateway`, on the official ``github-copilot-sdk``.

The SDK drives the Copilot CLI (``@github/copilot``) as a child process speaking JSON-RPC on its
stdio; the CLI runs the model loop itself. So unlike the other gateways this one does not answer
one model call at a time (``stream_turn``): a turn opens a :class:`CopilotRun` on the chat's
Copilot session, sends the user's words, and reads what happens as run events
(:mod:`actors.model.copilot_events`) until the session is idle. Browy's tools are registered as
the session's tools (``skip_permission``: Browy asks its own approvals); each call Copilot makes
becomes a :class:`~actors.model.copilot_events.ToolWanted` that the turn runs through the
ToolWorker like any tool call, then answers. Copilot's built-in tools (shell, file edits, …) are
never offered: the session's ``available_tools`` lists Browy's tools only, and Browy's own
``bash``/``grep``/``glob``/``web_fetch`` take the place of the built-ins of those names when the
user switched them on.

One CLI process per gateway, started on first use; one Copilot session per chat (its id is the
chat's), resumed when the tools offered change or the CLI was restarted, created when the CLI
does not know it. A CLI that exits (a crash, a kill) ends the run in flight with ``MODEL_ERROR``
at once; the next turn starts a new CLI. ``auth.status`` and ``models.list`` come from the CLI
(``auth.getStatus``, ``models.list``). Cancel is the SDK's ``abort``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from copilot import (
    CopilotClient,
    CopilotSession,
    RuntimeConnection,
    SessionEvent,
    Tool,
    ToolInvocation,
    ToolResult,
)
from copilot._jsonrpc import JsonRpcError
from copilot.generated.rpc import PermissionDecisionReject

from actors.model.copilot_cli import INSTALL_HINT, CodeSink, device_login, find_cli
from actors.model.copilot_events import (
    SIGN_IN_FIX,
    ToolWanted,
    error_of,
    tool_call_of,
    translate,
)
from actors.model.copilot_run import SDK_ERRORS, CopilotRun
from actors.model.types import AuthState, ModelError, ModelInfo, ModelReply, ModelSettings

__all__ = ["COPILOT_BUILTINS", "CopilotGateway"]

log = logging.getLogger(__name__)

#: The CLI's built-in tools (as it lists them when they are left out). A Browy tool of the same
#: name is registered as overriding the built-in.
COPILOT_BUILTINS = frozenset(
    {
        "bash", "create", "edit", "glob", "grep", "list_agents", "list_bash", "read_agent",
        "read_bash", "semantic_code_search", "skill", "sql", "stop_bash", "task", "view",
        "web_fetch", "write_agent",
    }
)  # fmt: skip
START_TIMEOUT_S = 30.0


def _deny(request: Any, invocation: Any) -> PermissionDecisionReject:
    """Copilot asks before its own tools; none is offered, so anything it asks is refused."""
    return PermissionDecisionReject(feedback="Not allowed in Browy.")


def _alive(client: CopilotClient) -> bool:
    # The SDK marks its client "disconnected" when the CLI's stdout closes (it has no public
    # accessor for this; a ping would cost a round trip per poll).
    return getattr(client, "_state", None) == "connected"


@dataclass(slots=True)
class _Held:
    session: CopilotSession
    client: CopilotClient
    names: tuple[str, ...]


class CopilotGateway:
    """The Copilot provider. ``runs_own_loop``: a turn uses :meth:`open_run`, not
    ``stream_turn``. Satisfies the rest of :class:`~actors.model.types.ChatModel`."""

    runs_own_loop = True

    def __init__(
        self,
        settings: ModelSettings,
        *,
        client_factory: Callable[[str], CopilotClient] | None = None,
    ) -> None:
        self.settings = settings
        self._factory = client_factory or _default_client
        self._client: CopilotClient | None = None
        self._lock = asyncio.Lock()
        self._sessions: dict[str, _Held] = {}
        self._runs: dict[str, CopilotRun] = {}
        #: How many CLI processes this gateway started (a crashed one is replaced on next use).
        self.starts = 0

    # -- the CLI process -----------------------------------------------------------------------

    def cli(self) -> str:
        """The CLI's path; ``AUTH`` saying how to install it when there is none."""
        path = find_cli(self.settings.cli_path)
        if path is None:
            where = f" at {self.settings.cli_path}" if self.settings.cli_path else ""
            raise ModelError("AUTH", f"The GitHub Copilot CLI was not found{where}. {INSTALL_HINT}")
        return path

    def alive(self) -> bool:
        return self._client is not None and _alive(self._client)

    async def _ensure(self) -> CopilotClient:
        async with self._lock:
            client = self._client
            if client is not None and _alive(client):
                return client
            if client is not None:
                log.warning("the Copilot CLI is gone; starting a new one")
                await self._drop(client)
            client = self._factory(self.cli())
            try:
                async with asyncio.timeout(START_TIMEOUT_S):
                    await client.start()
            except (*SDK_ERRORS, ExceptionGroup) as exc:
                log.error("could not start the Copilot CLI: %r", exc)
                process = getattr(client, "_process", None)
                with contextlib.suppress(Exception):
                    await client.force_stop()
                _close_pipes(process)
                raise ModelError(
                    "MODEL_ERROR",
                    "Could not start the GitHub Copilot CLI; `browy doctor` and the log say why.",
                    retryable=True,
                ) from None
            self._client = client
            self.starts += 1
            return client

    async def _drop(self, client: CopilotClient) -> None:
        if self._client is client:
            self._client = None
        self._sessions = {k: h for k, h in self._sessions.items() if h.client is not client}
        process = getattr(client, "_process", None)
        with contextlib.suppress(Exception):
            await client.force_stop()
        _close_pipes(process)

    async def aclose(self) -> None:
        """Stop the CLI (idempotent)."""
        client, self._client = self._client, None
        self._sessions.clear()
        if client is None:
            return
        process = getattr(client, "_process", None)
        try:
            async with asyncio.timeout(10):
                await client.stop()
        except (*SDK_ERRORS, ExceptionGroup) as exc:
            log.info("copilot stop: %r", exc)
            with contextlib.suppress(Exception):
                await client.force_stop()
        _close_pipes(process)

    # -- auth.status and models.list ----------------------------------------------------------

    async def check_auth(self) -> AuthState:
        try:
            client = await self._ensure()
            async with asyncio.timeout(self.settings.connect_timeout + 10):
                status = await client.get_auth_status()
        except ModelError as exc:
            if exc.code.value == "AUTH":
                return AuthState(state="unauth", detail=exc.message)
            return AuthState(state="unknown", detail=exc.message)
        except SDK_ERRORS as exc:
            log.info("copilot auth.getStatus failed: %r", exc)
            return AuthState(state="unknown", detail="Could not ask the Copilot CLI; see the log.")
        if status.isAuthenticated:
            return AuthState(state="ready")
        # A sign-in made meanwhile (`browy login copilot`) is read by the next CLI started.
        await self._drop(client)
        return AuthState(state="unauth", detail=f"GitHub Copilot is not signed in. {SIGN_IN_FIX}")

    async def list_models(self) -> list[ModelInfo]:
        client = await self._ensure()
        try:
            async with asyncio.timeout(self.settings.connect_timeout + 20):
                models = await client.list_models()
        except JsonRpcError as exc:
            raise error_of(exc.message) from None
        except SDK_ERRORS as exc:
            log.info("copilot models.list failed: %r", exc)
            raise ModelError(
                "MODEL_ERROR", "Could not list GitHub Copilot's models.", retryable=True
            ) from None
        usable = [m for m in models if m.policy is None or m.policy.state != "disabled"]
        return [ModelInfo(id=m.id, name=m.name, vendor="GitHub Copilot") for m in usable]

    async def sign_in(self, on_code: CodeSink) -> bool:
        """The CLI's device sign-in (``copilot login --device-code``): *on_code* gets the URL and
        code to show the user; True once signed in. The running CLI is stopped afterwards so the
        next use starts one that reads the new sign-in."""
        signed_in = await device_login(self.cli(), on_code)
        await self.aclose()
        return signed_in

    async def stream_turn(self, *args: Any, **kwargs: Any) -> ModelReply:
        raise ModelError("MODEL_ERROR", "GitHub Copilot runs its own loop (open_run).")

    # -- a turn ------------------------------------------------------------------------------

    async def open_run(
        self, conversation: str, tools: list[dict[str, Any]], system: str
    ) -> CopilotRun:
        """A run on the chat's Copilot session, offering *tools* (OpenAI function definitions,
        as the tool catalog gives them) under the *system* prompt; then
        :meth:`~actors.model.copilot_run.CopilotRun.send`."""
        client = await self._ensure()
        previous = self._runs.get(conversation)
        if previous is not None:
            previous.close()  # a turn that ended without closing its run (never two at once)
        run = CopilotRun(
            conversation,
            alive=self.alive,
            idle_timeout=self.settings.stream_idle_timeout,
            on_close=lambda: self._forget(conversation, run),
        )
        self._runs[conversation] = run
        try:
            names = tuple(sorted(t["function"]["name"] for t in tools))
            held = self._sessions.get(conversation)
            if held is None or held.client is not client or held.names != names:
                if held is not None and held.client is client:
                    with contextlib.suppress(*SDK_ERRORS):
                        await held.session.disconnect()
                held, run.fresh = await self._attach(client, conversation, tools, names, system)
                self._sessions[conversation] = held
            run.session = held.session
        except BaseException:
            run.close()
            raise
        return run

    async def _attach(
        self,
        client: CopilotClient,
        conversation: str,
        tools: list[dict[str, Any]],
        names: tuple[str, ...],
        system: str,
    ) -> tuple[_Held, bool]:
        options: dict[str, Any] = {
            "tools": [self._tool(conversation, t["function"]) for t in tools],
            "available_tools": list(names),
            "system_message": {"mode": "replace", "content": system},
            "streaming": True,
            "on_permission_request": _deny,
            "on_event": lambda event: self._on_event(conversation, event),
        }
        if self.settings.model:
            options["model"] = self.settings.model
        try:
            try:
                session = await client.resume_session(conversation, **options)
                fresh = False
            except JsonRpcError as exc:
                if "not found" not in exc.message.lower():
                    raise
                session = await client.create_session(session_id=conversation, **options)
                fresh = True
        except JsonRpcError as exc:
            raise error_of(exc.message) from None
        except SDK_ERRORS as exc:
            log.info("copilot session for %s failed: %r", conversation, exc)
            raise ModelError(
                "MODEL_ERROR", "The Copilot CLI could not open this chat's session.", retryable=True
            ) from None
        return _Held(session=session, client=client, names=names), fresh

    def _tool(self, conversation: str, function: dict[str, Any]) -> Tool:
        name = str(function["name"])

        async def handle(invocation: ToolInvocation) -> ToolResult:
            run = self._runs.get(conversation)
            if run is None:  # a call after its turn ended: nobody may run it
                return ToolResult(
                    text_result_for_llm="Not run: this Browy turn has ended.",
                    result_type="failure",
                    error="the turn ended",
                )
            reply: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
            call = tool_call_of(invocation.tool_call_id, invocation.tool_name, invocation.arguments)
            run.put(ToolWanted(call=call, reply=reply))
            return await reply

        return Tool(
            name=name,
            description=str(function.get("description", "")),
            handler=handle,
            parameters=function.get("parameters") or {"type": "object", "properties": {}},
            overrides_built_in_tool=name in COPILOT_BUILTINS,
            skip_permission=True,
        )

    def _forget(self, conversation: str, run: CopilotRun) -> None:
        if self._runs.get(conversation) is run:
            del self._runs[conversation]

    def _on_event(self, conversation: str, event: SessionEvent) -> None:
        run = self._runs.get(conversation)
        if run is None:
            return
        translated = translate(event)
        if translated is not None:
            run.put(translated)


def _close_pipes(process: object) -> None:
    """Close the CLI's pipes once it is stopped (the SDK leaves them to the garbage collector)."""
    for name in ("stdin", "stdout", "stderr"):
        pipe = getattr(process, name, None)
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()


def _default_client(cli: str) -> CopilotClient:
    # An explicit path, so the SDK never downloads a runtime of its own; errors only in the log.
    return CopilotClient(connection=RuntimeConnection.for_stdio(path=cli), log_level="error")
