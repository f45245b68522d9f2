"""Browser tools over the pinned tab's ``CdpSession`` (``ctx.cdp``) and ``tab.*`` (``ctx.tabs``).

Tools registered by :func:`register_browser_tools` (names from protocol.md section 3b):

- navigation and tabs: ``navigate`` (goto/back/forward/reload, waits for load), ``new_tab``,
  ``list_tabs``, ``switch_tab``, ``close_tab``;
- waiting and moving: ``wait_for`` (selector, text, URL substring, network idle -> WAIT_TIMEOUT),
  ``scroll``, ``press_keys``, ``press_key``;
- selector actions and queries: ``hover``, ``click_element``, ``fill_input``, ``select_option``,
  ``query_dom``, ``find_visible_text``;
- reading: ``get_page_info``, ``extract_text``, ``get_page_html``, ``evaluate_js``,
  ``get_console_logs``, ``get_network_requests``, ``get_cookies``, ``get_storage``;
- writing and output: ``set_cookie``, ``set_viewport``, ``screenshot``, ``pdf_export``.

Page-changing tools (input, navigation, tab open/close, cookie writes, page scripts) are marked so:
the registry never retries them (protocol.md section 5, "No replay"). Only ``http:``/``https:``
(and ``file:`` when the policy allows) URLs are opened; others get NOT_ALLOWED_URL (section 5,
"URLs"). Page text is data, not instructions: text read from pages is wrapped in
``<untrusted_page_content>`` (architecture.md section 5).

Console and network capture: ``Runtime``/``Network`` are enabled per tab on first use of the tools
that need them, and their events (through the tab's ``subscribe``) fill bounded ring buffers kept in
``ctx.state``; the v1 extension forwards every event of attached tabs, so nothing is enabled before
it is needed (protocol.md section 2, ``cdp.event``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from actors.tools.cdp import CdpError, is_context_gone
from actors.tools.files import FileSandbox, register_file_tools
from actors.tools.registry import (
    Registry,
    TabSession,
    ToolArgs,
    ToolContext,
    ToolError,
    ToolOutput,
)
from messages.errors import ErrorCode

__all__ = [
    "JS_RESULT_LIMIT",
    "check_url",
    "default_registry",
    "key_events",
    "register_browser_tools",
]

#: evaluate_js results are JSON-truncated to this many characters.
JS_RESULT_LIMIT = 20_000
_TEXT_LIMIT = 20_000
_HTML_LIMIT = 50_000
_RING = 300
_POLL = 0.1
_IDLE_MS = 500


# --- helpers -------------------------------------------------------------------------------------


def check_url(url: str, *, allow_file: bool = False) -> str:
    """Normalise ``url`` (a bare host gets ``https://``) and refuse what Browy must not open."""
    url = url.strip()
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url) is None and re.match(r"^[\w.-]+\.\w+", url):
        url = "https://" + url
    scheme = url.split(":", 1)[0].lower()
    if scheme in {"http", "https"} or (scheme == "file" and allow_file):
        return url
    raise ToolError(
        f"NOT_ALLOWED_URL: {url[:100]!r}: only http(s) pages can be opened",
        code=ErrorCode.NOT_ALLOWED_URL,
    )


def _untrusted(text: str) -> str:
    return f"<untrusted_page_content>\n{text}\n</untrusted_page_content>"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… truncated: {len(text) - limit} more characters]"


async def _eval(
    cdp: TabSession,
    expression: str,
    *,
    page_changing: bool = False,
    timeout: float = 10.0,
    user_gesture: bool = False,
) -> Any:
    """Evaluate in the main world and return the JSON value; in-page exceptions -> ToolError."""
    res = await cdp.send(
        "Runtime.evaluate",
        {
            "expression": expression,
            "returnByValue": True,
            "awaitPromise": True,
            "userGesture": user_gesture,
        },
        page_changing=page_changing,
        timeout=timeout,
    )
    details = res.get("exceptionDetails")
    if details:
        exc = details.get("exception") or {}
        text = str(exc.get("description") or details.get("text") or "script error")
        raise ToolError(f"page script error: {text[:1000]}")
    return res.get("result", {}).get("value")


