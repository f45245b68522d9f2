"""Input tools: keys, and mouse and keyboard actions on an element picked by a CSS selector.

``press_keys``, ``press_key``, ``hover``, ``click_element``, ``fill_input`` and
``select_option``, with their argument models. All change the page: the registry never retries
them (protocol.md section 5, "No replay").
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from actors.tools.keys import key_events
from actors.tools.registry import Registry
from actors.tools.shared import after_action, current_url, evaluate, locate_element
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput

__all__ = [
    "FillInputArgs",
    "PressKeyArgs",
    "PressKeysArgs",
    "SelectOptionArgs",
    "SelectorArgs",
    "register_action_tools",
]


# --- in-page snippets -----------------------------------------------------------------------------

_JS_FOCUS_SELECT = """
(() => {
  const el = document.querySelector(%s);
  if (!el) return {found: false};
  el.scrollIntoView({block: "center"});
  el.focus();
  let selected = false;
  try { if (typeof el.select === "function") { el.select(); selected = true; } } catch (e) {}
  if (!selected && el.isContentEditable) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const s = getSelection(); s.removeAllRanges(); s.addRange(range); selected = true;
  }
  if (!selected && "value" in el) {
    const proto = Object.getPrototypeOf(el);
    const setter = Object.getOwnPropertyDescriptor(proto, "value")?.set;
    if (setter) { setter.call(el, ""); el.dispatchEvent(new Event("input", {bubbles: true})); }
  }
  return {found: true, focused: document.activeElement === el,
          password: el.type === "password", tag: el.tagName.toLowerCase()};
})()
"""


async def _mouse(ctx: ToolContext, kind: str, x: float, y: float, buttons: int = 0) -> None:
    params: dict[str, Any] = {"type": kind, "x": x, "y": y, "buttons": buttons}
    if kind != "mouseMoved":
        params |= {"button": "left", "clickCount": 1}
    await ctx.page().send(
        "Input.dispatchMouseEvent", params, page_changing=True, timeout=ctx.timeout
    )


# --- argument models ------------------------------------------------------------------------------


class PressKeysArgs(ToolArgs):
    keys: list[str] | str = Field(
        description="key combos pressed in order, e.g. ['Ctrl+A', 'Backspace', 'Enter']"
    )


class PressKeyArgs(ToolArgs):
    key: str = Field(description="one key or combo: Enter, Tab, Escape, ArrowDown, Ctrl+A, a")
    repeat: int = Field(default=1, ge=1, le=50)


class SelectorArgs(ToolArgs):
    selector: str = Field(description="CSS selector")


class FillInputArgs(ToolArgs):
    selector: str = Field(description="CSS selector of an input, textarea or editable element")
    value: str = Field(description="text to type (replaces the current content)")
    press_enter: bool = False


class SelectOptionArgs(ToolArgs):
    selector: str = Field(description="CSS selector of a <select>")
    value: str = Field(description="option value or visible label")


def register_action_tools(reg: Registry) -> None:
    """Add the key and selector action tools to ``reg``."""

    # --- keys -------------------------------------------------------------------------------

    async def _press(ctx: ToolContext, combos: list[str]) -> None:
        events = [ev for combo in combos for ev in key_events(combo)]  # validate all first
        for ev in events:
            await ctx.page().send(
                "Input.dispatchKeyEvent", ev, page_changing=True, timeout=ctx.timeout
            )

    @reg.register(
        "press_keys",
        "Press keys in order (names like Enter, Tab, Escape, ArrowDown, combos like Ctrl+A). "
        "They go to the focused element, as a keyboard's do: focus it first (click_index or "
        "focus_index), then send chords like Ctrl+Enter or Ctrl+K.",
        PressKeysArgs,
        page_changing=True,
    )
    async def press_keys(args: PressKeysArgs, ctx: ToolContext) -> ToolOutput:
        combos = [args.keys] if isinstance(args.keys, str) else list(args.keys)
        before = await current_url(ctx)
        await _press(ctx, combos)
        note = await after_action(ctx, before)
        return ToolOutput(
            content=f"pressed {' '.join(combos)}{note}", summary=f"keys {' '.join(combos)}"[:200]
        )

    @reg.register(
        "press_key",
        "Press one key or combo (Enter, Tab, Escape, ArrowDown, Ctrl+A) on the focused element.",
        PressKeyArgs,
        page_changing=True,
    )
    async def press_key(args: PressKeyArgs, ctx: ToolContext) -> ToolOutput:
        before = await current_url(ctx)
        await _press(ctx, [args.key] * args.repeat)
        note = await after_action(ctx, before)
        return ToolOutput(
            content=f"pressed {args.key} x{args.repeat}{note}", summary=f"key {args.key}"
        )

    # --- selector actions -------------------------------------------------------------------

    @reg.register(
        "hover",
        "Move the mouse over the element matching a CSS selector.",
        SelectorArgs,
        page_changing=True,
    )
    async def hover(args: SelectorArgs, ctx: ToolContext) -> ToolOutput:
        el = await locate_element(ctx, args.selector)
        await _mouse(ctx, "mouseMoved", el["x"], el["y"])
        return ToolOutput(content=f"hovering {el['label']}", summary=f"hover {args.selector}")

    @reg.register(
        "click_element",
        "Click the element matching a CSS selector (real mouse events).",
        SelectorArgs,
        page_changing=True,
    )
    async def click_element(args: SelectorArgs, ctx: ToolContext) -> ToolOutput:
        el = await locate_element(ctx, args.selector)
        before = await current_url(ctx)
        await _mouse(ctx, "mouseMoved", el["x"], el["y"])
        await _mouse(ctx, "mousePressed", el["x"], el["y"], buttons=1)
        await _mouse(ctx, "mouseReleased", el["x"], el["y"])
        note = await after_action(ctx, before)
        cover = f"; note: {el['covered']} covers the element" if el.get("covered") else ""
        return ToolOutput(
            content=f"clicked {el['label']}{cover}{note}", summary=f"click {args.selector}"
        )

    @reg.register(
        "fill_input",
        "Replace the content of an input/textarea/editable element with text, typed like a user.",
        FillInputArgs,
        page_changing=True,
    )
    async def fill_input(args: FillInputArgs, ctx: ToolContext) -> ToolOutput:
        cdp = ctx.page()
        res = await evaluate(
            cdp,
            _JS_FOCUS_SELECT % json.dumps(args.selector),
            page_changing=True,
            timeout=ctx.timeout,
        )
        if not isinstance(res, dict) or not res.get("found"):
            raise ToolError(f"no element matches {args.selector!r}")
        if args.value:
            await cdp.send(
                "Input.insertText", {"text": args.value}, page_changing=True, timeout=ctx.timeout
            )
        else:
            await _press(ctx, ["Backspace"])
        await evaluate(
            cdp,
            f"document.querySelector({json.dumps(args.selector)})"
            "?.dispatchEvent(new Event('change', {bubbles: true}))",
            page_changing=True,
            timeout=ctx.timeout,
        )
        if args.press_enter:
            await _press(ctx, ["Enter"])
        # Secrets are typed but never echoed back (protocol.md section 5).
        shown = "(hidden)" if res.get("password") else f"{len(args.value)} characters"
        return ToolOutput(
            content=f"filled {args.selector} with {shown}", summary=f"fill {args.selector}"
        )

    @reg.register(
        "select_option",
        "Choose an option of a <select> by value or label.",
        SelectOptionArgs,
        page_changing=True,
    )
    async def select_option(args: SelectOptionArgs, ctx: ToolContext) -> ToolOutput:
        expr = f"""(() => {{
          const el = document.querySelector({json.dumps(args.selector)});
          if (!el) return {{error: "no element matches"}};
          if (el.tagName !== "SELECT") return {{error: "not a <select>"}};
          const want = {json.dumps(args.value)};
          const opt = Array.from(el.options).find(o => o.value === want) ||
            Array.from(el.options).find(o => o.label.trim() === want.trim()) ||
            Array.from(el.options).find(o => o.label.toLowerCase().includes(want.toLowerCase()));
          if (!opt) return {{error: "no option " + JSON.stringify(want),
            options: Array.from(el.options).slice(0, 30).map(o => o.label)}};
          el.value = opt.value; opt.selected = true;
          el.dispatchEvent(new Event("input", {{bubbles: true}}));
          el.dispatchEvent(new Event("change", {{bubbles: true}}));
          return {{label: opt.label, value: opt.value}};
        }})()"""
        res = await evaluate(ctx.page(), expr, page_changing=True, timeout=ctx.timeout)
        if not isinstance(res, dict) or res.get("error"):
            err = res.get("error") if isinstance(res, dict) else "failed"
            opts = res.get("options") if isinstance(res, dict) else None
            raise ToolError(f"{args.selector}: {err}" + (f"; options: {opts}" if opts else ""))
        return ToolOutput(
            content=f"selected {json.dumps(res['label'])} in {args.selector}",
            summary=f"select {res['label']}"[:200],
        )
