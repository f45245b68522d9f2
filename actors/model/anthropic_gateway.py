"""The Anthropic gateway: :class:`ModelGateway`'s interface over Anthropic's Messages API.

Reached through the optional ``anthropic`` SDK (``pip install 'browy-host[anthropic]'``) with its
own retries off (``max_retries=0``): the retry, timeout and error rules are the ones of
:mod:`actors.model.openai_gateway` (:func:`~actors.model.retry.run_attempts`,
:func:`~actors.model.retry.status_failure`). ``ModelSettings.base_url`` is the API root
(``https://api.anthropic.com``); a trailing ``/v1`` is dropped, as the SDK adds it.

The conversation stays in OpenAI chat format (what the store keeps); each request converts it:

- ``system`` / ``developer`` messages: joined (blank line between) into the ``system`` parameter;
- ``user`` messages: text blocks; ``image_url`` parts become ``image`` blocks (a ``data:`` URL a
  ``base64`` source, any other URL a ``url`` source); Anthropic blocks pass through as they are;
- ``assistant`` messages: a text block for ``content`` and a ``tool_use`` block
  ``{id, name, input}`` per entry of ``tool_calls`` (``input``: the parsed arguments, ``{}`` when
  they are not a JSON object). When the message carries :data:`CONTENT_KEY` (this gateway put it
  there, the store echoes it), its layout is followed instead: blocks of other types
  (``thinking`` with its ``signature``, ``redacted_thinking``, ...) are re-sent exactly as
  received, in their place; the text and tool_use slots are filled from ``content`` and
  ``tool_calls``, so a masked argument or redacted text stays masked;
- consecutive ``tool`` messages: one user message of ``tool_result`` blocks ``{tool_use_id,
  content}`` (content parts converted like user content);
- consecutive messages with the same role are merged into one (the API wants turns to alternate)
  and empty text is left out (the API rejects empty text blocks);
- tools ``{"type": "function", "function": {name, description, parameters}}`` become
  ``{name, description, input_schema}``; other tool entries pass through unchanged.

The reply: streamed text goes to ``on_text``; ``tool_use`` input is reassembled from its
``input_json_delta`` fragments; ``finish_reason`` is mapped (``end_turn``/``stop_sequence`` ->
``stop``, ``tool_use`` -> ``tool_calls``, ``max_tokens`` -> ``length``, others as they are);
``usage.input_tokens`` includes cache reads and writes. ``assistant_message`` is OpenAI format
plus, when the answer had blocks of other types than text and tool_use, :data:`CONTENT_KEY`: the
blocks in order, text as ``{"type": "text", "chars": N}`` and tool_use as ``{"type":
"tool_use", "id": ...}`` slots (so the journal holds no second, unmasked copy of them).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, cast

import anthropic

from actors.model.retry import AttemptFailed, provider_detail, run_attempts, status_failure
from actors.model.types import (
    AuthState,
    ModelError,
    ModelInfo,
    ModelReply,
    ModelSettings,
    TextSink,
    ToolCall,
    Usage,
    parse_arguments,
)
from messages.errors import ErrorCode

__all__ = [
    "CONTENT_KEY",
    "AnthropicGateway",
    "convert_messages",
    "convert_tools",
]

log = logging.getLogger(__name__)

#: The assistant-message key holding the answer's Anthropic block layout (see the docstring).
CONTENT_KEY = "anthropic_content"

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# Blocks the SDK's user-content types accept as they are (already in Anthropic's format).
_ANTHROPIC_USER_BLOCKS = frozenset({"text", "image", "document", "tool_result", "search_result"})


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's errors: a stream cut mid-body raises them unwrapped (the SDK uses
    ``httpx`` or, in its newer versions, ``httpx2``)."""
    found: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError):
            found.append(importlib.import_module(name).HTTPError)
    return tuple(found)


_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    anthropic.APIConnectionError,
    *_transport_errors(),
)
_LIST_ERRORS: tuple[type[BaseException], ...] = (
    anthropic.APIError,
    TimeoutError,
    *_CONNECTION_ERRORS,
)


# -- OpenAI format -> Anthropic ---------------------------------------------------------------


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text") or "")
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "input_text", None)
        )
    return ""