async def _page_state(cdp: TabSession) -> tuple[str, str, str]:
    try:
        value = await _eval(cdp, "[location.href, document.title, document.readyState]")
    except CdpError as exc:
        if is_context_gone(exc):
            return "", "", "loading"
        raise
    if not isinstance(value, list) or len(value) != 3:
        return "", "", "loading"
    return str(value[0]), str(value[1]), str(value[2])


async def _loader_id(cdp: TabSession) -> str | None:
    tree = await cdp.send("Page.getFrameTree")
    loader = tree.get("frameTree", {}).get("frame", {}).get("loaderId")
    return str(loader) if loader else None


async def _wait_loaded(
    cdp: TabSession,
    *,
    deadline: float,
    new_loader: str | None = None,
    old_loader: str | None = None,
) -> tuple[str, str, str, bool]:
    """Poll until the new document committed and ``readyState`` is complete, or the deadline.

    Returns ``(url, title, readyState, committed)``. Polling with a deadline: the v1 extension's
    event stream is not guaranteed to carry ``Page.lifecycleEvent`` for us.
    """
    committed = new_loader is None and old_loader is None
    href, title, ready = "", "", "loading"
    while True:
        if not committed:
            loader = await _loader_id(cdp)
            committed = (new_loader is not None and loader == new_loader) or (
                new_loader is None and loader != old_loader
            )
        if committed:
            href, title, ready = await _page_state(cdp)
            if ready == "complete":
                return href, title, ready, True
        if time.monotonic() >= deadline:
            if not href:
                href, title, ready = await _page_state(cdp)
            return href, title, ready, committed
        await asyncio.sleep(_POLL)


def _tab_key(cdp: TabSession) -> Any:
    tab_id = getattr(cdp, "tab_id", None)
    return tab_id if tab_id is not None else id(cdp)


@dataclass(slots=True)
class _Monitor:
    """Ring buffers of one tab's console and network events (fed by ``subscribe``)."""

    enabled: set[str] = field(default_factory=set)
    console: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=_RING))
    requests: OrderedDict[str, dict[str, Any]] = field(default_factory=OrderedDict)
    inflight: set[str] = field(default_factory=set)
    last_network: float = field(default_factory=time.monotonic)
    unsubscribe: Any = None

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.consoleAPICalled":
            parts = []
            for arg in params.get("args", []):
                if "value" in arg:
                    v = arg["value"]
                    parts.append(v if isinstance(v, str) else json.dumps(v))
                else:
                    parts.append(str(arg.get("description") or arg.get("type", "")))
            self.console.append({"level": params.get("type", "log"), "text": " ".join(parts)})
        elif method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            text = (d.get("exception") or {}).get("description") or d.get("text", "")
            self.console.append({"level": "exception", "text": str(text)})
        elif method.startswith("Network."):
            self._on_network(method, params)

    def _on_network(self, method: str, params: dict[str, Any]) -> None:
        rid = str(params.get("requestId", ""))
        self.last_network = time.monotonic()
        if method == "Network.requestWillBeSent":
            req = params.get("request", {})
            self.requests[rid] = {
                "method": req.get("method", ""),
                "url": str(req.get("url", ""))[:500],
                "type": params.get("type", ""),
                "status": None,
            }
            self.inflight.add(rid)
            while len(self.requests) > _RING:
                old, _ = self.requests.popitem(last=False)
                self.inflight.discard(old)
        elif method == "Network.responseReceived" and rid in self.requests:
            resp = params.get("response", {})
            self.requests[rid]["status"] = resp.get("status")
            self.requests[rid]["mime"] = resp.get("mimeType")
        elif method == "Network.loadingFinished":
            self.inflight.discard(rid)
        elif method == "Network.loadingFailed":
            self.inflight.discard(rid)
            if rid in self.requests:
                self.requests[rid]["error"] = params.get("errorText", "failed")


async def _monitor(ctx: ToolContext, domain: Literal["Runtime", "Network"]) -> _Monitor:
    """The tab's monitor, with ``domain`` enabled (once per tab) and events subscribed."""
    cdp = ctx.page()
    monitors: dict[Any, _Monitor] = ctx.state.setdefault("browser.monitors", {})
    mon = monitors.get(_tab_key(cdp))
    if mon is None:
        mon = _Monitor()
        # Subscribe before enabling: Runtime.enable replays stored console messages.
        mon.unsubscribe = cdp.subscribe(mon.on_event)
        monitors[_tab_key(cdp)] = mon
    if domain not in mon.enabled:
        await cdp.send(f"{domain}.enable", timeout=ctx.timeout)
        mon.enabled.add(domain)
    return mon


