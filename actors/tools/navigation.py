"""Navigation, tab, waiting and scrolling tools.

``navigate`` (goto/back/forward/reload, waits for load), ``new_tab``, ``list_tabs``,
``switch_tab``, ``close_tab``, ``wait_for`` (selector, text, URL substring, network idle ->
WAIT_TIMEOUT) and ``scroll``, with their argument models.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Literal

from pydantic import Field

from actors.tools.cdp import CdpError, is_context_gone
from actors.tools.registry import Registry
from actors.tools.shared import (
    IDLE_MS,
    POLL,
    NoArgs,
    check_url,
    current_url,
    evaluate,
    loader_id,
    locate_element,
    tab_monitor,
    wait_first_document,
    wait_loaded,
)
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput
from messages.errors import BrowyError, ErrorCode

__all__ = [
    "CloseTabArgs",
    "NavigateArgs",
    "NewTabArgs",
    "ScrollArgs",
    "TabIdArgs",
    "WaitForArgs",
    "register_navigation_tools",
]


#: Scroll (``%s``: a statement, or nothing), wait for two animation frames so that the page's
#: scroll handlers ran (capped at 120 ms: rAF stalls in background tabs), then read the position.
_SCROLL_JS = """(async () => {
  %s
  await new Promise((done) => {
    const cap = setTimeout(done, 120);
    requestAnimationFrame(() => requestAnimationFrame(() => { clearTimeout(cap); done(); }));
  });
  return [scrollY, document.documentElement.scrollHeight, innerHeight];
})()"""


# --- argument models ------------------------------------------------------------------------------


class NavigateArgs(ToolArgs):
    url: str | None = Field(default=None, description="URL to open (http/https)")
    action: Literal["goto", "back", "forward", "reload"] = "goto"
    timeout: float = Field(default=20.0, gt=0, le=120, description="seconds to wait for load")


class NewTabArgs(ToolArgs):
    url: str | None = Field(default=None, description="URL to open in the new tab")
    active: bool = True
    timeout: float = Field(default=20.0, gt=0, le=120, description="seconds to wait for load")


class TabIdArgs(ToolArgs):
    tab_id: int = Field(description="tab id from list_tabs")


class CloseTabArgs(ToolArgs):
    tab_id: int | None = Field(default=None, description="tab id; default: the current tab")


class WaitForArgs(ToolArgs):
    selector: str | None = Field(default=None, description="CSS selector to appear (visible)")
    text: str | None = Field(default=None, description="text to appear in the page")
    url: str | None = Field(default=None, description="substring the URL must contain")
    network_idle: bool = Field(default=False, description="wait for no network activity")
    state: Literal["visible", "attached", "hidden"] = "visible"
    timeout: float = Field(default=10.0, gt=0, le=120, description="seconds")


class ScrollArgs(ToolArgs):
    direction: Literal["up", "down", "top", "bottom"] = "down"
    amount: int | None = Field(default=None, description="pixels; default: most of a screen")
    selector: str | None = Field(default=None, description="scroll this element into view")


# --- tools -------------------------------------------------------------------------------------


def _tab_line(t: dict[str, Any], pinned: int | None) -> str:
    mark = "*" if t.get("tabId") == pinned else " "
    active = " (active)" if t.get("active") else ""
    title = json.dumps(str(t.get("title", ""))[:80])
    return f"{mark} [{t.get('tabId')}] {title} {t.get('url', '')}{active}"


def _tabs(ctx: ToolContext) -> Any:
    if ctx.tabs is None:
        raise ToolError("tab operations are not available here", code=ErrorCode.NO_CAPABILITY)
    return ctx.tabs


def register_navigation_tools(reg: Registry) -> None:
    """Add the navigation, tab, waiting and scrolling tools to ``reg``."""

    # --- navigation and tabs --------------------------------------------------------------

    @reg.register(
        "navigate",
        "Open a URL in the current tab, or go back/forward/reload; waits for the page to load.",
        NavigateArgs,
        page_changing=True,
    )
    async def navigate(args: NavigateArgs, ctx: ToolContext) -> ToolOutput:
        cdp = ctx.page()
        deadline = time.monotonic() + args.timeout
        before = await loader_id(cdp)
        new_loader: str | None = None
        if args.action == "goto":
            if not args.url:
                raise ToolError("url is required for action 'goto'")
            url = check_url(args.url, allow_file=ctx.policy.allow_file_urls)
            res = await cdp.send(
                "Page.navigate",
                {"url": url},
                page_changing=True,
                timeout=max(ctx.timeout, args.timeout),
            )
            if res.get("errorText"):
                raise ToolError(f"navigation to {url} failed: {res['errorText']}")
            new_loader = res.get("loaderId")
            if new_loader is None:  # same-document navigation (#hash)
                before = None
        elif args.action == "reload":
            await cdp.send("Page.reload", {}, page_changing=True, timeout=ctx.timeout)
        else:
            hist = await cdp.send("Page.getNavigationHistory", timeout=ctx.timeout)
            idx = int(hist.get("currentIndex", 0)) + (-1 if args.action == "back" else 1)
            entries = hist.get("entries", [])
            if not 0 <= idx < len(entries):
                raise ToolError(f"there is no page to go {args.action} to")
            check_url(str(entries[idx].get("url", "")), allow_file=ctx.policy.allow_file_urls)
            await cdp.send(
                "Page.navigateToHistoryEntry",
                {"entryId": entries[idx]["id"]},
                page_changing=True,
                timeout=ctx.timeout,
            )
        href, title, ready, committed = await wait_loaded(
            cdp, deadline=deadline, new_loader=new_loader, old_loader=before
        )
        note = "" if ready == "complete" else f" (still {ready} after {args.timeout:g}s)"
        if not committed:
            note = f" (the navigation started but had not committed after {args.timeout:g}s)"
        return ToolOutput(
            content=f"{args.action}: now at {href} (title {json.dumps(title)}){note}",
            summary=f"{args.action} {href}"[:200],
            data={"url": href, "title": title, "readyState": ready},
        )

    @reg.register(
        "new_tab",
        "Open a new tab (with a URL) and make it the current tab; waits for the page to load.",
        NewTabArgs,
        page_changing=True,
    )
    async def new_tab(args: NewTabArgs, ctx: ToolContext) -> ToolOutput:
        tabs = _tabs(ctx)
        url = check_url(args.url, allow_file=ctx.policy.allow_file_urls) if args.url else None
        # Pass the URL to tab.new: never open about:blank and navigate after (protocol.md 3).
        deadline = time.monotonic() + args.timeout
        info = await tabs.new(url, active=args.active)
        tab_id = info.get("tabId")
        shown, note = info.get("url") or url or "", ""
        if isinstance(tab_id, int):
            ctx.cdp = tabs.session(tab_id)
            if url and url != "about:blank":
                # As navigate: the next tool sees the page, not the tab's empty first document.
                try:
                    href, title, ready, committed = await wait_first_document(
                        ctx.cdp, deadline=deadline
                    )
                except BrowyError as exc:
                    # The tab is open whatever its page does: never an error (the model would
                    # open it again). An error page, one the browser will not drive, a dialog.
                    note = f" (opened; the page cannot be read: {exc.message})"
                else:
                    if committed:
                        shown = f"{href or shown} (title {json.dumps(title)})"
                    if href.startswith("chrome-error:"):
                        shown = f"{url} could not be loaded (the browser shows an error page)"
                    elif not committed:
                        note = f" (the page had not committed after {args.timeout:g}s)"
                    elif ready != "complete":
                        note = f" (still {ready} after {args.timeout:g}s)"
        return ToolOutput(
            content=f"opened tab {tab_id}: {shown}{note}",
            summary=f"new tab {url or ''}",
            data=info,
        )

    @reg.register(
        "list_tabs", "List the open tabs (* marks the current one).", NoArgs, page_changing=False
    )
    async def list_tabs(args: NoArgs, ctx: ToolContext) -> ToolOutput:
        tabs = await _tabs(ctx).list()
        pinned = getattr(ctx.cdp, "tab_id", None)
        return ToolOutput(
            content="\n".join(_tab_line(t, pinned) for t in tabs) or "(no tabs)",
            summary=f"{len(tabs)} tabs",
            data={"tabs": tabs},
        )

    @reg.register(
        "switch_tab", "Focus a tab and make it the current tab.", TabIdArgs, page_changing=False
    )
    async def switch_tab(args: TabIdArgs, ctx: ToolContext) -> ToolOutput:
        tabs = _tabs(ctx)
        info = await tabs.activate(args.tab_id)
        ctx.cdp = tabs.session(args.tab_id)
        return ToolOutput(
            content=f"now on tab {args.tab_id}: {info.get('url', '')}", summary=f"tab {args.tab_id}"
        )

    @reg.register(
        "close_tab", "Close a tab (default: the current one).", CloseTabArgs, page_changing=True
    )
    async def close_tab(args: CloseTabArgs, ctx: ToolContext) -> ToolOutput:
        tabs = _tabs(ctx)
        pinned = getattr(ctx.cdp, "tab_id", None)
        tab_id = args.tab_id if args.tab_id is not None else pinned
        if tab_id is None:
            raise ToolError("no tab to close")
        await tabs.close(tab_id)
        ctx.state.get("browser.monitors", {}).pop(tab_id, None)
        note = ""
        if tab_id == pinned:
            active = await tabs.active()
            ctx.cdp = tabs.session(active["tabId"]) if active else None
            note = f"; current tab is now {active.get('tabId')}" if active else ""
        return ToolOutput(content=f"closed tab {tab_id}{note}", summary=f"closed tab {tab_id}")

    # --- waiting and scrolling ------------------------------------------------------------

    @reg.register(
        "wait_for",
        "Wait until a selector, text or URL appears, or the network is idle.",
        WaitForArgs,
        page_changing=False,
    )
    async def wait_for(args: WaitForArgs, ctx: ToolContext) -> ToolOutput:
        cdp = ctx.page()
        if not (args.selector or args.text or args.url or args.network_idle):
            raise ToolError("give at least one of selector, text, url, network_idle")
        mon = await tab_monitor(ctx, "Network") if args.network_idle else None
        cond = json.dumps(
            {"selector": args.selector, "text": args.text, "url": args.url, "state": args.state}
        )
        expr = f"""(() => {{
          const c = {cond};
          if (c.url && !location.href.includes(c.url)) return false;
          if (c.text && !(document.body && document.body.innerText.includes(c.text))) return false;
          if (c.selector) {{
            const el = document.querySelector(c.selector);
            const r = el && el.getBoundingClientRect();
            const vis = !!el && r.width > 0 && r.height > 0 &&
              getComputedStyle(el).visibility !== "hidden";
            if (c.state === "attached" && !el) return false;
            if (c.state === "visible" && !vis) return false;
            if (c.state === "hidden" && vis) return false;
          }}
          return true;
        }})()"""
        deadline = time.monotonic() + args.timeout
        while True:
            try:
                ok = bool(await evaluate(cdp, expr, timeout=ctx.timeout))
            except CdpError as exc:
                if not is_context_gone(exc):
                    raise
                ok = False  # the document is being replaced; look again
            if ok and mon is not None:
                quiet = (time.monotonic() - mon.last_network) * 1000 >= IDLE_MS
                ok = not mon.inflight and quiet
            if ok:
                href = await current_url(ctx)
                return ToolOutput(content=f"condition met; page {href}", summary="condition met")
            if time.monotonic() >= deadline:
                raise ToolError(
                    f"the condition was not met within {args.timeout:g}s",
                    code=ErrorCode.WAIT_TIMEOUT,
                )
            await asyncio.sleep(POLL)

    @reg.register(
        "scroll",
        "Scroll the page up/down/top/bottom, or an element into view.",
        ScrollArgs,
        page_changing=False,
        retry_on_timeout=False,
    )
    async def scroll(args: ScrollArgs, ctx: ToolContext) -> ToolOutput:
        js = ""
        if args.selector:
            await locate_element(ctx, args.selector)  # scrolls it to the centre
        else:
            amount = args.amount if args.amount is not None else "innerHeight * 0.85"
            js = {
                "down": f"window.scrollBy(0, {amount});",
                "up": f"window.scrollBy(0, -({amount}));",
                "top": "window.scrollTo(0, 0);",
                "bottom": "window.scrollTo(0, document.documentElement.scrollHeight);",
            }[args.direction]
        # Scroll events fire on the next frame and pages render on them (virtualised lists,
        # infinite scroll): wait for two frames (capped) so that what comes next sees the result.
        pos = await evaluate(ctx.page(), _SCROLL_JS % js, timeout=ctx.timeout)
        y, total, view = pos
        return ToolOutput(
            content=f"scrolled; now at y={y:.0f} of {total} (viewport {view})",
            summary=f"scroll {args.selector or args.direction}",
        )
