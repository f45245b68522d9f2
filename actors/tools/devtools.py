"""Devtools-like tools: console and network capture, cookies, storage, viewport and output.

``get_console_logs``, ``get_network_requests``, ``get_cookies``, ``set_cookie``, ``get_storage``,
``set_viewport``, ``screenshot`` and ``pdf_export``, with their argument models. Screenshots and
PDFs are saved in the files sandbox when there is one.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any, Literal

from pydantic import Field

from actors.tools.files import FileSandbox
from actors.tools.registry import Registry
from actors.tools.shared import (
    RING,
    TEXT_LIMIT,
    current_url,
    cut,
    evaluate,
    tab_monitor,
    untrusted,
)
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput

__all__ = [
    "ConsoleArgs",
    "CookiesArgs",
    "NetworkArgs",
    "PdfArgs",
    "ScreenshotArgs",
    "SetCookieArgs",
    "StorageArgs",
    "ViewportArgs",
    "register_devtools_tools",
]


# --- argument models ------------------------------------------------------------------------------


class ConsoleArgs(ToolArgs):
    level: str | None = Field(default=None, description="only this level (log, error, ...)")
    limit: int = Field(default=100, ge=1, le=RING)
    clear: bool = False


class NetworkArgs(ToolArgs):
    filter: str | None = Field(default=None, description="URL substring")
    limit: int = Field(default=50, ge=1, le=RING)
    clear: bool = False


class CookiesArgs(ToolArgs):
    url: str | None = Field(default=None, description="default: the current page")
    name: str | None = None


class SetCookieArgs(ToolArgs):
    name: str
    value: str
    url: str | None = Field(default=None, description="default: the current page")
    domain: str | None = None
    path: str | None = None
    secure: bool | None = None
    http_only: bool | None = None
    same_site: Literal["Strict", "Lax", "None"] | None = None
    expires: float | None = Field(default=None, description="seconds since the epoch")


class StorageArgs(ToolArgs):
    kind: Literal["local", "session"] = "local"
    key: str | None = None


class ViewportArgs(ToolArgs):
    width: int = Field(default=1280, ge=200, le=8000)
    height: int = Field(default=800, ge=200, le=8000)
    device_scale_factor: float = Field(default=1.0, gt=0, le=4)
    mobile: bool = False
    reset: bool = Field(default=False, description="remove the override")


class ScreenshotArgs(ToolArgs):
    full_page: bool = False
    selector: str | None = None
    format: Literal["png", "jpeg"] = "png"
    quality: int = Field(default=80, ge=10, le=100)


class PdfArgs(ToolArgs):
    landscape: bool = False
    file_name: str | None = None


# --- tools -------------------------------------------------------------------------------------


def _save(ctx: ToolContext, rel: str, data: bytes) -> str | None:
    if not isinstance(ctx.files, FileSandbox):
        return None
    return ctx.files.relative(ctx.files.write(rel, data))


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"


def register_devtools_tools(reg: Registry) -> None:
    """Add the console, network, cookie, storage, viewport, screenshot and PDF tools to ``reg``."""

    # --- console, network, cookies, storage -------------------------------------------------

    @reg.register(
        "get_console_logs",
        "Console messages and uncaught errors of the current tab "
        "(captured from the first call on).",
        ConsoleArgs,
        page_changing=False,
    )
    async def get_console_logs(args: ConsoleArgs, ctx: ToolContext) -> ToolOutput:
        mon = await tab_monitor(ctx, "Runtime")
        items = [e for e in mon.console if args.level is None or e["level"] == args.level]
        items = items[-args.limit :]
        if args.clear:
            mon.console.clear()
        lines = [f"[{e['level']}] {e['text'][:1000]}" for e in items]
        return ToolOutput(
            content=untrusted("\n".join(lines) or "(no console messages)"),
            summary=f"{len(items)} messages",
            data={"messages": items},
        )

    @reg.register(
        "get_network_requests",
        "Recent network requests of the current tab (captured from the first call on).",
        NetworkArgs,
        page_changing=False,
    )
    async def get_network_requests(args: NetworkArgs, ctx: ToolContext) -> ToolOutput:
        mon = await tab_monitor(ctx, "Network")
        items = [r for r in mon.requests.values() if not args.filter or args.filter in r["url"]]
        items = items[-args.limit :]
        if args.clear:
            mon.requests.clear()
        lines = [
            f"{r['method']} {r['status'] if r['status'] is not None else '…'} "
            f"{r['type']} {r['url']}" + (f" ({r['error']})" if r.get("error") else "")
            for r in items
        ]
        return ToolOutput(
            content=untrusted("\n".join(lines)) if lines else "(no requests captured yet)",
            summary=f"{len(items)} requests",
        )

    @reg.register(
        "get_cookies",
        "Cookies for the current page (or a URL): names, domains and flags; the user is asked "
        "every time. Values of httpOnly cookies are never shown.",
        CookiesArgs,
        page_changing=False,
        reads_secrets=True,
    )
    async def get_cookies(args: CookiesArgs, ctx: ToolContext) -> ToolOutput:
        url = args.url or await current_url(ctx)
        res = await ctx.page().send("Network.getCookies", {"urls": [url]}, timeout=ctx.timeout)
        cookies = [c for c in res.get("cookies", []) if not args.name or c["name"] == args.name]
        lines = [
            # httpOnly cookies are the ones page script may not read (session cookies): their
            # values never reach the model (a prompt-injected page plus navigate would leak them).
            f"{c['name']}="
            + (
                "(httpOnly: value not shown)"
                if c.get("httpOnly")
                else str(c.get("value", ""))[:200]
            )
            + f" (domain {c.get('domain')}, path {c.get('path')}"
            f"{', httpOnly' if c.get('httpOnly') else ''}{', secure' if c.get('secure') else ''})"
            for c in cookies
        ]
        return ToolOutput(
            content=untrusted("\n".join(lines)) if lines else "(no cookies)",
            summary=f"{len(cookies)} cookies",
            data={"names": [c["name"] for c in cookies]},
        )

    @reg.register(
        "set_cookie",
        "Set a cookie (default: for the current page).",
        SetCookieArgs,
        page_changing=True,
    )
    async def set_cookie(args: SetCookieArgs, ctx: ToolContext) -> ToolOutput:
        params: dict[str, Any] = {"name": args.name, "value": args.value}
        if args.domain is None:
            params["url"] = args.url or await current_url(ctx)
        elif args.url:
            params["url"] = args.url
        for key, value in (
            ("domain", args.domain),
            ("path", args.path),
            ("secure", args.secure),
            ("httpOnly", args.http_only),
            ("sameSite", args.same_site),
            ("expires", args.expires),
        ):
            if value is not None:
                params[key] = value
        res = await ctx.page().send(
            "Network.setCookie", params, page_changing=True, timeout=ctx.timeout
        )
        if res.get("success") is False:
            raise ToolError(f"the browser refused the cookie {args.name!r}")
        return ToolOutput(content=f"cookie {args.name} set", summary=f"cookie {args.name}")

    @reg.register(
        "get_storage",
        "Read localStorage or sessionStorage of the current page (the user is asked every time).",
        StorageArgs,
        page_changing=False,
        reads_secrets=True,
    )
    async def get_storage(args: StorageArgs, ctx: ToolContext) -> ToolOutput:
        store = f"{args.kind}Storage"
        key = json.dumps(args.key) if args.key is not None else "null"
        res = await evaluate(
            ctx.page(),
            f"""(() => {{ const k = {key};
          if (k !== null) return {{[k]: {store}.getItem(k)}};
          const o = {{}}; for (let i = 0; i < {store}.length; i++) {{
            const n = {store}.key(i); o[n] = {store}.getItem(n); }} return o; }})()""",
            timeout=ctx.timeout,
        )
        text = cut(json.dumps(res, ensure_ascii=False, indent=1), TEXT_LIMIT)
        return ToolOutput(content=untrusted(text), summary=f"{len(res)} {store} entries")

    # --- output and emulation ---------------------------------------------------------------

    @reg.register(
        "set_viewport", "Emulate a viewport size (or reset it).", ViewportArgs, page_changing=False
    )
    async def set_viewport(args: ViewportArgs, ctx: ToolContext) -> ToolOutput:
        if args.reset:
            await ctx.page().send("Emulation.clearDeviceMetricsOverride", timeout=ctx.timeout)
            return ToolOutput(content="viewport reset", summary="viewport reset")
        await ctx.page().send(
            "Emulation.setDeviceMetricsOverride",
            {
                "width": args.width,
                "height": args.height,
                "deviceScaleFactor": args.device_scale_factor,
                "mobile": args.mobile,
            },
            timeout=ctx.timeout,
        )
        size = f"{args.width}x{args.height}"
        return ToolOutput(content=f"viewport set to {size}", summary=f"viewport {size}")

    @reg.register(
        "screenshot",
        "Take a screenshot of the current tab (viewport, full page or one element).",
        ScreenshotArgs,
        page_changing=False,
    )
    async def screenshot(args: ScreenshotArgs, ctx: ToolContext) -> ToolOutput:
        cdp = ctx.page()
        params: dict[str, Any] = {"format": args.format}
        if args.format == "jpeg":
            params["quality"] = args.quality
        if args.selector:
            rect = await evaluate(
                cdp,
                f"""(() => {{
              const el = document.querySelector({json.dumps(args.selector)});
              if (!el) return null; el.scrollIntoView({{block: "center"}});
              const r = el.getBoundingClientRect();
              return {{x: r.left + scrollX, y: r.top + scrollY, width: r.width,
                       height: r.height}}; }})()""",
                timeout=ctx.timeout,
            )
            if not rect or rect["width"] <= 0 or rect["height"] <= 0:
                raise ToolError(f"no visible element matches {args.selector!r}")
            params |= {"clip": {**rect, "scale": 1}, "captureBeyondViewport": True}
        elif args.full_page:
            metrics = await cdp.send("Page.getLayoutMetrics", timeout=ctx.timeout)
            size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
            params |= {
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": size.get("width", 1280),
                    "height": min(size.get("height", 800), 16_000),
                    "scale": 1,
                },
                "captureBeyondViewport": True,
            }
        res = await cdp.send("Page.captureScreenshot", params, timeout=max(ctx.timeout, 30.0))
        data = str(res.get("data", ""))
        saved = await asyncio.to_thread(
            _save, ctx, f"screenshots/shot-{_stamp()}.{args.format}", base64.b64decode(data)
        )
        mime = "image/png" if args.format == "png" else "image/jpeg"
        text = "screenshot of the current tab" + (f", saved as {saved}" if saved else "")
        return ToolOutput(
            content=[
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}},
            ],
            summary=text,
            data={"file": saved},
        )

    @reg.register(
        "pdf_export",
        "Save the current page as a PDF in Browy's files folder.",
        PdfArgs,
        page_changing=False,
    )
    async def pdf_export(args: PdfArgs, ctx: ToolContext) -> ToolOutput:
        if not isinstance(ctx.files, FileSandbox):
            raise ToolError("no files folder to save the PDF in")
        res = await ctx.page().send(
            "Page.printToPDF",
            {
                "landscape": args.landscape,
                "printBackground": True,
            },
            timeout=max(ctx.timeout, 60.0),
        )
        name = args.file_name or f"pdf/page-{_stamp()}.pdf"
        if not name.lower().endswith(".pdf"):
            name += ".pdf"
        data = base64.b64decode(str(res.get("data", "")))
        saved = await asyncio.to_thread(_save, ctx, name, data)
        return ToolOutput(
            content=f"saved PDF as {saved} ({len(data)} bytes)",
            summary=f"PDF {saved}",
            data={"file": saved},
        )
