"""The panels at work, through the real product path (extension -> relay -> daemon -> model).

One browser for the module, with ``[daemon] turn_concurrency = 1`` (so a second turn queues) and
``[tools] approval_mode = "page-changing"`` (so a click asks first). One scripted model server
answers every test: each test's task names a ``session`` marker of the script, so the tests'
conversations never take each other's steps.

- the REAL side panel, opened by ``chrome.sidePanel.open`` from a click dispatched over CDP
  (``Input.dispatchMouseEvent``, a real user gesture), runs a turn;
- two DevTools panels at once: the second shows its place in line (``chat.queued``), both end in
  order;
- Stop mid-stream: ``chat.done`` carries the partial text and the panel is idle within 1 s;
- approvals: Allow runs the click (the page changes), Deny does not (and the model is told).

Each test opens its own site tab(s): a DevTools panel keeps its chat per inspected tab, so a new
tab means a new chat. Screenshots of every panel state go to ``test-artifacts/e2e/``.
The helpers here are shared with ``test_faults_e2e.py``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Playwright

from nativehost.demo.model_server import ScriptedModelServer
from tests.e2e.browser import (
    ARTIFACTS_DIR,
    EXTENSION_ORIGIN,
    E2EBrowser,
    PanelPage,
    launched,
    panel_session_id,
    wait_until,
)

pytestmark = pytest.mark.browser

# --------------------------------------------------------------------------------------------
# Shared helpers (also used by test_faults_e2e.py)


class Site:
    """A local site: static pages, plus ``GET /hit/<key>`` that counts page-side effects.

    ``hold(key)`` makes the next hits of *key* wait (server side) until ``release(key)``: a page
    whose click handler does a synchronous XHR to such a URL keeps the click in flight. Any page
    asked for with ``?hold=<key>`` is a hit of *key* before it is served (a slow page).
    """

    def __init__(self, root: Path, pages: dict[str, str]) -> None:
        root.mkdir(parents=True, exist_ok=True)
        for name, html in pages.items():
            (root / name).write_text(html, encoding="utf-8")
        self.hits: dict[str, int] = {}
        self.lock = threading.Lock()
        self.holds: dict[str, threading.Event] = {}
        self.arrived: dict[str, threading.Event] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(root, self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def hit(self, key: str) -> None:
        with self.lock:
            self.hits[key] = self.hits.get(key, 0) + 1
            arrived = self.arrived.setdefault(key, threading.Event())
            held = self.holds.get(key)
        arrived.set()
        if held is not None:
            held.wait(timeout=30.0)  # bounded: the test releases it much sooner

    def count(self, key: str) -> int:
        with self.lock:
            return self.hits.get(key, 0)

    def hold(self, key: str) -> None:
        with self.lock:
            self.holds[key] = threading.Event()
            self.arrived[key] = threading.Event()

    def wait_arrived(self, key: str, timeout: float) -> None:
        with self.lock:
            arrived = self.arrived.setdefault(key, threading.Event())
        if not arrived.wait(timeout):
            raise TimeoutError(f"timed out after {timeout:.1f} s waiting for /hit/{key}")

    def release(self, key: str) -> None:
        with self.lock:
            held = self.holds.pop(key, None)
        if held is not None:
            held.set()

    def close(self) -> None:
        with self.lock:
            for held in self.holds.values():
                held.set()
        self.server.shutdown()
        self.server.server_close()


def _handler(root: Path, site: Site) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self) -> None:
            held = re.search(r"[?&]hold=([\w-]+)", self.path)
            if held and not self.path.startswith("/hit/"):
                site.hit(held.group(1))  # the page itself answers once the test releases it
            if self.path.startswith("/hit/"):
                site.hit(self.path.removeprefix("/hit/").split("?", 1)[0])
                self.send_response(204)
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class ModelThread:
    """The scripted model server on its own event loop in a thread (the e2e tests are sync)."""

    def __init__(self, script: Any) -> None:
        self.server = ScriptedModelServer(script)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(10)

    def requests_with(self, marker: str) -> list[dict[str, Any]]:
        """The request bodies of the conversation whose task names *marker*."""
        return [
            r
            for r in list(self.server.requests)
            if any(
                m.get("role") == "user" and marker in str(m.get("content"))
                for m in r.get("messages", [])
            )
        ]

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def write_config(home: Path, model_url: str, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[model]\nbase_url = "{model_url}"\nmodel = "scripted"\napi_key = "sk-test"\n' + extra,
        encoding="utf-8",
    )


def open_site_tab(browser: E2EBrowser, url: str) -> tuple[Page, int]:
    """A new tab on *url* and its chrome.tabs id."""
    page = browser.context.new_page()
    page.goto(url)
    tab_id = wait_until(
        lambda: browser.worker.evaluate(
            "async (url) => (await chrome.tabs.query({url}))[0]?.id", url
        ),
        timeout=5.0,
        what=f"the tab id of {url}",
    )
    return page, int(tab_id)


def open_devtools_panel(browser: E2EBrowser, tab_id: int) -> tuple[PanelPage, str]:
    """The DevTools panel page bound to *tab_id*, its session registered and its model listed."""
    panel = browser.open_panel(f"devtools-panel.html?inspectedTabId={tab_id}")
    key = f"browy.panel.dt.{tab_id}"
    sid = wait_until(
        lambda: panel.page.evaluate("(k) => chrome.storage.session.get(k).then((s) => s[k])", key),
        timeout=5.0,
        what=f"the session id of the panel of tab {tab_id}",
    )
    wait_for_session_ready(browser, panel, sid)
    return panel, sid


def wait_for_session_ready(browser: E2EBrowser, panel: _Panel, sid: str) -> None:
    browser.wait_received(
        lambda m: m.get("type") == "session.ready" and m.get("sessionId") == sid,
        timeout=15.0,
        what=f"session.ready for {sid}",
    )
    wait_until(
        lambda: (
            panel.page.evaluate("() => document.querySelectorAll('select.model option').length")
            or None
        ),
        timeout=10.0,
        what="the model list in the panel",
    )


def send_task(panel: _Panel, text: str) -> None:
    """Type the task and send it: Enter in a tab page, a real click on Send in the side panel."""
    if isinstance(panel, SidePanel):
        panel.evaluate("(t) => { document.querySelector('textarea').value = t; }", text)
        panel.click("button.primary")
        return
    box = panel.page.locator("textarea")
    box.fill(text)
    box.press("Enter")


def screenshot(browser: E2EBrowser, panel: _Panel, label: str) -> Path:
    if isinstance(panel, SidePanel):
        ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
        out = ARTIFACTS_DIR / f"{browser.name}-{label}.png"
        panel.screenshot(out)
        return out
    return browser.screenshot(panel, label)


def is_busy(panel: _Panel) -> bool:
    return bool(
        panel.page.evaluate("() => document.getElementById('app').classList.contains('busy')")
    )


def session_messages(browser: E2EBrowser, sid: str) -> list[dict[str, Any]]:
    return [m for m in browser.received() if m.get("sessionId") == sid]


def wait_turn_end(browser: E2EBrowser, sid: str, *, timeout: float) -> dict[str, Any]:
    """The session's chat.done / chat.error, once the status event after it has come too."""

    def probe() -> dict[str, Any] | None:
        got = session_messages(browser, sid)
        ends = [n for n, m in enumerate(got) if m.get("type") in ("chat.done", "chat.error")]
        if not ends:
            return None
        after = got[ends[-1] + 1 :]
        status = [m for m in after if m.get("type") == "event.activity"]
        return got[ends[-1]] if status else None

    return wait_until(probe, timeout=timeout, what=f"the end of the turn of {sid}")