# --- keys -----------------------------------------------------------------------------------------

_NAMED_KEYS: dict[str, tuple[str, str, int, str]] = {
    # name: (key, code, windowsVirtualKeyCode, text)
    "Enter": ("Enter", "Enter", 13, "\r"),
    "Tab": ("Tab", "Tab", 9, ""),
    "Escape": ("Escape", "Escape", 27, ""),
    "Backspace": ("Backspace", "Backspace", 8, ""),
    "Delete": ("Delete", "Delete", 46, ""),
    "ArrowUp": ("ArrowUp", "ArrowUp", 38, ""),
    "ArrowDown": ("ArrowDown", "ArrowDown", 40, ""),
    "ArrowLeft": ("ArrowLeft", "ArrowLeft", 37, ""),
    "ArrowRight": ("ArrowRight", "ArrowRight", 39, ""),
    "Home": ("Home", "Home", 36, ""),
    "End": ("End", "End", 35, ""),
    "PageUp": ("PageUp", "PageUp", 33, ""),
    "PageDown": ("PageDown", "PageDown", 34, ""),
    "Space": (" ", "Space", 32, " "),
    "Insert": ("Insert", "Insert", 45, ""),
    **{f"F{n}": (f"F{n}", f"F{n}", 111 + n, "") for n in range(1, 13)},
}
_ALIASES = {
    "esc": "Escape",
    "return": "Enter",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "del": "Delete",
    "pgup": "PageUp",
    "pgdn": "PageDown",
    "space": "Space",
    " ": "Space",
    "spacebar": "Space",
}
_MODIFIERS = {
    "alt": 1,
    "option": 1,
    "ctrl": 2,
    "control": 2,
    "meta": 4,
    "cmd": 4,
    "command": 4,
    "super": 4,
    "shift": 8,
}
_COMMANDS = {"a": "selectAll", "c": "copy", "x": "cut", "v": "paste", "z": "undo"}


def key_events(combo: str) -> list[dict[str, Any]]:
    """The ``Input.dispatchKeyEvent`` params (down, up) for a combo like ``"Ctrl+Shift+K"``."""
    if combo in {"+", " "}:
        parts = [combo]
    else:
        parts = combo.split("+")
        if combo.endswith("++"):
            parts = [*parts[:-2], "+"]
    *mods, name = [p.strip() if p.strip() else p for p in parts]
    modifiers = 0
    for m in mods:
        bit = _MODIFIERS.get(m.lower())
        if bit is None:
            raise ToolError(f"unknown modifier {m!r} in {combo!r} (use Ctrl, Alt, Shift, Meta)")
        modifiers |= bit
    canon = _ALIASES.get(name.lower(), name)
    canon = next((k for k in _NAMED_KEYS if k.lower() == canon.lower()), canon)
    if canon in _NAMED_KEYS:
        key, code, vk, text = _NAMED_KEYS[canon]
    elif len(name) == 1:
        ch = name
        upper = ch.upper()
        key = upper if modifiers & 8 and ch.isalpha() else ch
        if ch.isalpha() and ch.isascii():
            code, vk = f"Key{upper}", ord(upper)
        elif ch.isdigit():
            code, vk = f"Digit{ch}", ord(ch)
        else:
            code, vk = "", 0
        text = key
    else:
        raise ToolError(f"unknown key {name!r}; use a character or a name like Enter, Tab, Escape")
    typing = bool(text) and not modifiers & (1 | 2 | 4)
    down: dict[str, Any] = {
        "type": "keyDown" if typing else "rawKeyDown",
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
        "modifiers": modifiers,
    }
    if typing:
        down["text"] = text
        down["unmodifiedText"] = text
    if modifiers & (2 | 4) and name.lower() in _COMMANDS:
        down["commands"] = [_COMMANDS[name.lower()]]
    up = {
        "type": "keyUp",
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
        "modifiers": modifiers,
    }
    return [down, up]


# --- in-page snippets -----------------------------------------------------------------------------

