"""The Registry: every tool by name, their schemas for the model, and running one call.

A tool is a :class:`~actors.tools.tool_def.ToolDef` (its vocabulary is in
:mod:`actors.tools.tool_def`). A :class:`Registry` holds them, offers their OpenAI schemas to the
model and runs calls — for the ToolWorker (:mod:`actors.browser.tool_worker`), which alone runs
tools.

Policy rules (protocol.md section 3b "Tool toggles" and "Approvals"; architecture.md section 7):

1. A tool named in ``ToolPolicy.disabled`` (the session's ``disabledTools``, plus the host's own
   config) is neither offered to the model nor runnable: a call gets ``TOOL_DISABLED``.
2. Host tools (``write_file bash grep glob web_fetch``) are offered and runnable only when named
   in ``ToolPolicy.enabled_host_tools``. ``read_file`` is always the sandboxed data tool.
3. Host code (``run_script``, ``bash``) additionally needs ``allow_host_code`` in the host's own
   config: a v1 toggle alone never turns it on.
4. Approvals: when ``approval_mode`` is ``"always"``, or ``"page-changing"`` and the tool changes
   the page, the registry awaits ``ctx.approve`` before running it. A denial (or no way to ask)
   gives ``APPROVAL_DENIED`` and the tool does not run. ``"never"`` runs without asking.
5. Arguments are validated against the tool's model in lax mode, so v1 strings for numbers and
   booleans (``"3"``, ``"true"``) are accepted; unknown fields are refused. A bad call gets an
   error outcome whose content names each wrong field, so the model can fix it.
6. JavaScript dialogs (:mod:`actors.tools.dialogs`): a page-changing tool during which a dialog
   opened did act, and says so (ok: "... opened a confirm dialog ..."); any other call that a
   dialog blocks gets ``DIALOG_OPEN`` with how to answer it (``handle_dialog``).
7. No replay (protocol.md section 5): a page-changing call is recorded in the ledger as *sent*
   before it runs and *done* after; if it is interrupted (its error says ``outcome="unknown"``, or
   the task is cancelled) it is reported ``unknown`` and never run again for the same call id.
   Reads (``page_changing=False``) are retried once on ``REQUEST_TIMEOUT``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from actors.tools.cdp import CdpError, outcome_of
from actors.tools.dialogs import DialogOpen, describe, how_to_answer
from actors.tools.shared import untrusted
from actors.tools.tool_def import (
    ApprovalRequestInfo,
    RunFn,
    ToolContext,
    ToolDef,
    ToolError,
    ToolOutcome,
    ToolOutput,
    ToolPolicy,
)
from messages.errors import BrowyError, ErrorCode

__all__ = ["Registry", "clean_schema"]

log = logging.getLogger(__name__)


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema made compact for the model: no ``title`` keys, defs inlined where
    simple, ``additionalProperties: false`` kept."""

    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
            extra = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**defs[ref.rsplit("/", 1)[-1]], **extra})
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in {"title", "$defs"}:
                continue
            if key == "properties" and isinstance(value, dict):
                # A mapping of field names: a field called "title" must stay.
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        return out

    out: dict[str, Any] = walk(schema)
    out.setdefault("properties", {})
    out["type"] = "object"
    return out


