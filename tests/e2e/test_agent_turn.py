"""A whole agent turn through the real product path.

A panel (the DevTools panel page, bound to the shop tab by ``inspectedTabId``) sends the task;
the service worker -> the real relay -> the auto-started daemon -> the scripted model server over
real HTTP through the openai client; the model's tool calls come back as ``cdp.send`` that the
worker runs through ``chrome.debugger`` on the real page: inspect, type, click, navigate; then the
model answers and the panel shows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Playwright

from nativehost.demo.model_server import ScriptedModelServer
from tests.e2e.browser import E2EBrowser, launched, panel_session_id, wait_until

pytestmark = pytest.mark.browser

SHOP = """<!doctype html><title>Tiny shop</title>
<h1>Tiny shop</h1>
<input id="q" aria-label="Search products">
<button id="go" onclick="document.getElementById('out').textContent =
  'Results for ' + document.getElementById('q').value">Search</button>
<p id="out"></p>
<a href="/cart.html">Cart</a>
"""
CART = "<!doctype html><title>Your cart</title><h1>Cart</h1><p>Empty.</p>"


class _Site:
    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        (root / "shop.html").write_text(SHOP)
        (root / "cart.html").write_text(CART)
        handler = _handler(root)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(root: Path) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _ModelThread:
    """The scripted model server on its own event loop in a thread (the e2e tests are sync)."""

    def __init__(self, script: Any) -> None:
        self.server = ScriptedModelServer(script)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(10)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def _script(site: str) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "inspect_page", "arguments": {}}]},
        {"tool_calls": [{"name": "type_index", "arguments": {"index": 1, "text": "blue shoes"}}]},
        {"tool_calls": [{"name": "click_index", "arguments": {"index": 2}}]},
        {"tool_calls": [{"name": "navigate", "arguments": {"url": f"{site}/cart.html"}}]},
        {"text": "I searched for blue shoes and opened your cart: it is empty."},
    ]


@pytest.fixture(scope="module")
def world(
    playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[E2EBrowser, _Site, _ModelThread]]:
    root = tmp_path_factory.mktemp("turn")
    site = _Site(root / "site")
    model = _ModelThread(_script(site.url))
    home = root / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[model]\nbase_url = "{model.url}"\nmodel = "scripted"\napi_key = "sk-test"\n'
        '[tools]\napproval_mode = "never"\n'  # approvals have their own e2e tests
    )
    try:
        with launched(playwright, name="turn", root=root) as browser:
            yield browser, site, model
    finally:
        with contextlib.suppress(Exception):
            model.close()
        site.close()


def test_a_turn_inspects_types_clicks_navigates_and_answers_in_the_panel(
    world: tuple[E2EBrowser, _Site, _ModelThread],
) -> None:
    browser, site, model = world
    browser.wait_state("ready", timeout=20)
    shop = browser.context.new_page()
    shop.goto(f"{site.url}/shop.html")
    tab_id = browser.worker.evaluate(
        "async (url) => (await chrome.tabs.query({url}))[0].id", f"{site.url}/shop.html"
    )
    panel = browser.open_panel(f"devtools-panel.html?inspectedTabId={tab_id}")
    try:
        panel_session_id(panel, "dt")
        page = panel.page
        wait_until(
            lambda: page.locator("select.model option").count() > 0 or None,
            timeout=10,
            what="the model list in the panel",
        )
        page.locator("textarea").fill("Find blue shoes, then open my cart.")
        page.locator("textarea").press("Enter")

        def finished() -> list[dict[str, Any]] | None:
            got = browser.received()
            return got if any(m.get("type") in ("chat.done", "chat.error") for m in got) else None

        received = wait_until(finished, timeout=45, what="the end of the turn")
        end = next(m for m in received if m.get("type") in ("chat.done", "chat.error"))
        assert end["type"] == "chat.done", end
        assert "blue shoes" in end["text"]
        results = [m for m in received if m.get("type") == "chat.tool_result"]
        assert [r["outcome"] for r in results] == ["ok", "ok", "ok", "ok"], results
        # The page really changed: typed, clicked, then navigated to the cart.
        wait_until(lambda: shop.url.endswith("/cart.html") or None, timeout=10, what="cart")
        assert shop.title() == "Your cart"
        # What the model saw: the snapshot, marked untrusted, listing the search box first.
        second = model.server.requests[1]["messages"]
        snapshot = next(m["content"] for m in second if m.get("role") == "tool")
        assert "<untrusted_page_content>" in snapshot
        assert '[1] textbox "Search products"' in snapshot
        third = model.server.requests[2]["messages"][-1]["content"]
        assert "blue shoes" in third
        # The panel shows the answer and four tool cards, and is no longer busy.
        wait_until(
            lambda: "opened your cart" in page.locator("main.log").inner_text() or None,
            timeout=10,
            what="the answer in the panel",
        )
        assert page.locator("main.log details.tool").count() == 4
        browser.screenshot(panel, "devtools-panel-after-turn")
    finally:
        panel.close()
        shop.close()