_JS_ELEMENT = """
(() => {
  const el = document.querySelector(%s);
  if (!el) return {found: false};
  el.scrollIntoView({block: "center", inline: "center"});
  const r = el.getBoundingClientRect();
  const st = getComputedStyle(el);
  const visible = r.width > 0 && r.height > 0 && st.visibility !== "hidden" &&
    st.display !== "none";
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const top = document.elementFromPoint(x, y);
  const covered = top && top !== el && !el.contains(top) && !top.contains(el)
    ? top.tagName.toLowerCase() + (top.id ? "#" + top.id : "") : null;
  const label = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + " " +
    (el.innerText || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 60);
  return {found: true, visible, x, y, covered, label: el.type === "password" ? "password" : label};
})()
"""

_JS_DESCRIBE = r"""
(sel, limit) => {
  const out = [];
  const nodes = Array.from(document.querySelectorAll(sel));
  for (const el of nodes.slice(0, limit)) {
    const r = el.getBoundingClientRect();
    const attrs = {};
    for (const a of ["id", "class", "name", "type", "href", "src", "role", "aria-label",
                     "placeholder", "title", "alt"]) {
      const v = el.getAttribute(a);
      if (v) attrs[a] = v.slice(0, 200);
    }
    if ("value" in el && el.value !== undefined && el.value !== "")
      attrs.value = el.type === "password" ? "••••" : String(el.value).slice(0, 200);
    out.push({tag: el.tagName.toLowerCase(), attrs,
              text: (el.innerText || el.textContent || "").trim().replace(/\s+/g, " ")
                .slice(0, 200),
              visible: r.width > 0 && r.height > 0});
  }
  return {total: nodes.length, items: out};
}
"""

_JS_FIND_TEXT = r"""
(needle, limit) => {
  const lower = needle.toLowerCase();
  const path = (el) => {
    const parts = [];
    while (el && el.nodeType === 1 && parts.length < 5) {
      if (el.id) { parts.unshift("#" + CSS.escape(el.id)); break; }
      let p = el.tagName.toLowerCase();
      const sibs = el.parentElement ? Array.from(el.parentElement.children)
        .filter((s) => s.tagName === el.tagName) : [];
      if (sibs.length > 1) p += `:nth-of-type(${sibs.indexOf(el) + 1})`;
      parts.unshift(p);
      el = el.parentElement;
    }
    return parts.join(" > ");
  };
  const walker = document.createTreeWalker(document.body || document.documentElement, 4);
  const out = [];
  const seen = new Set();
  while (walker.nextNode() && out.length < limit) {
    const t = walker.currentNode;
    if (!t.nodeValue || !t.nodeValue.toLowerCase().includes(lower)) continue;
    const el = t.parentElement;
    if (!el || seen.has(el)) continue;
    const r = el.getBoundingClientRect();
    const st = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || st.visibility === "hidden") continue;
    seen.add(el);
    out.push({selector: path(el), tag: el.tagName.toLowerCase(),
              text: (el.innerText || "").trim().replace(/\s+/g, " ").slice(0, 200),
              inViewport: r.bottom > 0 && r.top < innerHeight});
  }
  return out;
}
"""

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


async def _element(ctx: ToolContext, selector: str) -> dict[str, Any]:
    cdp = ctx.page()
    info = await _eval(cdp, _JS_ELEMENT % json.dumps(selector), timeout=ctx.timeout)
    if not isinstance(info, dict) or not info.get("found"):
        raise ToolError(f"no element matches {selector!r}")
    if not info.get("visible"):
        raise ToolError(f"the element {selector!r} is not visible")
    return info


async def _mouse(ctx: ToolContext, kind: str, x: float, y: float, buttons: int = 0) -> None:
    params: dict[str, Any] = {"type": kind, "x": x, "y": y, "buttons": buttons}
    if kind != "mouseMoved":
        params |= {"button": "left", "clickCount": 1}
    await ctx.page().send(
        "Input.dispatchMouseEvent", params, page_changing=True, timeout=ctx.timeout
    )


