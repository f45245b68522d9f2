"""What a Copilot session says during one ``chat.send``, in the turn's own words (pure, no I/O).

The Copilot CLI runs the model loop itself and reports it as session events (the SDK's
``SessionEvent``). :func:`translate` keeps the few a Browy turn acts on and drops the rest
(telemetry, ``model.*`` debugging, sub-agents' streams):

=============================  =========================  ====================================
SDK event                      run event                  the turn then
=============================  =========================  ====================================
``assistant.turn_start``       :class:`ModelCalled`       ``event.activity llm_call_start``
``assistant.message_delta``    :class:`TextArrived`       ``chat.delta``
``assistant.message``          :class:`ModelSpoke`        journals the reply and its tool calls
``assistant.usage``            :class:`TokensUsed`        ``usage`` (v2), the journal's totals
``session.idle``               :class:`RunEnded`          ends the turn (``aborted`` after a cancel)
``session.error``              :class:`RunFailed`         ``chat.error`` (AUTH or MODEL_ERROR)
=============================  =========================  ====================================

A call of one of Browy's tools reaches the turn as :class:`ToolWanted` — made by the tool handler
the gateway registers, not by :func:`translate` — carrying the future the handler waits on; the
turn runs the call through the ToolWorker and answers it with :func:`tool_answer`. Events of a
sub-agent (``parentToolCallId`` set) are not the turn's own answer and are dropped.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from copilot import SessionEvent, SessionEventType, ToolBinaryResult, ToolResult

from actors.model.types import ModelError, ToolCall, parse_arguments

__all__ = [
    "ModelCalled",
    "ModelSpoke",
    "RunEnded",
    "RunEvent",
    "RunFailed",
    "TextArrived",
    "TokensUsed",
    "ToolWanted",
    "error_of",
    "tool_answer",
    "tool_call_of",
    "translate",
]

#: Words of a ``session.error`` that mean the CLI has no usable sign-in.
_AUTH_HINTS = ("authenticat", "oauth token", "not signed in", "sign in", "unauthorized", "401")
SIGN_IN_FIX = (
    "How to fix: sign in to GitHub Copilot — run `browy login copilot` in a terminal, or press "
    "Sign in in Browy's side panel."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCalled:
    """Copilot asks its model again (a new step of its loop)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextArrived:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpoke:
    """One whole model reply: its text and the tool calls it asked for (any tool)."""

    text: str
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TokensUsed:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnded:
    aborted: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed:
    error: ModelError


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolWanted:
    """Copilot calls one of Browy's tools; answer ``reply`` (once) with :func:`tool_answer`."""

    call: ToolCall
    reply: asyncio.Future[ToolResult]


RunEvent = ModelCalled | TextArrived | ModelSpoke | TokensUsed | RunEnded | RunFailed | ToolWanted


def tool_call_of(call_id: str, name: str, arguments: Any) -> ToolCall:
    """Our :class:`ToolCall` for a call Copilot reports (its arguments already parsed)."""
    if isinstance(arguments, dict):
        return ToolCall(
            id=call_id, name=name, arguments_json=json.dumps(arguments), arguments=arguments
        )
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    parsed, problem = parse_arguments(raw)
    return ToolCall(
        id=call_id, name=name, arguments_json=raw, arguments=parsed, arguments_error=problem
    )


def error_of(message: str, error_type: str = "") -> ModelError:
    """The turn's error for a ``session.error``: ``AUTH`` when the CLI is not signed in."""
    text = " ".join(message.split())[:300] or "no detail"
    lowered = f"{error_type} {text}".lower()
    if any(hint in lowered for hint in _AUTH_HINTS):
        return ModelError("AUTH", f"GitHub Copilot is not signed in ({text}). {SIGN_IN_FIX}")
    return ModelError("MODEL_ERROR", f"GitHub Copilot reported an error: {text}", retryable=True)


def translate(event: SessionEvent) -> RunEvent | None:
    """The run event for one SDK event, or None for the events a turn does not act on."""
    kind, data = event.type, event.data
    own = kind in (SessionEventType.SESSION_IDLE, SessionEventType.SESSION_ERROR)
    if not own and (event.agent_id or getattr(data, "parent_tool_call_id", None)):
        return None  # a sub-agent's stream, not the turn's answer
    if kind is SessionEventType.ASSISTANT_TURN_START:
        return ModelCalled()
    if kind is SessionEventType.ASSISTANT_MESSAGE_DELTA:
        text = getattr(data, "delta_content", "") or ""
        return TextArrived(text=text) if text else None
    if kind is SessionEventType.ASSISTANT_MESSAGE:
        calls = tuple(
            tool_call_of(r.tool_call_id, r.name, r.arguments)
            for r in getattr(data, "tool_requests", None) or []
        )
        return ModelSpoke(text=getattr(data, "content", "") or "", calls=calls)
    if kind is SessionEventType.ASSISTANT_USAGE:
        return TokensUsed(
            input_tokens=int(getattr(data, "input_tokens", 0) or 0),
            output_tokens=int(getattr(data, "output_tokens", 0) or 0),
        )
    if kind is SessionEventType.SESSION_IDLE:
        return RunEnded(aborted=bool(getattr(data, "aborted", False)))
    if kind is SessionEventType.SESSION_ERROR:
        return RunFailed(
            error=error_of(
                getattr(data, "message", "") or "", getattr(data, "error_type", "") or ""
            )
        )
    return None


def tool_answer(ok: bool, content: str | list[dict[str, Any]]) -> ToolResult:
    """What Copilot gets back for a call: the text the model reads, images as binary results."""
    if isinstance(content, str):
        text, images = content, []
    else:
        text = "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
        images = [_image_of(p) for p in content if p.get("type") == "image_url"]
    return ToolResult(
        text_result_for_llm=text,
        result_type="success" if ok else "failure",
        error=None if ok else (text[:500] or "the tool failed"),
        binary_results_for_llm=[i for i in images if i is not None] or None,
    )


def _image_of(part: dict[str, Any]) -> ToolBinaryResult | None:
    url = str((part.get("image_url") or {}).get("url", ""))
    head, sep, data = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        return None
    mime = head[len("data:") : -len(";base64")]
    return ToolBinaryResult(data=data, mime_type=mime, type="image", description="screenshot")
