"""Builds a :class:`~actors.model.types.ModelReply` from the events of an Anthropic message stream.

:class:`ReplyAssembler` is pure (no I/O): it takes the stream's events one at a time (the SDK's
event objects, or the same events as plain dicts). Streamed text is returned by ``feed`` for
``on_text``; ``tool_use`` input is reassembled from its ``input_json_delta`` fragments;
``finish_reason`` is mapped (``end_turn``/``stop_sequence`` -> ``stop``, ``tool_use`` ->
``tool_calls``, ``max_tokens`` -> ``length``, others as they are); ``usage.input_tokens`` includes
cache reads and writes.

``assistant_message`` is OpenAI format (what the store keeps) plus, when the answer had blocks of
other types than text and tool_use, :data:`CONTENT_KEY`: the blocks in order, text as
``{"type": "text", "chars": N}`` and tool_use as ``{"type": "tool_use", "id": ...}`` slots (so the
journal holds no second, unmasked copy of them). :mod:`actors.model.anthropic_request` follows
that layout when the message is sent again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from actors.model.types import ModelReply, ToolCall, Usage, parse_arguments

__all__ = ["CONTENT_KEY", "ReplyAssembler"]

#: The assistant-message key holding the answer's Anthropic block layout (see the docstring).
CONTENT_KEY = "anthropic_content"

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


class ReplyAssembler:
    """Builds a :class:`ModelReply` from the stream's events (pure, no I/O)."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def _note_usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            self.usage.update({k: v for k, v in usage.items() if isinstance(v, int)})

    def feed(self, raw: object) -> str:
        """Take one event; return the text it adds (may be empty)."""
        event = _event_dict(raw)
        kind = event.get("type")
        if kind == "message_start":
            self._note_usage((event.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            index = int(event.get("index", len(self.blocks)))
            self.blocks[index] = block
            if block.get("type") == "text":
                return str(block.get("text") or "")
        elif kind == "content_block_delta":
            return self._delta(int(event.get("index", 0)), event.get("delta") or {})
        elif kind == "message_delta":
            reason = (event.get("delta") or {}).get("stop_reason")
            if reason is not None:
                self.stop_reason = str(reason)
            self._note_usage(event.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        return ""

    def _delta(self, index: int, delta: Mapping[str, Any]) -> str:
        block = self.blocks.setdefault(index, {})
        kind = delta.get("type")
        if kind == "text_delta":
            piece = str(delta.get("text") or "")
            block["text"] = str(block.get("text") or "") + piece
            return piece
        if kind == "input_json_delta":
            self.json_parts.setdefault(index, []).append(str(delta.get("partial_json") or ""))
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = str(block.get("signature") or "") + str(
                delta.get("signature") or ""
            )
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta.get("citation")]
        return ""

    def _input(self, index: int, block: Mapping[str, Any]) -> str:
        raw = "".join(self.json_parts.get(index, ()))
        if raw.strip():
            return raw
        given = block.get("input")
        return json.dumps(given) if isinstance(given, dict) and given else "{}"

    @property
    def complete(self) -> bool:
        """Whether the stream reached ``message_stop`` with a stop reason (else it was cut off)."""
        return self.stopped and self.stop_reason is not None

    def reply(self) -> ModelReply:
        texts: list[str] = []
        calls: list[ToolCall] = []
        layout: list[dict[str, Any]] = []
        opaque = False
        for index in sorted(self.blocks):
            block = self.blocks[index]
            kind = block.get("type")
            if kind == "text":
                text = str(block.get("text") or "")
                texts.append(text)
                kept = {k: v for k, v in block.items() if k != "text"}
                layout.append({**kept, "chars": len(text)})
                opaque = opaque or len(kept) > 1
            elif kind == "tool_use":
                raw = self._input(index, block)
                parsed, problem = parse_arguments(raw)
                call_id = str(block.get("id") or f"toolu_{index}")
                calls.append(
                    ToolCall(
                        id=call_id,
                        name=str(block.get("name") or ""),
                        arguments_json=raw,
                        arguments=parsed,
                        arguments_error=problem,
                    )
                )
                layout.append({"type": "tool_use", "id": call_id})
            else:
                if index in self.json_parts:  # server_tool_use and the like: input streamed too
                    parsed, _ = parse_arguments(self._input(index, block))
                    block = {**block, "input": parsed if parsed is not None else {}}
                layout.append(block)
                opaque = True
        text = "".join(texts)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json},
                }
                for c in calls
            ]
        if opaque:
            message[CONTENT_KEY] = layout
        read = self.usage.get("cache_read_input_tokens", 0)
        written = self.usage.get("cache_creation_input_tokens", 0)
        input_tokens = self.usage.get("input_tokens", 0) + read + written
        output_tokens = self.usage.get("output_tokens", 0)
        finish = (
            None if self.stop_reason is None else _FINISH.get(self.stop_reason, self.stop_reason)
        )
        return ModelReply(
            text=text,
            tool_calls=calls,
            usage=Usage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                total_tokens=input_tokens + output_tokens,
            ),
            finish_reason=finish,
            assistant_message=message,
        )


def _event_dict(event: object) -> dict[str, Any]:
    dump = getattr(event, "model_dump", None)
    if dump is None:  # pragma: no cover - the SDK's events are pydantic models
        return dict(cast(Mapping[str, Any], event))
    return cast(dict[str, Any], dump(mode="json", exclude_unset=True, warnings=False))