async def _after_action(ctx: ToolContext, url_before: str) -> str:
    """A short note on where the page is after an input action (navigation or not)."""
    cdp = ctx.page()
    try:
        # Two animation frames let click handlers run and a navigation start.
        await _eval(
            cdp, "new Promise(r => requestAnimationFrame(() => setTimeout(r, 60)))", timeout=3.0
        )
    except CdpError as exc:
        if not is_context_gone(exc):
            raise
    href, title, ready = await _page_state(cdp)
    if ready == "loading" or not href:
        href, title, ready, _ = await _wait_loaded(cdp, deadline=time.monotonic() + 5.0)
    if href and href != url_before:
        return f"; page is now {href} ({json.dumps(title)}, {ready})"
    return ""


async def _href(ctx: ToolContext) -> str:
    return (await _page_state(ctx.page()))[0]


# --- argument models ------------------------------------------------------------------------------


class NavigateArgs(ToolArgs):
    url: str | None = Field(default=None, description="URL to open (http/https)")
    action: Literal["goto", "back", "forward", "reload"] = "goto"
    timeout: float = Field(default=20.0, gt=0, le=120, description="seconds to wait for load")


class NewTabArgs(ToolArgs):
    url: str | None = Field(default=None, description="URL to open in the new tab")
    active: bool = True


class TabIdArgs(ToolArgs):
    tab_id: int = Field(description="tab id from list_tabs")


class CloseTabArgs(ToolArgs):
    tab_id: int | None = Field(default=None, description="tab id; default: the current tab")


class NoArgs(ToolArgs):
    pass


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


class QueryDomArgs(ToolArgs):
    selector: str = Field(description="CSS selector")
    limit: int = Field(default=20, ge=1, le=200)


class FindTextArgs(ToolArgs):
    text: str = Field(min_length=1)
    limit: int = Field(default=20, ge=1, le=100)


class ExtractTextArgs(ToolArgs):
    selector: str | None = Field(default=None, description="limit to this element")
    max_chars: int = Field(default=_TEXT_LIMIT, ge=100, le=200_000)


class PageHtmlArgs(ToolArgs):
    selector: str | None = None
    max_chars: int = Field(default=_HTML_LIMIT, ge=100, le=500_000)


class EvaluateArgs(ToolArgs):
    code: str = Field(description="JavaScript: an expression, or statements with `return`")
    timeout: float = Field(default=10.0, gt=0, le=60)


class ConsoleArgs(ToolArgs):
    level: str | None = Field(default=None, description="only this level (log, error, ...)")
    limit: int = Field(default=100, ge=1, le=_RING)
    clear: bool = False


class NetworkArgs(ToolArgs):
    filter: str | None = Field(default=None, description="URL substring")
    limit: int = Field(default=50, ge=1, le=_RING)
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


def _tab_line(t: dict[str, Any], pinned: int | None) -> str:
    mark = "*" if t.get("tabId") == pinned else " "
    active = " (active)" if t.get("active") else ""
    title = json.dumps(str(t.get("title", ""))[:80])
    return f"{mark} [{t.get('tabId')}] {title} {t.get('url', '')}{active}"


def _tabs(ctx: ToolContext) -> Any:
    if ctx.tabs is None:
        raise ToolError("tab operations are not available here", code=ErrorCode.NO_CAPABILITY)
    return ctx.tabs


def _save(ctx: ToolContext, rel: str, data: bytes) -> str | None:
    if not isinstance(ctx.files, FileSandbox):
        return None
    return ctx.files.relative(ctx.files.write(rel, data))


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"