def _image_block(part: Mapping[str, Any]) -> dict[str, Any] | None:
    ref = part.get("image_url")
    url = ref.get("url") if isinstance(ref, dict) else ref
    if not isinstance(url, str) or not url:
        return None
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type, _, encoding = header.removeprefix("data:").partition(";")
        if encoding != "base64" or not data:
            return None
        source = {"type": "base64", "media_type": media_type or "image/png", "data": data}
        return {"type": "image", "source": source}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _content_blocks(content: object) -> list[dict[str, Any]]:
    """User or tool-result content (a string or OpenAI content parts) as Anthropic blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text"):
            if part.get("text"):
                blocks.append({"type": "text", "text": str(part["text"])})
        elif kind == "image_url":
            image = _image_block(part)
            if image is not None:
                blocks.append(image)
        elif kind in _ANTHROPIC_USER_BLOCKS:
            blocks.append(dict(part))
    return blocks


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    parsed, _ = parse_arguments(arguments if isinstance(arguments, str) else "")
    return {
        "type": "tool_use",
        "id": str(call.get("id") or ""),
        "name": str(function.get("name") or ""),
        "input": parsed if parsed is not None else {},
    }


def _split_text(text: str, sizes: list[object]) -> list[str]:
    """*text* cut into the recorded text-block sizes; all of it in the first slot when the
    sizes do not add up (the store changed the text, e.g. redacted it)."""
    if not sizes:
        return []
    if all(isinstance(n, int) and n >= 0 for n in sizes) and sum(cast(list[int], sizes)) == len(
        text
    ):
        pieces, at = [], 0
        for n in cast(list[int], sizes):
            pieces.append(text[at : at + n])
            at += n
        return pieces
    return [text] + [""] * (len(sizes) - 1)


def _assistant_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    text = _text_of(message.get("content"))
    calls = [c for c in message.get("tool_calls") or () if isinstance(c, dict)]
    layout = message.get(CONTENT_KEY)
    if not isinstance(layout, list):
        blocks = [{"type": "text", "text": text}] if text else []
        return blocks + [_tool_use(c) for c in calls]
    by_id = {c.get("id"): c for c in calls}
    slots = [b for b in layout if isinstance(b, dict) and b.get("type") == "text"]
    pieces = _split_text(text, [b.get("chars") for b in slots])
    blocks = []
    placed: set[object] = set()
    for block in layout:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            piece = pieces.pop(0)
            if piece:
                kept = {k: v for k, v in block.items() if k != "chars"}
                blocks.append({**kept, "text": piece})
        elif kind == "tool_use":
            call = by_id.get(block.get("id"))
            if call is not None and block.get("id") not in placed:
                placed.add(block.get("id"))
                blocks.append(_tool_use(call))
        else:
            blocks.append(block)  # thinking, redacted_thinking, ...: exactly as received
    if text and not slots:  # text the layout has no slot for: before the first tool_use
        at = next((n for n, b in enumerate(blocks) if b["type"] == "tool_use"), len(blocks))
        blocks.insert(at, {"type": "text", "text": text})
    blocks.extend(_tool_use(c) for c in calls if c.get("id") not in placed)
    return blocks


def _tool_result(message: Mapping[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(message.get("tool_call_id"))}
    content = message.get("content")
    if isinstance(content, list):
        parts = [b for b in _content_blocks(content) if b["type"] in ("text", "image")]
        if parts:
            block["content"] = parts
    elif content:
        block["content"] = str(content)
    return block


def convert_messages(
    messages: Iterable[Mapping[str, Any]],
) -> tuple[str | None, list[dict[str, Any]]]:
    """An OpenAI-format conversation as Anthropic's ``(system, messages)`` (module docstring)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            text = _text_of(message.get("content"))
            if text:
                system.append(text)
        elif role == "user":
            push("user", _content_blocks(message.get("content")))
        elif role == "assistant":
            push("assistant", _assistant_blocks(message))
        elif role == "tool":
            push("user", [_tool_result(message)])
    return ("\n\n".join(system) or None), out


