"""Element-level tools: ``hover_index``, ``upload_index``, ``upload_file``,
``accessibility_snapshot``, ``get_event_listeners``; and :func:`register_more_tools`, which adds
every tool of this module and of :mod:`~actors.tools.forms`, :mod:`~actors.tools.transfer` and
:mod:`~actors.tools.hostside` to a registry.

Index tools act on the numbers of the last ``inspect_page`` of the pinned tab. They find the turn's
browser in ``ctx.state["browser"]`` (:class:`actors.browser.tool_runner.TurnBrowser`, seen here
through the small :class:`IndexBrowser` protocol so this module does not import its caller), and its
document token: an index of another document gives ``STALE_REF`` (protocol.md section 5).

Element handles. ``snapshot.js`` keeps index -> element in the isolated world ``browy`` and hands
out no handles. Its ``focus(idx, token)`` calls ``el.focus()``; for the length of one evaluation we
replace ``focus`` on that world's own prototypes (an isolated world has its own JS wrappers, so the
page never sees it) and catch the element as ``this``. The remote object gives the backend node id
(``DOM.describeNode``) for ``DOM.setFileInputFiles`` and a main-world object (``DOM.resolveNode``)
for ``DOMDebugger.getEventListeners``. Handles are released with their object group.

Uploads take paths in the files sandbox only (:class:`actors.tools.files.FileSandbox.resolve`
refuses absolute paths, ``..`` and symlinks that lead out).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import Any, Protocol

from pydantic import Field

from actors.tools.cdp import CdpError, CdpSession
from actors.tools.files import FileSandbox
from actors.tools.page import ActionResult, PageTools
from actors.tools.page_types import _WORLD_NAME
from actors.tools.registry import Registry
from actors.tools.secret_rule import name_is_secret
from actors.tools.shared import cut, untrusted
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput
from messages.errors import ErrorCode

__all__ = ["IndexBrowser", "element_object", "register_inspect_tools", "register_more_tools"]

_GROUP = "browy-tools"
_SKIP_ROLES = {"generic", "none", "LineBreak", "presentation", "ignored", "LabelText"}
#: Never listed, nor their subtrees: a text field's inner editor repeats (and would leak) its value.
_PRUNE_ROLES = {"InlineTextBox"}
_TEXT_FIELDS = {"textbox", "searchbox", "spinbutton", "combobox"}
_AX_PROPS = ("focused", "checked", "pressed", "expanded", "selected", "disabled", "required")


class IndexBrowser(Protocol):
    """What the index tools need of the turn's browser (``TurnBrowser`` has it)."""

    tab_id: int | None
    tokens: dict[int, str]

    def page(self) -> PageTools: ...
    def token(self) -> str: ...


def _browser(ctx: ToolContext) -> IndexBrowser:
    browser = ctx.state.get("browser")
    if browser is None or not callable(getattr(browser, "token", None)):
        raise ToolError("this session may not drive tabs", code=ErrorCode.NO_CAPABILITY)
    result: IndexBrowser = browser
    return result


_JS_CATCH = """
((idx, tok) => {
  if (typeof __browy === 'undefined') throw new Error('STALE_REF: the page changed');
  __browy.info(idx, tok);
  let el = null;
  const protos = [HTMLElement.prototype, SVGElement.prototype];
  const saved = protos.map((p) => p.focus);
  for (const p of protos) p.focus = function () { el = this; };
  try { __browy.focus(idx, tok); } finally { protos.forEach((p, i) => { p.focus = saved[i]; }); }
  if (!el) throw new Error('NO_HANDLE: element [' + idx + '] is in a frame');
  if (el.tagName === 'LABEL' && el.control) el = el.control;
  return el;
})(%d, %s)
"""


async def element_object(cdp: CdpSession, index: int, token: str) -> str:
    """A remote object id (isolated world, group ``browy-tools``) of element ``index``."""
    tree = await cdp.send("Page.getFrameTree")
    frame_id = tree["frameTree"]["frame"]["id"]
    # Same name, same document -> the same world as inspect_page's (see actors.tools.page).
    world = await cdp.send(
        "Page.createIsolatedWorld", {"frameId": frame_id, "worldName": _WORLD_NAME}
    )
    res = await cdp.send(
        "Runtime.evaluate",
        {
            "expression": _JS_CATCH % (int(index), json.dumps(token)),
            "contextId": world["executionContextId"],
            "objectGroup": _GROUP,
        },
    )
    details = res.get("exceptionDetails")
    if details:
        text = str((details.get("exception") or {}).get("description") or details.get("text"))
        if "STALE_REF" in text:
            raise CdpError(ErrorCode.STALE_REF, text.splitlines()[0])
        raise ToolError(text.splitlines()[0][:300])
    return str(res["result"]["objectId"])


async def _release(cdp: CdpSession) -> None:
    with contextlib.suppress(CdpError):  # the document went away, and its objects with it
        await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": _GROUP})


