"""The scripted model server's OpenAI chat-completions answers
(:mod:`nativehost.demo.model_server`).

Pure builders of the bodies the server sends for a scripted
:class:`~nativehost.demo.model_script.Step`, in the wire format of the OpenAI API as the SDK expects
it:

- ``POST /v1/chat/completions``, non-streaming (one ``chat.completion`` object) or streaming (SSE:
  ``data: {chunk}\\n\\n`` ... ``data: [DONE]\\n\\n``). The first chunk carries ``role``; text
  follows in ``content`` deltas; each tool call comes in pieces as OpenAI sends them (``index``,
  ``id``, ``type`` and ``function.name`` with empty ``arguments`` first, then argument fragments);
  the last choice chunk carries ``finish_reason``; with ``stream_options.include_usage`` every
  chunk has ``"usage": null`` and a final chunk with ``"choices": []`` carries the usage.
- ``GET /v1/models``: the script's model list.
- Errors use OpenAI's body shape ``{"error": {"message", "type", "param", "code"}}``.

Ids are drawn from the server's counter, in the order OpenAI's would appear.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson

from nativehost.demo.model_script import ARGUMENT_FRAGMENT, Step, ToolCallSpec, finish_of, usage_of

__all__ = [
    "DONE",
    "chunks",
    "completion",
    "data_event",
    "error_body",
    "error_event",
    "models_body",
]


def completion(step: Step, model: str, ids: Iterator[int]) -> dict[str, Any]:
    """The ``chat.completion`` object answering with *step* (non-streaming)."""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(step.text) or None}
    calls = [_tool_call(c, n, ids) for n, c in enumerate(step.tool_calls)]
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": c["function"], **c["extra"]}
            for c in calls
        ]
    message.update(step.extra)
    return {
        "id": f"chatcmpl-browy{next(ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_of(step), "logprobs": None}
        ],
        "usage": usage_of(step),
    }


def _tool_call(spec: ToolCallSpec, n: int, ids: Iterator[int]) -> dict[str, Any]:
    call_id = spec.id or f"call_browy{next(ids)}_{n}"
    function = {"name": spec.name, "arguments": spec.arguments_json()}
    return {"id": call_id, "function": function, "extra": spec.extra}


def _deltas(step: Step, ids: Iterator[int]) -> list[dict[str, Any]]:
    """The choice deltas of a streamed answer, in OpenAI's order."""
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": "", "refusal": None, **step.extra}
    ]
    deltas.extend({"content": piece} for piece in step.text)
    for n, spec in enumerate(step.tool_calls):
        call = _tool_call(spec, n, ids)
        head = {
            "index": n,
            "id": call["id"],
            "type": "function",
            "function": {"name": spec.name, "arguments": ""},
            **spec.extra,
        }
        deltas.append({"tool_calls": [head]})
        args = call["function"]["arguments"]
        for at in range(0, len(args), ARGUMENT_FRAGMENT):
            fragment = {
                "index": n,
                "function": {"arguments": args[at : at + ARGUMENT_FRAGMENT]},
            }
            deltas.append({"tool_calls": [fragment]})
    return deltas


def chunks(step: Step, model: str, ids: Iterator[int], include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` events of a streamed answer (``[DONE]`` not included)."""
    base: dict[str, Any] = {
        "id": f"chatcmpl-browy{next(ids)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
    }
    if include_usage:
        base["usage"] = None
    events: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": None}]}
        for d in _deltas(step, ids)
    ]
    events.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish_of(step)}]}
    )
    if include_usage:
        events.append({**base, "choices": [], "usage": usage_of(step)})
    return events


#: The last event of a streamed answer.
DONE = b"data: [DONE]\n\n"


def data_event(event: object) -> bytes:
    """One SSE event as OpenAI sends them: ``data: {json}`` and a blank line."""
    return b"data: " + orjson.dumps(event) + b"\n\n"


def models_body(models: tuple[str, ...]) -> dict[str, Any]:
    """The body of ``GET /v1/models``."""
    data = [
        {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "browy"} for m in models
    ]
    return {"object": "list", "data": data}


def error_body(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error body for an HTTP error *status*."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def error_event(status: int, message: str) -> bytes:
    """The event that ends a stream failing with *status* after its 200."""
    # What OpenAI does when a stream fails after its 200: an error event, then the end.
    error = {"message": message, "type": "server_error", "param": None, "code": status}
    return data_event({"error": error})
