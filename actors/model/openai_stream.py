"""Builds a :class:`~actors.model.types.ModelReply` from streamed chat-completion chunks.

:class:`ReplyAssembler` is pure (no I/O): it takes the chunks of an OpenAI-compatible stream one at
a time and collects the text, the tool calls (their arguments JSON arriving in pieces), the usage,
the finish reason and the provider-opaque fields.

Provider-opaque fields (reasoning text, signatures, ``extra_content`` ...) that a provider puts on
the streamed assistant delta or on a tool call are collected and put back on
:attr:`ModelReply.assistant_message`, so the next request echoes them exactly. Merging streamed
pieces: strings of the fields in :data:`FRAGMENT_FIELDS` and lists are concatenated; any other
value replaces the previous one (``null`` is ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

from actors.model.types import ModelReply, ToolCall, Usage, parse_arguments

__all__ = ["FRAGMENT_FIELDS", "ReplyAssembler"]

#: Provider fields streamed as text fragments (concatenated when merging deltas).
FRAGMENT_FIELDS = frozenset({"reasoning_content", "reasoning", "thinking"})


def _merge(into: dict[str, Any], extra: Mapping[str, Any] | None) -> None:
    for key, value in (extra or {}).items():
        if value is None:
            continue
        old = into.get(key)
        fragment = isinstance(old, str) and isinstance(value, str) and key in FRAGMENT_FIELDS
        if fragment or (isinstance(old, list) and isinstance(value, list)):
            into[key] = old + value
        else:
            into[key] = value


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class ReplyAssembler:
    """Builds a :class:`ModelReply` from streamed chunks (pure, no I/O)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.extra: dict[str, Any] = {}
        self.usage = Usage()
        self.finish_reason: str | None = None

    def feed(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; return the text it adds (may be empty)."""
        if chunk.usage is not None:
            self.usage = Usage(
                input_tokens=chunk.usage.prompt_tokens,
                output_tokens=chunk.usage.completion_tokens,
                total_tokens=chunk.usage.total_tokens,
            )
        added = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            added += (delta.content or "") + (delta.refusal or "")
            _merge(self.extra, delta.model_extra)
            for piece in delta.tool_calls or ():
                self._feed_call(piece)
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
        if added:
            self.text.append(added)
        return added

    def _feed_call(self, piece: ChoiceDeltaToolCall) -> None:
        call = self.calls.setdefault(piece.index, _PartialCall())
        if piece.id:
            call.id = piece.id
        if piece.function is not None:
            if piece.function.name:
                call.name += piece.function.name
            if piece.function.arguments:
                call.arguments.append(piece.function.arguments)
        _merge(call.extra, piece.model_extra)

    @property
    def complete(self) -> bool:
        """Whether a chunk gave the finish reason (else the stream was cut off)."""
        return self.finish_reason is not None

    def reply(self) -> ModelReply:
        text = "".join(self.text)
        calls = [_finish_call(n, self.calls[n]) for n in sorted(self.calls)]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        message.update(self.extra)
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json},
                    **c.extra,
                }
                for c in calls
            ]
        return ModelReply(
            text=text,
            tool_calls=calls,
            usage=self.usage,
            finish_reason=self.finish_reason,
            assistant_message=message,
        )


def _finish_call(index: int, call: _PartialCall) -> ToolCall:
    raw = "".join(call.arguments)
    parsed, problem = parse_arguments(raw)
    return ToolCall(
        id=call.id or f"call_{index}",
        name=call.name,
        arguments_json=raw,
        arguments=parsed,
        arguments_error=problem,
        extra=call.extra,
    )