async def _set_files(cdp: CdpSession, object_id: str, files: list[str], label: str) -> str:
    node = (await cdp.send("DOM.describeNode", {"objectId": object_id}))["node"]
    attrs = node.get("attributes", [])
    kind = dict(zip(attrs[::2], attrs[1::2], strict=False)).get("type", "").lower()
    if node.get("nodeName") != "INPUT" or kind != "file":
        raise ToolError(f"{label} is not a file input (<{node.get('localName')}>)")
    if len(files) > 1 and "multiple" not in attrs[::2]:
        raise ToolError(f"{label} takes one file; {len(files)} were given")
    await cdp.send(
        "DOM.setFileInputFiles",
        {"files": files, "backendNodeId": node["backendNodeId"]},
        page_changing=True,
    )
    return f"set {len(files)} file(s) on {label}"


async def _sandbox_paths(ctx: ToolContext, paths: list[str]) -> list[str]:
    if not isinstance(ctx.files, FileSandbox):
        raise ToolError("there is no files folder to upload from")
    box = ctx.files

    def check() -> list[str]:
        out = []
        for rel in paths:
            path = box.resolve(rel)  # refuses absolute paths, '..', links that lead out
            if not path.is_file():
                raise ToolError(f"no file {rel!r} in the files folder")
            out.append(str(path))
        return out

    return await asyncio.to_thread(check)


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


class UploadIndexArgs(IndexArgs):
    paths: list[str] = Field(min_length=1, description="files in Browy's files folder (relative)")


class UploadFileArgs(ToolArgs):
    selector: str = Field(description="CSS selector of an <input type=file>")
    paths: list[str] = Field(min_length=1, description="files in Browy's files folder (relative)")


class AxArgs(ToolArgs):
    max_chars: int = Field(default=12_000, ge=500, le=100_000)


class ListenerArgs(ToolArgs):
    selector: str | None = Field(default=None, description="CSS selector of the element")
    index: int | None = Field(default=None, ge=0, description="or its number from inspect_page")


def register_inspect_tools(reg: Registry) -> None:
    """Add ``hover_index``, ``upload_index``, ``upload_file``, ``accessibility_snapshot`` and
    ``get_event_listeners`` to ``reg``."""

    @reg.register(
        "hover_index",
        "Move the mouse over element [index] (opens hover menus, shows tooltips).",
        IndexArgs,
        page_changing=True,
    )
    async def hover_index(args: IndexArgs, ctx: ToolContext) -> ToolOutput:
        browser = _browser(ctx)
        result: ActionResult = await browser.page().hover_index(args.index, browser.token())
        text = result.to_text()
        if result.navigated and browser.tab_id is not None:
            browser.tokens.pop(browser.tab_id, None)
        if not result.ok:
            raise ToolError(text)
        return ToolOutput(content=untrusted(text), summary=text.splitlines()[0][:200])

    @reg.register(
        "upload_index",
        "Put files from Browy's files folder into the file input [index].",
        UploadIndexArgs,
        page_changing=True,
    )
    async def upload_index(args: UploadIndexArgs, ctx: ToolContext) -> ToolOutput:
        files = await _sandbox_paths(ctx, args.paths)
        browser = _browser(ctx)
        cdp = browser.page().cdp
        try:
            obj = await element_object(cdp, args.index, browser.token())
            text = await _set_files(cdp, obj, files, f"[{args.index}]")
        finally:
            await _release(cdp)
        return ToolOutput(content=text, summary=f"upload to [{args.index}]")

    @reg.register(
        "upload_file",
        "Put files from Browy's files folder into the file input matching a CSS selector.",
        UploadFileArgs,
        page_changing=True,
    )
    async def upload_file(args: UploadFileArgs, ctx: ToolContext) -> ToolOutput:
        files = await _sandbox_paths(ctx, args.paths)
        cdp = ctx.page()
        try:
            res = await cdp.send(
                "Runtime.evaluate",
                {
                    "expression": f"document.querySelector({json.dumps(args.selector)})",
                    "objectGroup": _GROUP,
                },
                timeout=ctx.timeout,
            )
            obj = res.get("result", {}).get("objectId")
            if res.get("exceptionDetails") or not obj:
                raise ToolError(f"no element matches {args.selector!r}")
            text = await _set_files(cdp, str(obj), files, args.selector)
        finally:
            await _release(cdp)
        return ToolOutput(content=text, summary=f"upload to {args.selector}"[:200])

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
                browser = _browser(ctx)
                cdp = browser.page().cdp
                obj = await element_object(cdp, args.index, browser.token())
                backend = (await cdp.send("DOM.describeNode", {"objectId": obj}))["node"]
                main = await cdp.send(
                    "DOM.resolveNode",
                    {"backendNodeId": backend["backendNodeId"], "objectGroup": _GROUP},
                )
                obj = str(main["object"]["objectId"])
            else:
                res = await cdp.send(
                    "Runtime.evaluate",
                    {
                        "expression": f"document.querySelector({json.dumps(args.selector)})",
                        "objectGroup": _GROUP,
                    },
                    timeout=ctx.timeout,
                )
                found = res.get("result", {}).get("objectId")
                if res.get("exceptionDetails") or not found:
                    raise ToolError(f"no element matches {args.selector!r}")
                obj = str(found)
            res = await cdp.send(
                "DOMDebugger.getEventListeners", {"objectId": obj}, timeout=ctx.timeout
            )
        finally:
            await _release(cdp)
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