def _format_validation(name: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append(f"{where}: {msg}")
    return f"invalid arguments for {name}: " + "; ".join(problems)


def _short(args: dict[str, Any], limit: int = 120) -> str:
    text = json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Registry:
    """Tools by name. Not tied to a connection: the context carries the connection's parts."""

    def __init__(self, tools: Iterable[ToolDef] = ()) -> None:
        self._tools: dict[str, ToolDef] = {}
        self._definitions: dict[str, dict[str, Any]] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: ToolDef) -> ToolDef:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool
        return tool

    def register(
        self,
        name: str,
        description: str,
        params: type[BaseModel],
        *,
        page_changing: bool,
        host_code: bool = False,
        retry_on_timeout: bool | None = None,
        reads_secrets: bool = False,
        asks_itself: bool = False,
    ) -> Callable[[RunFn], RunFn]:
        """Decorator form: ``@registry.register("navigate", "...", NavigateArgs,
        page_changing=True)`` over ``async def run(args, ctx) -> ToolOutput``."""

        def deco(fn: RunFn) -> RunFn:
            self.add(
                ToolDef(
                    name=name,
                    description=description,
                    params=params,
                    run=fn,
                    page_changing=page_changing,
                    host_code=host_code,
                    retry_on_timeout=retry_on_timeout,
                    reads_secrets=reads_secrets,
                    asks_itself=asks_itself,
                )
            )
            return fn

        return deco

    def get(self, name: str) -> ToolDef | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def definition(self, tool: ToolDef) -> dict[str, Any]:
        """The OpenAI ``tools`` entry of one tool, built once (pydantic's schema generation is
        the costliest part of a turn's set-up otherwise: bench/bench_turns.py)."""
        cached = self._definitions.get(tool.name)
        if cached is None:
            cached = {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": clean_schema(tool.params.model_json_schema()),
                },
            }
            self._definitions[tool.name] = cached
        return cached

    def definitions(
        self, policy: ToolPolicy, keep: Callable[[str], bool] | None = None
    ) -> list[dict[str, Any]]:
        """OpenAI ``tools`` entries for the tools ``policy`` allows (rules 1-3) and *keep*
        accepts. The entries are shared: callers must not modify them."""
        return [
            self.definition(tool)
            for tool in self._tools.values()
            if (keep is None or keep(tool.name)) and policy.blocked(tool) is None
        ]

    async def run(
        self,
        name: str,
        raw_args: str | dict[str, Any] | None,
        ctx: ToolContext,
        *,
        call_id: str | None = None,
    ) -> ToolOutcome:
        """Run one tool call and return its outcome; never raises except on cancellation.

        ``call_id`` (the model's tool call id) keys the ledger: a page-changing call id that was
        already sent is not run again (rule 7). Cancellation of the calling task propagates after
        the ledger records an interrupted page-changing call as unknown.
        """
        start = time.monotonic()

        def fail(
            code: ErrorCode,
            text: str,
            outcome: Literal["error", "unknown"] = "error",
            summary: str | None = None,
        ) -> ToolOutcome:
            return ToolOutcome(
                outcome=outcome,
                content_for_model=f"error {code.value}: {text}",
                summary=summary or text[:200],
                error_code=code,
                duration_ms=int((time.monotonic() - start) * 1000),
            )

        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self.names())
            return fail(ErrorCode.INTERNAL, f"unknown tool {name!r}; available tools: {known}")
        reason = ctx.policy.blocked(tool)
        if reason is not None:
            return fail(ErrorCode.TOOL_DISABLED, reason)

        # Arguments: a JSON string (the model's), a dict, or nothing.
        if raw_args is None or (isinstance(raw_args, str) and not raw_args.strip()):
            data: Any = {}
        elif isinstance(raw_args, str):
            try:
                data = json.loads(raw_args)
            except ValueError as exc:
                return fail(ErrorCode.INVALID_MESSAGE, f"arguments are not valid JSON ({exc})")
        else:
            data = raw_args
        if not isinstance(data, dict):
            return fail(ErrorCode.INVALID_MESSAGE, "arguments must be a JSON object")
        try:
            args = tool.params.model_validate(data)
        except ValidationError as exc:
            return fail(ErrorCode.INVALID_MESSAGE, _format_validation(name, exc))

        if ctx.policy.needs_approval(tool) and not tool.asks_itself:
            info = ApprovalRequestInfo(
                tool=name,
                args=data,
                summary=f"{name} {_short(data)}",
                remember=not tool.reads_secrets,
            )
            allowed = ctx.approve is not None and await ctx.approve(info)
            if not allowed:
                return fail(ErrorCode.APPROVAL_DENIED, f"the user did not allow {name}")

        changing = tool.page_changing or tool.host_code
        if changing and call_id is not None:
            seen = ctx.ledger.get(call_id)
            if seen is not None:
                # protocol.md section 5, "No replay": report what we know, never send again.
                outcome: Literal["error", "unknown"] = (
                    "error" if seen.state == "error" else ("unknown")
                )
                return fail(
                    ErrorCode.INTERNAL,
                    f"{name} call {call_id} was already sent; it is not repeated",
                    outcome=outcome,
                )
        key = call_id or f"anon-{id(args)}-{start}"
        if changing:
            ctx.ledger.sent(key, name)
        try:
            output = await self._attempt(tool, args, ctx)
        except asyncio.CancelledError:
            if changing:
                ctx.ledger.interrupted(key)
            raise
        except DialogOpen as exc:
            # Rule 6: it opened during this call, so a page-changing call did act (the click
            # that opens a confirm is answered only once the confirm closes).
            caused = changing and exc.dialog.opened_at >= start
            if changing:
                ctx.ledger.done(key, "ok" if caused else "error")
            answer = how_to_answer(exc.dialog)
            if not caused:
                return fail(
                    ErrorCode.DIALOG_OPEN,
                    f"{describe(exc.dialog)}; the page is blocked until it is answered: "
                    f"{answer}. {name} did nothing.",
                )
            return ToolOutcome(
                outcome="ok",
                content_for_model=untrusted(
                    f"{name}: done, and the page opened a dialog: {describe(exc.dialog)}. "
                    f"The page is blocked until it is answered: {answer}."
                ),
                summary=f"{name}: opened a {exc.dialog.kind} dialog",
                duration_ms=int((time.monotonic() - start) * 1000),
            )
        except BrowyError as exc:
            unknown = changing and (
                outcome_of(exc) == "unknown"
                or exc.code in {ErrorCode.REQUEST_TIMEOUT, ErrorCode.CONNECTION_LOST}
            )
            if changing:
                if unknown:
                    ctx.ledger.interrupted(key)
                else:
                    ctx.ledger.done(key, "error")
            text = exc.message if isinstance(exc, ToolError | CdpError) else exc.wire_message
            if unknown:
                text += " (the action was sent; whether it took effect is unknown; not repeated)"
            return fail(
                exc.code,
                text,
                "unknown" if unknown else "error",
                summary=exc.wire_message if not unknown else "outcome unknown",
            )
        except Exception:
            log.exception("tool %s failed", name)
            if changing:
                ctx.ledger.interrupted(key)
            return fail(
                ErrorCode.INTERNAL, f"internal error in {name}", "unknown" if changing else "error"
            )
        if changing:
            ctx.ledger.done(key, "ok")
        return ToolOutcome(
            outcome="ok",
            content_for_model=output.content,
            summary=output.summary,
            duration_ms=int((time.monotonic() - start) * 1000),
            data=output.data,
        )

    async def _attempt(self, tool: ToolDef, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        try:
            return await tool.run(args, ctx)
        except BrowyError as exc:
            # Rule 7: reads may be retried once when no answer came at all.
            if tool.retryable and exc.code is ErrorCode.REQUEST_TIMEOUT:
                log.info("retrying read tool %s after REQUEST_TIMEOUT", tool.name)
                return await tool.run(args, ctx)
            raise