def wait_idle(panel: _Panel, *, timeout: float, what: str = "the panel to leave busy") -> None:
    wait_until(lambda: not is_busy(panel) or None, timeout=timeout, what=what)


def log_text(panel: _Panel) -> str:
    return str(panel.page.evaluate("() => document.querySelector('main.log').innerText"))


# --------------------------------------------------------------------------------------------
# The module's world

ORDER = """<!doctype html><title>Order {n}</title>
<h1>Checkout {n}</h1>
<button id="buy" onclick="document.getElementById('st').textContent = 'Ordered';
  new Image().src = '/hit/order-{n}'">Place order</button>
<p id="st">Not ordered</p>
"""
PLAIN = "<!doctype html><title>{title}</title><h1>{title}</h1><p>Nothing to see here.</p>\n"

STREAMED = (
    "Here is a long answer that the model streams very slowly, word by word, so that the user "
    "has plenty of time to change their mind and press the Stop button before it is complete; "
    "it goes on and on for quite a while longer than anyone would like to wait."
)


def _script() -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        # 1. the real side panel
        {"session": "[side-1]", "tool_calls": [{"name": "inspect_page", "arguments": {}}]},
        {"session": "[side-1]", "text": "The page is titled Side page."},
        # 2. two panels, one turn at a time: A holds the only slot for a while
        {
            "session": "[queue-A]",
            "text": "Answer A.",
            "fault": {"kind": "delay", "first_chunk_s": 2.5},
        },
        {"session": "[queue-B]", "text": "Answer B."},
        # 3. Stop while the answer streams
        {
            "session": "[stop-1]",
            "text": STREAMED,
            "fault": {"kind": "delay", "between_chunks_s": 0.25},
        },
        # 6. approvals
        {"session": "[approve-allow]", "tool_calls": [{"name": "inspect_page", "arguments": {}}]},
        {
            "session": "[approve-allow]",
            "tool_calls": [{"name": "click_index", "arguments": {"index": 1}}],
        },
        {"session": "[approve-allow]", "text": "Your order is placed."},
        {"session": "[approve-deny]", "tool_calls": [{"name": "inspect_page", "arguments": {}}]},
        {
            "session": "[approve-deny]",
            "tool_calls": [{"name": "click_index", "arguments": {"index": 1}}],
        },
        {"session": "[approve-deny]", "text": "You declined, so nothing was ordered."},
    ]
    return {"steps": steps}