def convert_tools(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function tools as Anthropic tools (other entries unchanged)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        function = tool.get("function")
        if tool.get("type") != "function" or not isinstance(function, dict):
            out.append(dict(tool))
            continue
        converted: dict[str, Any] = {"name": function["name"]}
        if function.get("description"):
            converted["description"] = function["description"]
        converted["input_schema"] = function.get("parameters") or _EMPTY_SCHEMA
        out.append(converted)
    return out


# -- the streamed answer ----------------------------------------------------------------------


class _Assembler:
    """Builds a :class:`ModelReply` from the stream's events, as plain dicts (pure, no I/O)."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def _note_usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            self.usage.update({k: v for k, v in usage.items() if isinstance(v, int)})

    def feed(self, event: Mapping[str, Any]) -> str:
        """Take one event; return the text it adds (may be empty)."""
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


# -- the gateway ------------------------------------------------------------------------------


class AnthropicGateway:
    """The Anthropic client, with :class:`~actors.model.openai_gateway.ModelGateway`'s interface."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self._client = anthropic.AsyncAnthropic(
            base_url=_api_root(settings.base_url),
            # Never let the SDK fall back to ANTHROPIC_API_KEY or a profile: keys come from config.
            api_key=settings.api_key or "no-key-configured",
            max_retries=0,
            timeout=anthropic.Timeout(
                connect=settings.connect_timeout,
                read=settings.stream_idle_timeout + 1.0,
                write=settings.connect_timeout,
                pool=settings.connect_timeout,
            ),
        )

    async def aclose(self) -> None:
        """Close the HTTP client (idempotent)."""
        await self._client.close()

    async def __aenter__(self) -> AnthropicGateway:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def stream_turn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink,
    ) -> ModelReply:
        """Call the model once, streaming text to *on_text*; return the whole answer.

        Raises :class:`ModelError`. Cancelling the calling task closes the HTTP stream before
        CancelledError propagates.
        """
        system, converted = convert_messages(messages)
        request: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": self.settings.max_output_tokens,
            "messages": converted,
            "stream": True,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = convert_tools(tools)
        if self.settings.extra_body:
            request["extra_body"] = dict(self.settings.extra_body)
        return await run_attempts(self.settings, lambda sink: self._attempt(request, sink), on_text)

    async def _attempt(
        self, request: dict[str, Any], sink: Callable[[str], Awaitable[None]]
    ) -> ModelReply:
        idle = self.settings.stream_idle_timeout
        assembler = _Assembler()
        try:
            stream = cast(
                "anthropic.AsyncStream[Any]", await self._client.messages.create(**request)
            )
            async with stream:  # closes the HTTP stream on every exit, cancellation included
                iterator = aiter(stream)
                while True:
                    try:
                        async with asyncio.timeout(idle):
                            event = await anext(iterator)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        error = ModelError(
                            "MODEL_ERROR",
                            f"The model stopped responding (no data for {idle:g} s).",
                            retryable=True,
                        )
                        raise AttemptFailed(error, retry=False) from None
                    piece = assembler.feed(_event_dict(event))
                    if piece:
                        await sink(piece)
        except anthropic.APIStatusError as exc:
            raise self._status_failure(exc) from None
        except anthropic.APITimeoutError as exc:
            log.info("model call timed out: %r", exc)
            error = ModelError(
                "MODEL_ERROR", "The model provider did not answer in time.", retryable=True
            )
            raise AttemptFailed(error, retry=True) from None
        except _CONNECTION_ERRORS as exc:
            log.info("model connection failed: %r (cause %r)", exc, exc.__cause__)
            error = ModelError(
                "MODEL_ERROR",
                f"Lost the connection to the model provider at {self.settings.base_url}.",
                retryable=True,
            )
            raise AttemptFailed(error, retry=True) from None
        except anthropic.APIError as exc:
            log.info("model stream failed: %r body=%r", exc, exc.body)
            error = ModelError(
                "MODEL_ERROR", "The model provider reported an error mid-answer.", retryable=True
            )
            raise AttemptFailed(error, retry=True) from None
        if not assembler.stopped or assembler.stop_reason is None:
            error = ModelError(
                "MODEL_ERROR", "The model's answer was cut off before its end.", retryable=True
            )
            raise AttemptFailed(error, retry=True)
        return assembler.reply()

    def _status_failure(self, exc: anthropic.APIStatusError) -> AttemptFailed:
        if exc.status_code < 400:  # an ``event: error`` inside a 200 stream (e.g. overloaded)
            detail = provider_detail(exc.body)
            log.info("model stream reported an error: %s", detail)
            error = ModelError(
                "MODEL_ERROR",
                "The model provider reported an error mid-answer"
                + (f": {detail}" if detail else "."),
                retryable=True,
            )
            return AttemptFailed(error, retry=True)
        headers = {k.lower(): v for k, v in exc.response.headers.items()}
        return status_failure(self.settings, exc.status_code, headers, exc.body)

    async def list_models(self) -> list[ModelInfo]:
        """The provider's models (Anthropic lists chat models only)."""
        try:
            async with asyncio.timeout(
                self.settings.connect_timeout + self.settings.stream_idle_timeout
            ):
                listed = [m async for m in self._client.models.list()]
        except anthropic.APIStatusError as exc:
            raise self._status_failure(exc).error from None
        except _LIST_ERRORS as exc:
            log.info("models.list failed: %r", exc)
            raise ModelError(
                "MODEL_ERROR",
                f"Could not list the models of the provider at {self.settings.base_url}.",
                retryable=True,
            ) from None
        return [
            ModelInfo(id=m.id, name=str(getattr(m, "display_name", "") or m.id), vendor="anthropic")
            for m in listed
        ]

    async def check_auth(self) -> AuthState:
        """Ask the provider (``models.list``) whether the key works."""
        try:
            await self.list_models()
        except ModelError as exc:
            if exc.code is ErrorCode.AUTH:
                return AuthState(state="unauth", detail=exc.message)
            return AuthState(state="unknown", detail=exc.message)
        return AuthState(state="ready")


def _api_root(base_url: str) -> str:
    """The SDK wants the API root (it adds ``/v1/...``): drop a trailing ``/v1``."""
    return base_url.rstrip("/").removesuffix("/v1")