def register_browser_tools(reg: Registry) -> None:
    """Add the browser tools to ``reg``."""

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
        before = await _loader_id(cdp)
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
        href, title, ready, committed = await _wait_loaded(
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
        "Open a new tab (with a URL) and make it the current tab.",
        NewTabArgs,
        page_changing=True,
    )
    async def new_tab(args: NewTabArgs, ctx: ToolContext) -> ToolOutput:
        tabs = _tabs(ctx)
        url = check_url(args.url, allow_file=ctx.policy.allow_file_urls) if args.url else None
        # Pass the URL to tab.new: never open about:blank and navigate after (protocol.md 3).
        info = await tabs.new(url, active=args.active)
        tab_id = info.get("tabId")
        if isinstance(tab_id, int):
            ctx.cdp = tabs.session(tab_id)
        return ToolOutput(
            content=f"opened tab {tab_id}: {info.get('url') or url or ''}",
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

    # --- waiting, scrolling, keys -----------------------------------------------------------

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
        mon = await _monitor(ctx, "Network") if args.network_idle else None
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
                ok = bool(await _eval(cdp, expr, timeout=ctx.timeout))
            except CdpError as exc:
                if not is_context_gone(exc):
                    raise
                ok = False  # the document is being replaced; look again
            if ok and mon is not None:
                quiet = (time.monotonic() - mon.last_network) * 1000 >= _IDLE_MS
                ok = not mon.inflight and quiet
            if ok:
                href = await _href(ctx)
                return ToolOutput(content=f"condition met; page {href}", summary="condition met")
            if time.monotonic() >= deadline:
                raise ToolError(
                    f"the condition was not met within {args.timeout:g}s",
                    code=ErrorCode.WAIT_TIMEOUT,
                )
            await asyncio.sleep(_POLL)

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
            await _element(ctx, args.selector)  # scrolls it to the centre
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
        pos = await _eval(ctx.page(), _SCROLL_JS % js, timeout=ctx.timeout)
        y, total, view = pos
        return ToolOutput(
            content=f"scrolled; now at y={y:.0f} of {total} (viewport {view})",
            summary=f"scroll {args.selector or args.direction}",
        )

    async def _press(ctx: ToolContext, combos: list[str]) -> None:
        events = [ev for combo in combos for ev in key_events(combo)]  # validate all first
        for ev in events:
            await ctx.page().send(
                "Input.dispatchKeyEvent", ev, page_changing=True, timeout=ctx.timeout
            )

    @reg.register(
        "press_keys",
        "Press keys in order (names like Enter, Tab, Escape, ArrowDown, combos like Ctrl+A).",
        PressKeysArgs,
        page_changing=True,
    )
    async def press_keys(args: PressKeysArgs, ctx: ToolContext) -> ToolOutput:
        combos = [args.keys] if isinstance(args.keys, str) else list(args.keys)
        before = await _href(ctx)
        await _press(ctx, combos)
        note = await _after_action(ctx, before)
        return ToolOutput(
            content=f"pressed {' '.join(combos)}{note}", summary=f"keys {' '.join(combos)}"[:200]
        )

    @reg.register(
        "press_key",
        "Press one key or combo (Enter, Tab, Escape, ArrowDown, Ctrl+A).",
        PressKeyArgs,
        page_changing=True,
    )
    async def press_key(args: PressKeyArgs, ctx: ToolContext) -> ToolOutput:
        before = await _href(ctx)
        await _press(ctx, [args.key] * args.repeat)
        note = await _after_action(ctx, before)
        return ToolOutput(
            content=f"pressed {args.key} x{args.repeat}{note}", summary=f"key {args.key}"
        )

    # --- selector actions and queries ------------------------------------------------------

    @reg.register(
        "hover",
        "Move the mouse over the element matching a CSS selector.",
        SelectorArgs,
        page_changing=True,
    )
    async def hover(args: SelectorArgs, ctx: ToolContext) -> ToolOutput:
        el = await _element(ctx, args.selector)
        await _mouse(ctx, "mouseMoved", el["x"], el["y"])
        return ToolOutput(content=f"hovering {el['label']}", summary=f"hover {args.selector}")

    @reg.register(
        "click_element",
        "Click the element matching a CSS selector (real mouse events).",
        SelectorArgs,
        page_changing=True,
    )
    async def click_element(args: SelectorArgs, ctx: ToolContext) -> ToolOutput:
        el = await _element(ctx, args.selector)
        before = await _href(ctx)
        await _mouse(ctx, "mouseMoved", el["x"], el["y"])
        await _mouse(ctx, "mousePressed", el["x"], el["y"], buttons=1)
        await _mouse(ctx, "mouseReleased", el["x"], el["y"])
        note = await _after_action(ctx, before)
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
        res = await _eval(
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
        await _eval(
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
        res = await _eval(ctx.page(), expr, page_changing=True, timeout=ctx.timeout)
        if not isinstance(res, dict) or res.get("error"):
            err = res.get("error") if isinstance(res, dict) else "failed"
            opts = res.get("options") if isinstance(res, dict) else None
            raise ToolError(f"{args.selector}: {err}" + (f"; options: {opts}" if opts else ""))
        return ToolOutput(
            content=f"selected {json.dumps(res['label'])} in {args.selector}",
            summary=f"select {res['label']}"[:200],
        )

    @reg.register(
        "query_dom",
        "List elements matching a CSS selector (tag, attributes, text).",
        QueryDomArgs,
        page_changing=False,
    )
    async def query_dom(args: QueryDomArgs, ctx: ToolContext) -> ToolOutput:
        res = await _eval(
            ctx.page(),
            f"({_JS_DESCRIBE})({json.dumps(args.selector)}, {args.limit})",
            timeout=ctx.timeout,
        )
        lines = [f"{res['total']} elements match {args.selector}"]
        for i, it in enumerate(res["items"]):
            vis = "" if it["visible"] else " (hidden)"
            lines.append(
                f"{i}. <{it['tag']}> {json.dumps(it['attrs'])} {json.dumps(it['text'])}{vis}"
            )
        return ToolOutput(
            content=_untrusted(_cut("\n".join(lines), _TEXT_LIMIT)),
            summary=f"{res['total']} matches",
        )

    @reg.register(
        "find_visible_text",
        "Find visible elements containing a text; gives CSS selectors for them.",
        FindTextArgs,
        page_changing=False,
    )
    async def find_visible_text(args: FindTextArgs, ctx: ToolContext) -> ToolOutput:
        res = await _eval(
            ctx.page(),
            f"({_JS_FIND_TEXT})({json.dumps(args.text)}, {args.limit})",
            timeout=ctx.timeout,
        )
        lines = [
            f"{r['selector']}  <{r['tag']}> {json.dumps(r['text'])}"
            + ("" if r["inViewport"] else " (off screen)")
            for r in res
        ]
        return ToolOutput(
            content=_untrusted("\n".join(lines) or "(not found)"), summary=f"{len(res)} matches"
        )

    # --- reading ----------------------------------------------------------------------------

    @reg.register(
        "get_page_info",
        "URL, title, load state, viewport and scroll position of the current tab.",
        NoArgs,
        page_changing=False,
    )
    async def get_page_info(args: NoArgs, ctx: ToolContext) -> ToolOutput:
        info = await _eval(
            ctx.page(),
            """({url: location.href, title: document.title,
          readyState: document.readyState, viewport: [innerWidth, innerHeight],
          scroll: [scrollX, scrollY], document: [document.documentElement.scrollWidth,
          document.documentElement.scrollHeight]})""",
            timeout=ctx.timeout,
        )
        info["tabId"] = getattr(ctx.cdp, "tab_id", None)
        return ToolOutput(
            content=json.dumps(info), summary=str(info.get("url", ""))[:200], data=info
        )

    @reg.register(
        "extract_text",
        "The visible text of the page (or of one element), size-bounded.",
        ExtractTextArgs,
        page_changing=False,
    )
    async def extract_text(args: ExtractTextArgs, ctx: ToolContext) -> ToolOutput:
        sel = json.dumps(args.selector) if args.selector else "null"
        text = await _eval(
            ctx.page(),
            f"""(() => {{ const s = {sel};
          const el = s ? document.querySelector(s) : document.body;
          return el ? el.innerText : null; }})()""",
            timeout=ctx.timeout,
        )
        if text is None:
            raise ToolError(
                f"no element matches {args.selector!r}" if args.selector else "the page has no body"
            )
        return ToolOutput(
            content=_untrusted(_cut(str(text), args.max_chars)), summary=f"{len(text)} characters"
        )

    @reg.register(
        "get_page_html",
        "The HTML of the page (or of one element), size-bounded.",
        PageHtmlArgs,
        page_changing=False,
    )
    async def get_page_html(args: PageHtmlArgs, ctx: ToolContext) -> ToolOutput:
        sel = json.dumps(args.selector) if args.selector else "null"
        html = await _eval(
            ctx.page(),
            f"""(() => {{ const s = {sel};
          const el = s ? document.querySelector(s) : document.documentElement;
          return el ? el.outerHTML : null; }})()""",
            timeout=ctx.timeout,
        )
        if html is None:
            raise ToolError(f"no element matches {args.selector!r}")
        return ToolOutput(
            content=_untrusted(_cut(str(html), args.max_chars)),
            summary=f"{len(html)} characters of HTML",
        )

    @reg.register(
        "evaluate_js",
        "Run JavaScript in the page and return its value: the value "
        "of an expression, or what a `return` statement returns (await allowed).",
        EvaluateArgs,
        page_changing=True,
    )
    async def evaluate_js(args: EvaluateArgs, ctx: ToolContext) -> ToolOutput:
        code = args.code.strip()
        wrapped = re.search(r"\breturn\b", code) is not None
        expr = f"(async () => {{\n{code}\n}})()" if wrapped else code
        res = await ctx.page().send(
            "Runtime.evaluate",
            {
                "expression": expr,
                "returnByValue": True,
                "awaitPromise": True,
                "userGesture": True,
                "timeout": int(args.timeout * 1000),
            },
            page_changing=True,
            timeout=args.timeout + ctx.timeout,
        )
        details = res.get("exceptionDetails")
        if details:
            exc = details.get("exception") or {}
            text = str(exc.get("description") or details.get("text") or "error")
            raise ToolError(f"the script threw: {text[:2000]}")
        result = res.get("result", {})
        if "value" in result:
            out = json.dumps(result["value"], ensure_ascii=False, default=str)
        elif result.get("type") == "undefined":
            out = "undefined"
        else:
            out = str(result.get("description") or result.get("type", ""))
        return ToolOutput(content=_cut(out, JS_RESULT_LIMIT), summary=_cut(out, 120))

    @reg.register(
        "get_console_logs",
        "Console messages and uncaught errors of the current tab "
        "(captured from the first call on).",
        ConsoleArgs,
        page_changing=False,
    )
    async def get_console_logs(args: ConsoleArgs, ctx: ToolContext) -> ToolOutput:
        mon = await _monitor(ctx, "Runtime")
        items = [e for e in mon.console if args.level is None or e["level"] == args.level]
        items = items[-args.limit :]
        if args.clear:
            mon.console.clear()
        lines = [f"[{e['level']}] {e['text'][:1000]}" for e in items]
        return ToolOutput(
            content=_untrusted("\n".join(lines) or "(no console messages)"),
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
        mon = await _monitor(ctx, "Network")
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
            content="\n".join(lines) or "(no requests captured yet)",
            summary=f"{len(items)} requests",
        )

    @reg.register(
        "get_cookies", "Cookies for the current page (or a URL).", CookiesArgs, page_changing=False
    )
    async def get_cookies(args: CookiesArgs, ctx: ToolContext) -> ToolOutput:
        url = args.url or await _href(ctx)
        res = await ctx.page().send("Network.getCookies", {"urls": [url]}, timeout=ctx.timeout)
        cookies = [c for c in res.get("cookies", []) if not args.name or c["name"] == args.name]
        lines = [
            f"{c['name']}={str(c.get('value', ''))[:200]} (domain {c.get('domain')}, "
            f"path {c.get('path')}{', httpOnly' if c.get('httpOnly') else ''}"
            f"{', secure' if c.get('secure') else ''})"
            for c in cookies
        ]
        return ToolOutput(
            content="\n".join(lines) or "(no cookies)",
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
            params["url"] = args.url or await _href(ctx)
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
        "Read localStorage or sessionStorage of the current page.",
        StorageArgs,
        page_changing=False,
    )
    async def get_storage(args: StorageArgs, ctx: ToolContext) -> ToolOutput:
        store = f"{args.kind}Storage"
        key = json.dumps(args.key) if args.key is not None else "null"
        res = await _eval(
            ctx.page(),
            f"""(() => {{ const k = {key};
          if (k !== null) return {{[k]: {store}.getItem(k)}};
          const o = {{}}; for (let i = 0; i < {store}.length; i++) {{
            const n = {store}.key(i); o[n] = {store}.getItem(n); }} return o; }})()""",
            timeout=ctx.timeout,
        )
        text = _cut(json.dumps(res, ensure_ascii=False, indent=1), _TEXT_LIMIT)
        return ToolOutput(content=_untrusted(text), summary=f"{len(res)} {store} entries")

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
            rect = await _eval(
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


def default_registry() -> Registry:
    """A registry with the browser tools and the file tools."""
    reg = Registry()
    register_browser_tools(reg)
    register_file_tools(reg)
    return reg
