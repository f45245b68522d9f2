"""What the browser tool modules share: limits, URL policy, page reads and load waits.

- limits of what the tools return (``TEXT_LIMIT``, ``HTML_LIMIT``, ``JS_RESULT_LIMIT``), of the
  console and network ring buffers (``RING``) and of polling (``POLL``, ``IDLE_MS``);
- ``check_url`` (protocol.md section 5, "URLs"); ``untrusted`` and ``cut`` wrap and bound page
  text (architecture.md section 5);
- ``evaluate``, ``page_state``, ``loader_id``, ``wait_loaded``, ``current_url`` and
  ``after_action``: the page's state over the tab's ``CdpSession``;
- ``TabMonitor`` and ``tab_monitor``: one tab's console and network events in ``ctx.state``;
- ``locate_element`` (find a selector's element, scroll it into view, check it is visible) and
  ``NoArgs``, the argument model of tools that take none.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Literal

from actors.tools.cdp import CdpError, is_context_gone
from actors.tools.tool_def import TabSession, ToolArgs, ToolContext, ToolError
from messages.errors import ErrorCode

__all__ = [
    "CAPTURED_HEADERS",
    "CAPTURED_HEADER_CHARS",
    "HTML_LIMIT",
    "IDLE_MS",
    "JS_RESULT_LIMIT",
    "POLL",
    "RING",
    "TEXT_LIMIT",
    "NoArgs",
    "TabMonitor",
    "after_action",
    "captured_headers",
    "check_url",
    "current_url",
    "cut",
    "evaluate",
    "loader_id",
    "locate_element",
    "page_state",
    "tab_key",
    "tab_monitor",
    "untrusted",
    "wait_loaded",
]

#: evaluate_js results are JSON-truncated to this many characters.
JS_RESULT_LIMIT = 20_000
TEXT_LIMIT = 20_000
HTML_LIMIT = 50_000
RING = 300
POLL = 0.1
IDLE_MS = 500


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


def untrusted(text: str) -> str:
    return f"<untrusted_page_content>\n{text}\n</untrusted_page_content>"


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… truncated: {len(text) - limit} more characters]"


async def evaluate(
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


async def page_state(cdp: TabSession) -> tuple[str, str, str]:
    try:
        value = await evaluate(cdp, "[location.href, document.title, document.readyState]")
    except CdpError as exc:
        if is_context_gone(exc):
            return "", "", "loading"
        raise
    if not isinstance(value, list) or len(value) != 3:
        return "", "", "loading"
    return str(value[0]), str(value[1]), str(value[2])


async def loader_id(cdp: TabSession) -> str | None:
    tree = await cdp.send("Page.getFrameTree")
    loader = tree.get("frameTree", {}).get("frame", {}).get("loaderId")
    return str(loader) if loader else None


async def wait_loaded(
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
            loader = await loader_id(cdp)
            committed = (new_loader is not None and loader == new_loader) or (
                new_loader is None and loader != old_loader
            )
        if committed:
            href, title, ready = await page_state(cdp)
            if ready == "complete":
                return href, title, ready, True
        if time.monotonic() >= deadline:
            if not href:
                href, title, ready = await page_state(cdp)
            return href, title, ready, committed
        await asyncio.sleep(POLL)


async def wait_first_document(cdp: TabSession, *, deadline: float) -> tuple[str, str, str, bool]:
    """A tab just opened on a URL: wait (bounded) until its document committed — the frame has
    neither the empty URL of a tab that has shown nothing yet nor the initial ``about:blank`` —
    and loaded, as :func:`wait_loaded`."""
    while True:
        tree = await cdp.send("Page.getFrameTree")
        url = str(tree.get("frameTree", {}).get("frame", {}).get("url") or "")
        if url and url != "about:blank":
            return await wait_loaded(cdp, deadline=deadline)
        if time.monotonic() >= deadline:
            return url, "", "loading", False
        await asyncio.sleep(POLL)


def tab_key(cdp: TabSession) -> Any:
    tab_id = getattr(cdp, "tab_id", None)
    return tab_id if tab_id is not None else id(cdp)


#: Request headers a capture keeps (per request, value length): enough to replay an API call.
CAPTURED_HEADERS = 40
CAPTURED_HEADER_CHARS = 4096
#: Never kept: the browser adds cookies per hop from its own jar (transfer.py); the rest describe
#: one connection, not the request.
_UNCAPTURED = frozenset(
    {"cookie", "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te",
     "upgrade", "accept-encoding", "proxy-authorization", "proxy-connection"}
)  # fmt: skip


def captured_headers(raw: object) -> dict[str, str]:
    """The request headers of a ``Network.requestWillBeSent`` worth keeping for a replay. They
    stay on the host: the model is shown none of them (they may carry tokens)."""
    if not isinstance(raw, dict):
        return {}
    kept: dict[str, str] = {}
    for name, value in raw.items():
        key = str(name)
        if key.startswith(":") or key.lower() in _UNCAPTURED or len(kept) >= CAPTURED_HEADERS:
            continue
        kept[key] = str(value)[:CAPTURED_HEADER_CHARS]
    return kept


@dataclass(slots=True)
class TabMonitor:
    """Ring buffers of one tab's console and network events (fed by ``subscribe``)."""

    enabled: set[str] = field(default_factory=set)
    console: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RING))
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
                "headers": captured_headers(req.get("headers")),
            }
            self.inflight.add(rid)
            while len(self.requests) > RING:
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


async def tab_monitor(ctx: ToolContext, domain: Literal["Runtime", "Network"]) -> TabMonitor:
    """The tab's monitor, with ``domain`` enabled (once per tab) and events subscribed."""
    cdp = ctx.page()
    monitors: dict[Any, TabMonitor] = ctx.state.setdefault("browser.monitors", {})
    mon = monitors.get(tab_key(cdp))
    if mon is None:
        mon = TabMonitor()
        # Subscribe before enabling: Runtime.enable replays stored console messages.
        mon.unsubscribe = await cdp.subscribe(mon.on_event)
        monitors[tab_key(cdp)] = mon
    if domain not in mon.enabled:
        await cdp.send(f"{domain}.enable", timeout=ctx.timeout)
        mon.enabled.add(domain)
    return mon


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


async def locate_element(ctx: ToolContext, selector: str) -> dict[str, Any]:
    cdp = ctx.page()
    info = await evaluate(cdp, _JS_ELEMENT % json.dumps(selector), timeout=ctx.timeout)
    if not isinstance(info, dict) or not info.get("found"):
        raise ToolError(f"no element matches {selector!r}")
    if not info.get("visible"):
        raise ToolError(f"the element {selector!r} is not visible")
    return info


async def after_action(ctx: ToolContext, url_before: str) -> str:
    """A short note on where the page is after an input action (navigation or not)."""
    cdp = ctx.page()
    try:
        # Two animation frames let click handlers run and a navigation start.
        await evaluate(
            cdp, "new Promise(r => requestAnimationFrame(() => setTimeout(r, 60)))", timeout=3.0
        )
    except CdpError as exc:
        if not is_context_gone(exc):
            raise
    href, title, ready = await page_state(cdp)
    if ready == "loading" or not href:
        href, title, ready, _ = await wait_loaded(cdp, deadline=time.monotonic() + 5.0)
    if href and href != url_before:
        return f"; page is now {href} ({json.dumps(title)}, {ready})"
    return ""


async def current_url(ctx: ToolContext) -> str:
    return (await page_state(ctx.page()))[0]


# --- argument models ------------------------------------------------------------------------------


class NoArgs(ToolArgs):
    pass
