"""Anthropic Messages API requests from the stored conversation (OpenAI chat format).

The conversation stays in OpenAI chat format (what the store keeps); each request to Anthropic
converts it (:func:`convert_messages`, :func:`convert_tools`):

- ``system`` / ``developer`` messages: joined (blank line between) into the ``system`` parameter;
- ``user`` messages: text blocks; ``image_url`` parts become ``image`` blocks (a ``data:`` URL a
  ``base64`` source, any other URL a ``url`` source); Anthropic blocks pass through as they are;
- ``assistant`` messages: a text block for ``content`` and a ``tool_use`` block
  ``{id, name, input}`` per entry of ``tool_calls`` (``input``: the parsed arguments, ``{}`` when
  they are not a JSON object). When the message carries
  :data:`~actors.model.anthropic_stream.CONTENT_KEY` (the answer's block layout, recorded by
  :mod:`actors.model.anthropic_stream`; the store echoes it), its layout is followed instead:
  blocks of other types (``thinking`` with its ``signature``, ``redacted_thinking``, ...) are
  re-sent exactly as received, in their place; the text and tool_use slots are filled from
  ``content`` and ``tool_calls``, so a masked argument or redacted text stays masked;
- consecutive ``tool`` messages: one user message of ``tool_result`` blocks ``{tool_use_id,
  content}`` (content parts converted like user content);
- consecutive messages with the same role are merged into one (the API wants turns to alternate)
  and empty text is left out (the API rejects empty text blocks);
- tools ``{"type": "function", "function": {name, description, parameters}}`` become
  ``{name, description, input_schema}``; other tool entries pass through unchanged.

:func:`messages_request` is the whole streamed request. Pure: no I/O, no SDK.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from actors.model.anthropic_stream import CONTENT_KEY
from actors.model.types import ModelSettings, parse_arguments

__all__ = ["convert_messages", "convert_tools", "messages_request"]

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# Blocks the SDK's user-content types accept as they are (already in Anthropic's format).
_ANTHROPIC_USER_BLOCKS = frozenset({"text", "image", "document", "tool_result", "search_result"})


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


def messages_request(
    settings: ModelSettings,
    messages: Iterable[Mapping[str, Any]],
    tools: Iterable[Mapping[str, Any]],
) -> dict[str, Any]:
    """The arguments of a streamed ``messages.create`` call for *messages* and *tools* (OpenAI
    format); ``max_tokens`` is required by the API."""
    system, converted = convert_messages(messages)
    request: dict[str, Any] = {
        "model": settings.model,
        "max_tokens": settings.max_output_tokens,
        "messages": converted,
        "stream": True,
    }
    if system:
        request["system"] = system
    converted_tools = convert_tools(tools)
    if converted_tools:
        request["tools"] = converted_tools
    if settings.extra_body:
        request["extra_body"] = dict(settings.extra_body)
    return request
