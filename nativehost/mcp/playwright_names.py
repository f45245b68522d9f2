"""``browy mcp --tool-names playwright``: Playwright MCP's core tool names and argument shapes.

Prompts and skills written for Playwright MCP call ``browser_navigate``, ``browser_snapshot``,
``browser_click {element, ref}``, ``browser_type`` … Each alias here is declared once as data: its
name, its description, its input schema, the Browy tool it runs and how its arguments become that
tool's. A Playwright ``ref`` is the element number of Browy's snapshot (``[3]``): ``"3"``,
``"[3]"`` and ``"e3"`` all mean element 3. ``element`` (Playwright's human description of the
target) is accepted and ignored — the ref decides.

An argument that does not translate is a clear tool error (``INVALID_MESSAGE``), never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ALIASES", "SLEEP", "Alias", "BadArguments", "translate"]


class BadArguments(ValueError):
    """The arguments of an alias do not translate (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class Alias:
    """One Playwright MCP name: its schema, the Browy tool it runs, and the translation."""

    name: str
    tool: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    convert: Callable[[dict[str, Any]], dict[str, Any]]

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
        }


_REF = re.compile(r"^\s*\[?\s*e?(\d+)\s*\]?\s*$")
_STR = {"type": "string"}
_TARGET = {
    "element": {**_STR, "description": "Human-readable description of the element"},
    "ref": {**_STR, "description": "The element's number from the page snapshot, e.g. 3"},
}


def _index(args: dict[str, Any], key: str = "ref") -> int:
    value = args.get(key)
    match = _REF.match(str(value)) if value is not None else None
    if match is None:
        raise BadArguments(f"{key}: {value!r} is not an element number from the snapshot")
    return int(match.group(1))


def _need(args: dict[str, Any], key: str) -> Any:
    if key not in args or args[key] is None:
        raise BadArguments(f"{key}: required")
    return args[key]


def _tabs(args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    action = args.get("action", "list")
    if action == "list":
        return "list_tabs", {}
    if action == "new":
        return "new_tab", {"url": args.get("url")} if args.get("url") else {}
    if action in ("close", "select"):
        if "index" not in args:
            return ("close_tab", {}) if action == "close" else ("list_tabs", {})
        raise BadArguments("index: use list first, then the tab's id with Browy's switch_tab")
    raise BadArguments(f"action: {action!r} is not list, new, close or select")


def _wait(args: dict[str, Any]) -> dict[str, Any]:
    if args.get("text"):
        return {"text": str(args["text"])}
    if args.get("textGone"):
        return {"text": str(args["textGone"]), "state": "hidden"}
    raise BadArguments("give one of text, textGone or time")


ALIASES: dict[str, Alias] = {
    a.name: a
    for a in (
        Alias("browser_navigate", "navigate", "Navigate to a URL", {"url": _STR}, ("url",),
              lambda a: {"url": str(_need(a, "url"))}),
        Alias("browser_navigate_back", "navigate", "Go back to the previous page", {}, (),
              lambda a: {"action": "back"}),
        Alias("browser_snapshot", "inspect_page",
              "Capture a snapshot of the current page: its interactive elements, numbered",
              {}, (), lambda a: {"scope": "all"}),
        Alias("browser_click", "click_index", "Click an element of the page",
              {**_TARGET, "doubleClick": {"type": "boolean"}}, ("ref",),
              lambda a: {"index": _index(a)}),
        Alias("browser_type", "type_index", "Type text into an editable element",
              {**_TARGET, "text": _STR, "submit": {"type": "boolean"},
               "slowly": {"type": "boolean"}}, ("ref", "text"),
              lambda a: {"index": _index(a), "text": str(_need(a, "text")),
                         "submit": bool(a.get("submit", False))}),
        Alias("browser_select_option", "select_index", "Select an option in a dropdown",
              {**_TARGET, "values": {"type": "array", "items": _STR}}, ("ref", "values"),
              lambda a: {"index": _index(a), "value": str((_need(a, "values") or [""])[0])}),
        Alias("browser_hover", "hover_index", "Hover over an element", dict(_TARGET), ("ref",),
              lambda a: {"index": _index(a)}),
        Alias("browser_press_key", "press_key", "Press a key on the keyboard", {"key": _STR},
              ("key",), lambda a: {"key": str(_need(a, "key"))}),
        Alias("browser_wait_for", "wait_for", "Wait for text to appear or disappear, or a time",
              {"time": {"type": "number"}, "text": _STR, "textGone": _STR}, (), _wait),
        Alias("browser_take_screenshot", "screenshot", "Take a screenshot of the current page",
              {"fullPage": {"type": "boolean"}, "type": {"enum": ["png", "jpeg"]}}, (),
              lambda a: {"full_page": bool(a.get("fullPage", False)),
                         "format": a.get("type") or "png"}),
        Alias("browser_console_messages", "get_console_logs", "The page's console messages",
              {}, (), lambda a: {}),
        Alias("browser_network_requests", "get_network_requests",
              "The page's network requests since it loaded", {}, (), lambda a: {}),
        Alias("browser_resize", "set_viewport", "Resize the page's viewport",
              {"width": {"type": "number"}, "height": {"type": "number"}}, ("width", "height"),
              lambda a: {"width": int(_need(a, "width")), "height": int(_need(a, "height"))}),
        Alias("browser_drag", "drag_index", "Drag and drop between two elements",
              {"startElement": _STR, "startRef": _STR, "endElement": _STR, "endRef": _STR},
              ("startRef", "endRef"),
              lambda a: {"index": _index(a, "startRef"), "to_index": _index(a, "endRef")}),
        Alias("browser_handle_dialog", "handle_dialog", "Handle a dialog",
              {"accept": {"type": "boolean"}, "promptText": _STR}, ("accept",),
              lambda a: {"accept": bool(_need(a, "accept")),
                         **({"text": str(a["promptText"])} if a.get("promptText") else {})}),
        Alias("browser_evaluate", "evaluate_js", "Evaluate a JavaScript function on the page",
              {"function": _STR}, ("function",),
              lambda a: {"code": f"return ({_need(a, 'function')})()"}),
    )
}  # fmt: skip

_TABS = Alias(
    "browser_tabs",
    "list_tabs",
    "List, open or close browser tabs",
    {"action": {"enum": ["list", "new", "close", "select"]}, "index": {"type": "number"}},
    ("action",),
    lambda a: {},
)
ALIASES[_TABS.name] = _TABS


#: Not a Browy tool: ``browser_wait_for {time}`` is a pause the MCP server takes itself.
SLEEP = "sleep"


def translate(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The Browy tool and arguments for a Playwright MCP call (``BadArguments`` if they do not
    translate; ``KeyError`` for a name that is not an alias). ``(SLEEP, {"seconds": s})`` is a
    plain wait."""
    if name == "browser_tabs":
        return _tabs(args)
    if name == "browser_wait_for" and not args.get("text") and not args.get("textGone"):
        seconds = args.get("time")
        if not isinstance(seconds, int | float) or not 0 <= seconds <= 60:
            raise BadArguments("time: a number of seconds from 0 to 60")
        return SLEEP, {"seconds": float(seconds)}
    alias = ALIASES[name]
    return alias.tool, alias.convert(args)
