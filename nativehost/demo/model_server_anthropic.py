"""The Anthropic Messages API answers of the scripted model server
(:mod:`nativehost.demo.model_server`).

Pure builders of what the server sends for a scripted :class:`~nativehost.demo.model_script.Step` in
the Anthropic Messages API (the same steps and faults answer the OpenAI API):

- ``POST /v1/messages``, non-streaming (one ``message`` object with ``content`` blocks) or
  streaming (SSE ``event: <type>\\ndata: {json}\\n\\n``, in Anthropic's order: ``message_start``;
  per content block ``content_block_start``, its ``content_block_delta`` events (``thinking_delta``
  then one ``signature_delta``; ``text_delta`` per text chunk; ``input_json_delta`` starting with an
  empty ``partial_json`` then argument fragments) and ``content_block_stop``, with one ``ping``
  after the first ``content_block_start``; ``message_delta`` with ``stop_reason`` and ``usage``;
  ``message_stop``). Blocks come thinking first, then text, then tool_use.
- ``GET /v1/models`` with an ``anthropic-version`` header: Anthropic's list shape (``data`` of
  ``{"type": "model", "id", "display_name", "created_at"}``, ``has_more``, ``first_id``,
  ``last_id``).
- Errors use Anthropic's body shape ``{"type": "error", "error": {"type", "message"}}``; the key
  is read from ``x-api-key`` (or a bearer token). Step matching sees the ``system`` parameter as a
  system message, and a user message made of ``tool_result`` blocks as a tool result.

:func:`openai_view` is that view of a request for the step rules (written for OpenAI chat
messages). Ids are drawn from the server's counter.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from nativehost.demo.model_script import ARGUMENT_FRAGMENT, Step, finish_of, split_words, usage_of

__all__ = [
    "error_body",
    "error_event",
    "events",
    "message_body",
    "models_body",
    "openai_view",
    "sse",
]

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _anthropic_blocks(step: Step, ids: Iterator[int]) -> list[dict[str, Any]]:
    """The finished content blocks of an answer: thinking, then text, then tool_use."""
    blocks: list[dict[str, Any]] = []
    for thought in step.thinking:
        if thought.redacted is not None:
            blocks.append({"type": "redacted_thinking", "data": thought.redacted})
        else:
            blocks.append(
                {"type": "thinking", "thinking": thought.text, "signature": thought.signature}
            )
    if step.text:
        blocks.append({"type": "text", "text": "".join(step.text)})
    for n, spec in enumerate(step.tool_calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": spec.id or f"toolu_browy{next(ids)}_{n}",
                "name": spec.name,
                "input": spec.arguments_json(),  # a string until message_body parses it
            }
        )
    return blocks


def _message(
    step: Step, model: str, content: list[dict[str, Any]], ids: Iterator[int]
) -> dict[str, Any]:
    return {
        "id": f"msg_browy{next(ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": _anthropic_usage(step)["input_tokens"], "output_tokens": 1},
    }


def message_body(step: Step, model: str, ids: Iterator[int]) -> dict[str, Any]:
    """The ``message`` object answering with *step* (non-streaming)."""
    blocks = _anthropic_blocks(step, ids)
    for block in blocks:
        if block["type"] == "tool_use":
            try:
                block["input"] = orjson.loads(block["input"])
            except orjson.JSONDecodeError:
                block["input"] = {}  # Anthropic always sends an object
    message = _message(step, model, blocks, ids)
    message["stop_reason"] = _stop_reason(step)
    message["usage"] = _anthropic_usage(step)
    return message


def events(step: Step, model: str, ids: Iterator[int]) -> list[dict[str, Any]]:
    """The SSE events of a streamed answer, in Anthropic's order."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": _message(step, model, [], ids)}
    ]
    for index, block in enumerate(_anthropic_blocks(step, ids)):
        kind = block["type"]
        deltas: list[dict[str, Any]] = []
        start: dict[str, Any]
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": t} for t in split_words(block["thinking"])
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in step.text]
        elif kind == "tool_use":
            start = {**block, "input": {}}
            args: str = block["input"]
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas.extend(
                {"type": "input_json_delta", "partial_json": args[at : at + ARGUMENT_FRAGMENT]}
                for at in range(0, len(args), ARGUMENT_FRAGMENT)
            )
        else:  # redacted_thinking: whole in its start event
            start = block
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if index == 0:
            events.append({"type": "ping"})
        events.extend({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)
        events.append({"type": "content_block_stop", "index": index})
    usage = _anthropic_usage(step)
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(step), "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events


def sse(event: Mapping[str, Any]) -> bytes:
    """One SSE event as Anthropic sends them: ``event: <type>``, ``data: {json}``, a blank line."""
    return b"event: " + str(event["type"]).encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def models_body(models: tuple[str, ...]) -> dict[str, Any]:
    """The body of ``GET /v1/models`` asked with an ``anthropic-version`` header."""
    data = [
        {
            "type": "model",
            "id": m,
            "display_name": m,
            "created_at": "2025-01-01T00:00:00Z",
            "lifecycle": "active",
        }
        for m in models
    ]
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return {"data": data, "has_more": False, "first_id": first, "last_id": last}


def error_body(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error body for an HTTP error *status* (also the data of an ``error`` event)."""
    kind = _ANTHROPIC_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )
    return {"type": "error", "error": {"type": kind, "message": message}}


def error_event(status: int, message: str) -> bytes:
    """The ``error`` event that ends a stream failing with *status* after its 200."""
    return sse(error_body(status, message))


def openai_view(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic request's messages as OpenAI chat messages, for the step rules (and echo):
    ``system`` becomes a system message, a user message of tool_result blocks a tool message."""
    out: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        out.append({"role": "system", "content": system})
    for message in body["messages"]:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if message.get("role") == "user" and results and len(results) == len(blocks):
            out.append({"role": "tool", "content": ""})
        else:
            out.append({"role": message.get("role"), "content": content})
    return out


def _stop_reason(step: Step) -> str:
    finish = finish_of(step)
    return _STOP_REASONS.get(finish, finish)


def _anthropic_usage(step: Step) -> dict[str, int]:
    usage = usage_of(step)
    return {
        "input_tokens": usage.get("input_tokens", usage.get("prompt_tokens", 10)),
        "output_tokens": usage.get("output_tokens", usage.get("completion_tokens", 1)),
    }
