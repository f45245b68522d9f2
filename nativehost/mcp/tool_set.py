"""The tools as an MCP client sees them, and a call as the daemon runs it.

The daemon lists the tools a client's session may call (``tools.list``: the registry's argument
schemas, a title, and what each does); :class:`ToolSet` turns that list into MCP tools — the
same input schemas, and annotations set from what each tool does (``readOnlyHint``,
``destructiveHint``, ``openWorldHint``) — and checks a call's arguments against the schema before
anything is sent (:meth:`ToolSet.resolve`). With ``--tool-names playwright`` the set also
answers to Playwright MCP's names (:mod:`nativehost.mcp.playwright_names`).

:func:`mcp_content` turns what a tool returned (text, or OpenAI-style parts with ``data:`` image
URLs) into MCP content: text and image items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import jsonschema
import orjson
from mcp import types

from nativehost.mcp.playwright_names import ALIASES, BadArguments, translate

__all__ = [
    "CLIENT_DEFAULTS",
    "MAX_ARGS_BYTES",
    "Naming",
    "ToolError",
    "ToolSet",
    "UnknownTool",
    "mcp_content",
]

Naming = Literal["browy", "playwright"]

#: The largest arguments a call may carry, as JSON (a page's text fits; a stray file does not).
MAX_ARGS_BYTES = 256 * 1024


#: Arguments a client's call gets unless it says otherwise: a client's new tabs open in the
#: background, so the user's focus is never stolen.
CLIENT_DEFAULTS: dict[str, dict[str, Any]] = {"new_tab": {"active": False}}


class UnknownTool(LookupError):
    """No tool of that name is offered (an MCP protocol error, ``INVALID_PARAMS``)."""


class ToolError(ValueError):
    """A call refused before it is sent, with its stable code (an MCP tool error)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class _Entry:
    tool: types.Tool
    validator: jsonschema.Draft202012Validator
    browy_name: str | None  # None: a Playwright alias (translated at call time)


def _annotations(spec: dict[str, Any]) -> types.ToolAnnotations:
    read_only = bool(spec.get("readOnly"))
    return types.ToolAnnotations(
        title=spec.get("title") or None,
        read_only_hint=read_only,
        destructive_hint=False if read_only else bool(spec.get("destructive")),
        idempotent_hint=True if read_only else None,
        open_world_hint=bool(spec.get("openWorld", True)),
    )


def _entry(
    name: str, title: str | None, description: str, schema: dict[str, Any], spec: dict[str, Any]
) -> _Entry:
    jsonschema.Draft202012Validator.check_schema(schema)
    tool = types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=schema,
        annotations=_annotations(spec),
    )
    return _Entry(tool, jsonschema.Draft202012Validator(schema), None)


class ToolSet:
    """The tools of one client's session (see the module docstring)."""

    def __init__(self, specs: list[dict[str, Any]], naming: Naming = "browy") -> None:
        self._entries: dict[str, _Entry] = {}
        by_name = {str(s.get("name")): s for s in specs if s.get("name")}
        for name, spec in by_name.items():
            entry = _entry(
                name,
                spec.get("title"),
                str(spec.get("description") or ""),
                spec.get("inputSchema") or {"type": "object", "properties": {}},
                spec,
            )
            self._entries[name] = _Entry(entry.tool, entry.validator, name)
        if naming == "playwright":
            for alias in ALIASES.values():
                target = by_name.get(alias.tool)
                if target is None:
                    continue  # its Browy tool is not offered to this client
                title = alias.name.removeprefix("browser_").replace("_", " ").capitalize()
                self._entries[alias.name] = _entry(
                    alias.name, title, alias.description, alias.input_schema, target
                )

    def tools(self) -> list[types.Tool]:
        return [e.tool for e in self._entries.values()]

    def names(self) -> list[str]:
        return list(self._entries)

    def read_only(self, name: str) -> bool:
        """Does *name* (an MCP tool name) only read?"""
        entry = self._entries.get(name)
        hints = entry.tool.annotations if entry is not None else None
        return bool(hints is not None and hints.read_only_hint)

    def resolve(self, name: str, args: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        """The Browy tool and arguments for an MCP call, checked against its schema. Raises
        :class:`UnknownTool`, or :class:`ToolError` with the stable code ``INVALID_MESSAGE`` or
        ``MESSAGE_TOO_LARGE``. ``(SLEEP, {"seconds": s})`` is a pause the server takes itself."""
        entry = self._entries.get(name)
        if entry is None:
            raise UnknownTool(f"Unknown tool: {name}. Call tools/list for the tools offered.")
        args = dict(args or {})
        size = len(orjson.dumps(args))
        if size > MAX_ARGS_BYTES:
            raise ToolError(
                "MESSAGE_TOO_LARGE",
                f"the arguments of {name} are {size} bytes; at most {MAX_ARGS_BYTES} are taken",
            )
        problems = sorted(entry.validator.iter_errors(args), key=lambda e: list(e.path))
        if problems:
            said = "; ".join(
                f"{'/'.join(map(str, p.path)) or 'arguments'}: {p.message}" for p in problems[:5]
            )
            raise ToolError("INVALID_MESSAGE", f"invalid arguments for {name}: {said}")
        if entry.browy_name is not None:
            tool = entry.browy_name
        else:
            try:
                tool, args = translate(name, args)
            except BadArguments as exc:
                raise ToolError("INVALID_MESSAGE", f"invalid arguments for {name}: {exc}") from exc
        return tool, {**CLIENT_DEFAULTS.get(tool, {}), **args}


def mcp_content(
    content: str | list[dict[str, Any]],
) -> list[types.ContentBlock]:
    """What a tool returned, as MCP content (text items, and image items from ``data:`` URLs)."""
    if isinstance(content, str):
        return [types.TextContent(text=content)]
    out: list[types.ContentBlock] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            out.append(types.TextContent(text=str(part.get("text", ""))))
        elif kind == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            image = _data_url(url)
            if image is None:
                out.append(types.TextContent(text=f"[image: {url[:200]}]"))
            else:
                out.append(types.ImageContent(data=image[1], mime_type=image[0]))
    return out or [types.TextContent(text="")]


def _data_url(url: str) -> tuple[str, str] | None:
    """(mime type, base64 data) of a ``data:…;base64,…`` URL; None for anything else."""
    head, comma, data = url.partition(",")
    if not comma or not head.startswith("data:") or not head.endswith(";base64"):
        return None
    return head[len("data:") : -len(";base64")] or "application/octet-stream", data
