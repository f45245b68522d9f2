"""Element-level tools: ``hover_index``, ``accessibility_snapshot``, ``get_event_listeners``;
and :func:`register_more_tools`, which adds every tool of this module and of
:mod:`~actors.tools.forms`, :mod:`~actors.tools.transfer` and :mod:`~actors.tools.hostside` to
a registry.

Index tools act on the numbers of the last ``inspect_page`` of the pinned tab; element handles
and the turn's browser come from :mod:`actors.tools.handles`, the upload tools from
:mod:`actors.tools.uploads`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field

from actors.tools.cdp import CdpSession
from actors.tools.handles import (
    GROUP,
    action_output,
    element_object,
    index_browser,
    release_handles,
    selector_object,
)
from actors.tools.registry import Registry
from actors.tools.secret_rule import name_is_secret
from actors.tools.shared import cut, untrusted
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput
from actors.tools.uploads import register_upload_tools

__all__ = ["register_inspect_tools", "register_more_tools"]

_SKIP_ROLES = {"generic", "none", "LineBreak", "presentation", "ignored", "LabelText"}
#: Never listed, nor their subtrees: a text field's inner editor repeats (and would leak) its value.
_PRUNE_ROLES = {"InlineTextBox"}
_TEXT_FIELDS = {"textbox", "searchbox", "spinbutton", "combobox"}
_AX_PROPS = ("focused", "checked", "pressed", "expanded", "selected", "disabled", "required")


def _ax_value(node: dict[str, Any], key: str) -> Any:
    return (node.get(key) or {}).get("value")


def _ax_line(node: dict[str, Any], depth: int) -> str | None:
    role = str(_ax_value(node, "role") or "")
    name = str(_ax_value(node, "name") or "").strip()
    if node.get("ignored") or (role in _SKIP_ROLES and not name):
        return None
    parts = ["  " * depth + (role or "?")]
    if name:
        parts.append(json.dumps(name[:200], ensure_ascii=False))
    value = _ax_value(node, "value")
    if value not in (None, ""):
        # Secrets are masked (protocol.md section 5): Chromium already shows password values
        # as bullets; card and CVC fields are recognised by their accessible name.
        shown = "••••" if name_is_secret(name) else str(value)[:200]
        parts.append(f"= {json.dumps(shown, ensure_ascii=False)}")
    for prop in node.get("properties", []):
        pname, pval = prop.get("name"), (prop.get("value") or {}).get("value")
        if pname in _AX_PROPS and pval not in (False, None, "false"):
            parts.append(pname if pval is True or pval == "true" else f"{pname}={pval}")
        elif pname == "level":
            parts.append(f"level={pval}")
    return " ".join(parts)


def ax_text(nodes: list[dict[str, Any]], max_chars: int) -> tuple[str, int, int]:
    """Compact indented text of an AX tree: ``(text, lines shown, lines left out)``."""
    by_id = {n["nodeId"]: n for n in nodes}
    roots = [n for n in nodes if not n.get("parentId") or n["parentId"] not in by_id]
    lines: list[str] = []
    size, dropped = 0, 0
    stack: list[tuple[dict[str, Any], int]] = [(r, 0) for r in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        role = _ax_value(node, "role")
        if role in _PRUNE_ROLES:
            continue
        line = _ax_line(node, depth)
        child_depth = depth if line is None else depth + 1
        if line is not None:
            if size + len(line) + 1 > max_chars:
                dropped += 1
            else:
                lines.append(line)
                size += len(line) + 1
        kids = [by_id[c] for c in node.get("childIds", []) if c in by_id]
        if role in _TEXT_FIELDS:
            kids = [k for k in kids if _ax_value(k, "role") not in {"StaticText", "generic"}]
        # A static text that only repeats its parent's name adds nothing.
        if line is not None and len(kids) == 1:
            only = kids[0]
            if _ax_value(only, "role") == "StaticText" and _ax_value(only, "name") == _ax_value(
                node, "name"
            ):
                kids = []
        stack.extend((k, child_depth) for k in reversed(kids))
    return "\n".join(lines), len(lines), dropped


class IndexArgs(ToolArgs):
    index: int = Field(ge=0, description="the element number from inspect_page")


class AxArgs(ToolArgs):
    max_chars: int = Field(default=12_000, ge=500, le=100_000)


class ListenerArgs(ToolArgs):
    selector: str | None = Field(default=None, description="CSS selector of the element")
    index: int | None = Field(default=None, ge=0, description="or its number from inspect_page")


def register_inspect_tools(reg: Registry) -> None:
    """Add ``hover_index``, ``upload_index``, ``upload_file`` (:mod:`actors.tools.uploads`),
    ``accessibility_snapshot`` and ``get_event_listeners`` to ``reg``."""

    @reg.register(
        "hover_index",
        "Move the mouse over element [index] (opens hover menus, shows tooltips). For a menu "
        "that opens only on hover: hover its button, inspect_page, then click_index the item.",
        IndexArgs,
        page_changing=True,
    )
    async def hover_index(args: IndexArgs, ctx: ToolContext) -> ToolOutput:
        browser = index_browser(ctx)
        return action_output(browser, await browser.page().hover_index(args.index, browser.token()))

    register_upload_tools(reg)

    @reg.register(
        "accessibility_snapshot",
        "The page's accessibility tree as indented text (role, name, value, states), size-bounded.",
        AxArgs,
        page_changing=False,
    )
    async def accessibility_snapshot(args: AxArgs, ctx: ToolContext) -> ToolOutput:
        res = await ctx.page().send("Accessibility.getFullAXTree", timeout=max(ctx.timeout, 30.0))
        text, shown, dropped = ax_text(res.get("nodes", []), args.max_chars)
        if dropped:
            text += f"\n[… {dropped} more nodes left out (size budget)]"
        return ToolOutput(
            content=untrusted(text or "(empty accessibility tree)"),
            summary=f"{shown} accessibility nodes",
        )

    @reg.register(
        "get_event_listeners",
        "The event listeners on an element (by CSS selector or inspect_page index): type, "
        "flags, script location and handler source.",
        ListenerArgs,
        page_changing=False,
    )
    async def get_event_listeners(args: ListenerArgs, ctx: ToolContext) -> ToolOutput:
        if (args.selector is None) == (args.index is None):
            raise ToolError("give exactly one of selector or index")
        cdp: CdpSession = ctx.page()
        label = args.selector or f"[{args.index}]"
        try:
            if args.index is not None:
                browser = index_browser(ctx)
                cdp = browser.page().cdp
                obj = await element_object(cdp, args.index, browser.token())
                backend = (await cdp.send("DOM.describeNode", {"objectId": obj}))["node"]
                main = await cdp.send(
                    "DOM.resolveNode",
                    {"backendNodeId": backend["backendNodeId"], "objectGroup": GROUP},
                )
                obj = str(main["object"]["objectId"])
            else:
                obj = await selector_object(cdp, args.selector or "", ctx.timeout)
            res = await cdp.send(
                "DOMDebugger.getEventListeners", {"objectId": obj}, timeout=ctx.timeout
            )
        finally:
            await release_handles(cdp)
        items = res.get("listeners", [])
        lines = []
        for it in items:
            flags = [f for f in ("useCapture", "passive", "once") if it.get(f)]
            where = f"script {it.get('scriptId')}:{it.get('lineNumber')}:{it.get('columnNumber')}"
            source = str((it.get("handler") or {}).get("description") or "")
            source = re.sub(r"\s+", " ", source)[:300]
            lines.append(
                f"{it.get('type')}{' (' + ', '.join(flags) + ')' if flags else ''} at {where}: "
                f"{source}"
            )
        return ToolOutput(
            content=untrusted(cut("\n".join(lines) or f"(no listeners on {label})", 20_000)),
            summary=f"{len(items)} listeners on {label}"[:200],
            data={"types": [it.get("type") for it in items]},
        )


def register_more_tools(reg: Registry) -> None:
    """Every tool of this module, :mod:`forms`, :mod:`transfer`, :mod:`download_tools` and
    :mod:`hostside`."""
    from actors.tools.download_tools import register_download_tools
    from actors.tools.forms import register_form_tools
    from actors.tools.hostside import register_host_tools
    from actors.tools.transfer import register_transfer_tools

    register_inspect_tools(reg)
    register_form_tools(reg)
    register_transfer_tools(reg)
    register_download_tools(reg)
    register_host_tools(reg)