class World:
    def __init__(self, browser: E2EBrowser, site: Site, model: ModelThread) -> None:
        self.browser = browser
        self.site = site
        self.model = model


@pytest.fixture(scope="module")
def world(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("atwork")
    pages = {"side.html": PLAIN.format(title="Side page")}
    for n in ("allow", "deny"):
        pages[f"order-{n}.html"] = ORDER.format(n=n)
    for n in ("A", "B", "stop"):
        pages[f"plain-{n}.html"] = PLAIN.format(title=f"Plain {n}")
    site = Site(root / "site", pages)
    model = ModelThread(_script())
    write_config(
        root / "home",
        model.url,
        '[daemon]\nturn_concurrency = 1\n[tools]\napproval_mode = "page-changing"\n',
    )
    try:
        with launched(playwright, name="atwork", root=root) as browser:
            browser.wait_state("ready", timeout=20)
            yield World(browser, site, model)
    finally:
        with contextlib.suppress(Exception):
            model.close()
        site.close()


# --------------------------------------------------------------------------------------------
# 1. The real side panel

_OPENER_JS = """(windowId) => {
  const b = document.createElement('button');
  b.id = 'browy-test-open-side-panel';
  b.textContent = 'Open Browy in the side panel';
  b.style.cssText = 'position:fixed;top:8px;left:8px;z-index:2147483647;padding:16px';
  b.addEventListener('click', () => {
    chrome.sidePanel.open({windowId}).then(
      () => { b.dataset.opened = 'yes'; },
      (e) => { b.dataset.opened = 'error: ' + e.message; });
  });
  document.body.append(b);
}"""


class SidePanel:
    """The real side panel, driven over CDP through the opener page's CDP session.

    Playwright does not attach to the side panel (it is a ``page`` target outside the tab strip),
    so this attaches with ``Target.attachToTarget`` (not flattened) and talks to it through
    ``Target.sendMessageToTarget``. ``page`` is itself, so the helpers that call
    ``panel.page.evaluate(fn, arg)`` work on it as on a :class:`PanelPage`. The sync Playwright
    API dispatches events only while a call is running, so waits pump it with a cheap call.
    """

    def __init__(self, opener: PanelPage, target_id: str) -> None:
        self.opener = opener
        self.page = self
        self.errors: list[str] = []
        self.cdp = opener.page.context.new_cdp_session(opener.page)
        self._ids = itertools.count(1)
        self._answers: dict[int, dict[str, Any]] = {}
        self.cdp.on("Target.receivedMessageFromTarget", self._on_message)
        attached = self.cdp.send("Target.attachToTarget", {"targetId": target_id, "flatten": False})
        self.session = attached["sessionId"]
        self.send("Runtime.enable")

    def _on_message(self, event: dict[str, Any]) -> None:
        if event.get("sessionId") != self.session:
            return
        msg = json.loads(event["message"])
        if "id" in msg:
            self._answers[msg["id"]] = msg
        elif msg.get("method") == "Runtime.exceptionThrown":
            self.errors.append(f"pageerror: {msg['params']['exceptionDetails'].get('text')}")
        elif (
            msg.get("method") == "Runtime.consoleAPICalled" and msg["params"].get("type") == "error"
        ):
            args = msg["params"].get("args", [])
            self.errors.append(f"console.error: {[a.get('value') for a in args]}")

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        n = next(self._ids)
        message = json.dumps({"id": n, "method": method, "params": params or {}})
        self.cdp.send("Target.sendMessageToTarget", {"sessionId": self.session, "message": message})

        def answered() -> dict[str, Any] | None:
            self.opener.page.evaluate("0")  # pump Playwright's event dispatch
            return self._answers.pop(n, None)

        answer = wait_until(answered, timeout=10.0, what=f"the side panel's answer to {method}")
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def evaluate(self, fn: str, arg: Any = None) -> Any:
        """Like Playwright's ``page.evaluate``: *fn* is a function expression, awaited."""
        result = self.send(
            "Runtime.evaluate",
            {
                "expression": f"({fn})({json.dumps(arg)})",
                "awaitPromise": True,
                "returnByValue": True,
                "userGesture": False,
            },
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"side panel evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real click (``Input.dispatchMouseEvent``) at the centre of *selector*."""
        box = self.evaluate(
            "(sel) => { const r = document.querySelector(sel).getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; }",
            selector,
        )
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            params: dict[str, Any] = {"type": kind, "x": x, "y": y}
            if kind != "mouseMoved":
                params |= {"button": "left", "clickCount": 1, "buttons": 1}
            self.send("Input.dispatchMouseEvent", params)

    def screenshot(self, path: Path) -> None:
        shot = self.send("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.cdp.send("Target.detachFromTarget", {"sessionId": self.session})
        with contextlib.suppress(Exception):
            self.cdp.detach()


_Panel = PanelPage | SidePanel


def _open_real_side_panel(browser: E2EBrowser) -> tuple[PanelPage, SidePanel]:
    """Click (over CDP) a button on an extension page whose handler calls sidePanel.open.

    The button is added to the options page at run time (no change to extension/): its click
    listener runs in the extension page, and a click dispatched with ``Input.dispatchMouseEvent``
    (Playwright's ``mouse.click``) is a real user gesture. Returns (opener, side panel).
    """
    opener = browser.open_panel("options.html")
    page = opener.page
    window_id = page.evaluate("async () => (await chrome.windows.getCurrent()).id")
    page.evaluate(_OPENER_JS, window_id)
    box = page.locator("#browy-test-open-side-panel").bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    opened = wait_until(
        lambda: page.evaluate(
            "() => document.getElementById('browy-test-open-side-panel').dataset.opened"
        ),
        timeout=5.0,
        what="sidePanel.open to settle",
    )
    assert opened == "yes", opened
    cdp = browser.context.new_cdp_session(page)
    try:
        target = wait_until(
            lambda: next(
                (
                    t
                    for t in cdp.send("Target.getTargets")["targetInfos"]
                    if t["type"] == "page" and t["url"] == f"{EXTENSION_ORIGIN}sidepanel.html"
                ),
                None,
            ),
            timeout=5.0,
            what="the side panel's page target",
        )
    finally:
        cdp.detach()
    side = SidePanel(opener, target["targetId"])
    wait_until(
        lambda: side.evaluate("() => document.readyState") == "complete" or None,
        timeout=5.0,
        what="the side panel to load",
    )
    return opener, side


def test_the_real_side_panel_opened_by_a_dispatched_click_runs_a_turn(world: World) -> None:
    browser, site, model = world.browser, world.site, world.model
    page, _tab_id = open_site_tab(browser, f"{site.url}/side.html")
    opener, side = _open_real_side_panel(browser)
    try:
        # It is the real side panel (a SIDE_PANEL context of the extension), not a tab.
        urls = browser.worker.evaluate(
            "async () => (await chrome.runtime.getContexts({contextTypes: ['SIDE_PANEL']}))"
            ".map((c) => c.documentUrl)"
        )
        assert any(str(u).endswith("/sidepanel.html") for u in urls), urls
        tabs = browser.worker.evaluate(
            "async () => (await chrome.tabs.query({})).map((t) => t.url)"
        )
        assert not any("sidepanel.html" in str(u) for u in tabs), tabs
        sid = panel_session_id(side, "sp")  # type: ignore[arg-type]  # duck-typed .page
        wait_for_session_ready(browser, side, sid)
        screenshot(browser, side, "real-sidepanel-ready")
        # The side panel drives its window's active tab: bring the site to the front.
        page.bring_to_front()
        wait_until(
            lambda: (
                browser.worker.evaluate(
                    "async () => (await chrome.tabs.query({active: true, lastFocusedWindow: true}))"
                    "[0]?.url"
                )
                == f"{site.url}/side.html"
                or None
            ),
            timeout=5.0,
            what="the site tab to be active",
        )
        send_task(side, "[side-1] What is this page?")
        end = wait_turn_end(browser, sid, timeout=30)
        assert end["type"] == "chat.done", end
        assert end["text"] == "The page is titled Side page."
        results = [m for m in session_messages(browser, sid) if m["type"] == "chat.tool_result"]
        assert [r["outcome"] for r in results] == ["ok"], results
        snapshot = next(
            m["content"]
            for m in model.requests_with("[side-1]")[1]["messages"]
            if m.get("role") == "tool"
        )
        assert "Side page" in snapshot
        wait_idle(side, timeout=5.0)
        wait_until(
            lambda: "titled Side page" in log_text(side) or None,
            timeout=5.0,
            what="the answer in the side panel",
        )
        assert side.evaluate("() => document.querySelectorAll('main.log details.tool').length") == 1
        screenshot(browser, side, "real-sidepanel-after-turn")
        assert side.errors == []
    finally:
        side.close()
        opener.close()
        page.close()


# --------------------------------------------------------------------------------------------
# 2. Two panels, one turn slot


def test_two_panels_the_second_waits_in_line_and_both_finish_in_order(world: World) -> None:
    browser, site, model = world.browser, world.site, world.model
    page_a, tab_a = open_site_tab(browser, f"{site.url}/plain-A.html")
    page_b, tab_b = open_site_tab(browser, f"{site.url}/plain-B.html")
    panel_a, sid_a = open_devtools_panel(browser, tab_a)
    panel_b, sid_b = open_devtools_panel(browser, tab_b)
    try:
        send_task(panel_a, "[queue-A] Say A.")
        # A holds the only slot once its model call has started (its answer is delayed 2.5 s).
        wait_until(lambda: model.requests_with("[queue-A]") or None, timeout=10, what="A's call")
        send_task(panel_b, "[queue-B] Say B.")
        queued = browser.wait_received(
            lambda m: m.get("type") == "chat.queued" and m.get("sessionId") == sid_b,
            timeout=10,
            what="chat.queued for the second panel",
        )
        position = next(m for m in queued if m.get("type") == "chat.queued")["position"]
        assert position == 1, queued
        status = wait_until(
            lambda: (
                panel_b.page.evaluate("() => document.querySelector('.status').textContent") or None
            ),
            timeout=5,
            what="the queue position in the second panel",
        )
        assert status == "Waiting in line — position 1", status
        assert is_busy(panel_b) and is_busy(panel_a)
        assert not model.requests_with("[queue-B]"), "B ran while A held the only slot"
        screenshot(browser, panel_b, "two-panels-second-queued")
        screenshot(browser, panel_a, "two-panels-first-running")

        end_a = wait_turn_end(browser, sid_a, timeout=20)
        end_b = wait_turn_end(browser, sid_b, timeout=20)
        assert (end_a["type"], end_a["text"]) == ("chat.done", "Answer A."), end_a
        assert (end_b["type"], end_b["text"]) == ("chat.done", "Answer B."), end_b
        got = browser.received()
        done = [
            m["sessionId"]
            for m in got
            if m.get("type") == "chat.done" and m.get("sessionId") in (sid_a, sid_b)
        ]
        assert done == [sid_a, sid_b], done
        # B's model call started only after A's turn ended.
        a_end = got.index(end_a)
        b_thinking = [
            n
            for n, m in enumerate(got)
            if m.get("sessionId") == sid_b and m.get("type") == "chat.delta"
        ]
        assert b_thinking and b_thinking[0] > a_end, (a_end, b_thinking)
        for panel, answer in ((panel_a, "Answer A."), (panel_b, "Answer B.")):
            wait_idle(panel, timeout=5)
            wait_until(lambda p=panel, a=answer: a in log_text(p) or None, timeout=5, what=answer)
        assert panel_b.page.evaluate("() => document.querySelector('.status').textContent") == ""
        screenshot(browser, panel_b, "two-panels-second-done")
        assert panel_a.errors == [] and panel_b.errors == []
    finally:
        for p in (panel_a, panel_b):
            p.close()
        page_a.close()
        page_b.close()


# --------------------------------------------------------------------------------------------
# 3. Stop mid-turn


def test_stop_mid_stream_ends_with_the_partial_text_and_the_panel_is_idle_within_a_second(
    world: World,
) -> None:
    browser, site = world.browser, world.site
    page, tab_id = open_site_tab(browser, f"{site.url}/plain-stop.html")
    panel, sid = open_devtools_panel(browser, tab_id)
    try:
        send_task(panel, "[stop-1] Tell me a long story.")

        def deltas() -> int | None:
            n = sum(1 for m in session_messages(browser, sid) if m.get("type") == "chat.delta")
            return n if n >= 3 else None

        wait_until(deltas, timeout=15, what="a few streamed words")
        stop = panel.page.locator("button.stop")
        assert stop.is_visible() and is_busy(panel)
        screenshot(browser, panel, "stop-streaming")
        clicked = time.monotonic()
        stop.click()
        wait_idle(panel, timeout=1.0, what="the panel to leave busy within 1 s of Stop")
        idle_after = time.monotonic() - clicked
        assert idle_after <= 1.0, idle_after
        end = wait_turn_end(browser, sid, timeout=5)
        assert end["type"] == "chat.done", end  # a user's cancel is not a failure (3b)
        partial = end["text"]
        assert partial and STREAMED.startswith(partial.strip()), partial
        assert len(partial.strip()) < len(STREAMED), "the stream was not cut short"
        mine = session_messages(browser, sid)
        after = mine[mine.index(end) + 1 :]
        assert [m.get("event") for m in after if m.get("type") == "event.activity"][:1] == [
            "status.idle"
        ], after
        assert not stop.is_visible()
        wait_until(
            lambda: partial.strip()[:40] in log_text(panel) or None,
            timeout=5,
            what="the partial answer kept in the panel",
        )
        screenshot(browser, panel, "stop-stopped")
        assert panel.errors == []
    finally:
        panel.close()
        page.close()


# --------------------------------------------------------------------------------------------
# 6. Approvals


def _approval_turn(world: World, which: str, decision_label: str) -> tuple[dict[str, Any], Page]:
    browser, site, model = world.browser, world.site, world.model
    page, tab_id = open_site_tab(browser, f"{site.url}/order-{which}.html")
    panel, sid = open_devtools_panel(browser, tab_id)
    try:
        send_task(panel, f"[approve-{which}] Place my order.")
        prompt = panel.page.locator("section.prompt.approval")
        wait_until(lambda: prompt.count() == 1 or None, timeout=15, what="the approval prompt")
        request = next(
            m for m in session_messages(browser, sid) if m.get("type") == "approval.request"
        )
        assert request["tool"] == "click_index" and request["args"] == {"index": 1}, request
        assert request["origin"] == site.url, request
        # The element numbers are the snapshot's: [1] is the order button.
        snapshot = next(
            m["content"]
            for m in model.requests_with(f"[approve-{which}]")[1]["messages"]
            if m.get("role") == "tool"
        )
        assert '[1] button "Place order"' in snapshot, snapshot
        assert page.locator("#st").inner_text() == "Not ordered"
        screenshot(browser, panel, f"approval-{which}-asked")
        prompt.get_by_role("button", name=decision_label).click()
        end = wait_turn_end(browser, sid, timeout=20)
        wait_idle(panel, timeout=5)
        screenshot(browser, panel, f"approval-{which}-answered")
        assert panel.errors == []
        return end, page
    finally:
        panel.close()


def test_approval_allow_runs_the_click(world: World) -> None:
    end, page = _approval_turn(world, "allow", "Allow once")
    try:
        assert (end["type"], end["text"]) == ("chat.done", "Your order is placed."), end
        wait_until(
            lambda: page.locator("#st").inner_text() == "Ordered" or None,
            timeout=5,
            what="the page to change",
        )
        assert world.site.count("order-allow") == 1
        results = [
            m["outcome"]
            for m in world.browser.received()
            if m.get("type") == "chat.tool_result" and m.get("sessionId") == end["sessionId"]
        ]
        assert results == ["ok", "ok"], results
    finally:
        page.close()


def test_approval_deny_leaves_the_page_unchanged_and_tells_the_model(world: World) -> None:
    end, page = _approval_turn(world, "deny", "Deny")
    try:
        assert end["type"] == "chat.done", end
        assert end["text"] == "You declined, so nothing was ordered."
        assert page.locator("#st").inner_text() == "Not ordered"
        assert world.site.count("order-deny") == 0
        last = world.model.requests_with("[approve-deny]")[-1]["messages"][-1]
        assert last["role"] == "tool" and "APPROVAL_DENIED" in last["content"], last
        results = [
            m["outcome"]
            for m in world.browser.received()
            if m.get("type") == "chat.tool_result" and m.get("sessionId") == end["sessionId"]
        ]
        assert results == ["ok", "error"], results
    finally:
        page.close()
