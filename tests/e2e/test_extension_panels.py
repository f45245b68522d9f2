"""The extension's pages against the real host: side panel, DevTools panel, options page.

Each page is opened as a normal tab (the real side panel needs a user gesture), must render with
no console error, and must register its session with the service worker and get session.ready.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Playwright

from tests.e2e.browser import (
    EXTENSION_DIR,
    E2EBrowser,
    PanelPage,
    banner_text,
    launched,
    panel_session_id,
    wait_until,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser(
    playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[E2EBrowser]:
    with launched(playwright, name="panels", root=tmp_path_factory.mktemp("panels")) as b:
        b.wait_state("ready", timeout=20.0)
        yield b


def _wait_session_ready(browser: E2EBrowser, sid: str) -> None:
    wait_until(
        lambda: sid in browser.sessions(), timeout=5.0, what=f"{sid} in browyTest.sessions()"
    )
    browser.wait_received(
        lambda m: m.get("type") == "session.ready" and m.get("sessionId") == sid,
        timeout=10.0,
        what=f"session.ready for {sid}",
    )


def _new_session(browser: E2EBrowser, before: list[str], prefix: str) -> str:
    def probe() -> str | None:
        new = [s for s in browser.sessions() if s not in before and s.startswith(prefix)]
        return new[0] if len(new) == 1 else None

    return wait_until(probe, timeout=5.0, what=f"a new {prefix} session")


def _close_and_check(browser: E2EBrowser, panel: PanelPage, sid: str) -> None:
    """Closing the page ends its session in the worker (the port closes)."""
    panel.close()
    wait_until(lambda: sid not in browser.sessions(), timeout=5.0, what=f"{sid} to end")


def test_side_panel(browser: E2EBrowser) -> None:
    browser.clear_received()
    panel = browser.open_panel("sidepanel.html")
    try:
        sid = panel_session_id(panel, "sp")
        assert sid.startswith("sp-")
        _wait_session_ready(browser, sid)
        wait_until(lambda: banner_text(panel) == "", timeout=5.0, what="the banner to hide")
        page = panel.page
        assert page.locator("textarea[aria-label='Message']").is_visible()
        assert page.locator("button.primary", has_text="Send").is_visible()
        assert page.locator("select.model").count() == 1
        browser.screenshot(panel, "sidepanel")
        assert panel.errors == []
    finally:
        panel.close()
    wait_until(lambda: sid not in browser.sessions(), timeout=5.0, what=f"{sid} to end")


def test_devtools_panel(browser: E2EBrowser) -> None:
    target = browser.context.new_page()
    try:
        target.goto("data:text/html,<title>inspected</title><p>inspected page</p>")
        tab_id = wait_until(
            lambda: browser.worker.evaluate(
                "async () => (await chrome.tabs.query({})).find((t) => t.title === 'inspected')?.id"
            ),
            timeout=5.0,
            what="the inspected tab's id",
        )
        browser.clear_received()
        panel = browser.open_panel(f"devtools-panel.html?inspectedTabId={tab_id}")
        try:
            sid = panel_session_id(panel, "dt")
            assert sid.startswith("dt-")
            stored_key = panel.page.evaluate("() => chrome.storage.session.get(null)")
            assert f"browy.panel.dt.{tab_id}" in stored_key
            _wait_session_ready(browser, sid)
            wait_until(lambda: banner_text(panel) == "", timeout=5.0, what="the banner to hide")
            assert panel.page.locator("textarea[aria-label='Message']").is_visible()
            browser.screenshot(panel, "devtools-panel")
            assert panel.errors == []
            _close_and_check(browser, panel, sid)
        finally:
            panel.close()
    finally:
        target.close()


def test_options_page(browser: E2EBrowser) -> None:
    before = browser.sessions()
    browser.clear_received()
    panel = browser.open_panel("options.html")
    try:
        sid = _new_session(browser, before, "opts-")
        _wait_session_ready(browser, sid)
        page = panel.page
        wait_until(
            lambda: page.evaluate(
                "() => document.getElementById('status').className.includes('state-ready')"
            ),
            timeout=5.0,
            what="the options page's host status to show ready",
        )
        status = page.locator("#status").inner_text()
        assert status.startswith("Connected"), status
        assert "protocol 2" in status, status
        assert page.locator("#doctor-run").is_visible()
        browser.screenshot(panel, "options")
        assert panel.errors == []
        _close_and_check(browser, panel, sid)
    finally:
        panel.close()


def test_options_status_shows_no_stray_null(browser: E2EBrowser) -> None:
    panel = browser.open_panel("options.html")
    try:
        page = panel.page
        wait_until(
            lambda: page.evaluate(
                "() => document.getElementById('status').className.includes('state-ready')"
            ),
            timeout=5.0,
            what="the options page's host status to show ready",
        )
        lines = page.locator("#status").inner_text().splitlines()
        assert "null" not in [line.strip() for line in lines], lines
    finally:
        panel.close()


def test_the_pages_take_their_strings_from_the_english_table(browser: E2EBrowser) -> None:
    """The strings live in _locales/en/messages.json: Chrome resolves them (no key shows)."""
    messages = json.loads(
        (EXTENSION_DIR / "_locales" / "en" / "messages.json").read_text(encoding="utf-8")
    )
    panel = browser.open_panel("options.html")
    try:
        page = panel.page
        assert page.evaluate("() => chrome.i18n.getMessage('extName')") == "Browy"
        assert page.title() == messages["optionsTitle"]["message"]
        assert page.locator("h1").inner_text() == messages["optionsTitle"]["message"]
        assert page.locator("#doctor-run").inner_text() == messages["optionsRunChecks"]["message"]
        # The side panel's composer and buttons, built by lib/chat-ui.js with t().
        side = browser.open_panel("sidepanel.html")
        try:
            box = side.page.locator("textarea")
            assert box.get_attribute("placeholder") == messages["composerPlaceholder"]["message"]
            assert side.page.locator("button.primary").inner_text() == "Send"
            assert side.errors == []
        finally:
            side.close()
        assert panel.errors == []
    finally:
        panel.close()


def test_the_options_page_restarts_a_stuck_host(browser: E2EBrowser) -> None:
    """Last in the module: it replaces the daemon. The relay starts the next one."""
    from tests.e2e.browser import daemon_pid

    old = daemon_pid(browser.home)
    panel = browser.open_panel("options.html")
    try:
        page = panel.page
        wait_until(
            lambda: page.evaluate(
                "() => document.getElementById('status').className.includes('state-ready')"
            ),
            timeout=10.0,
            what="the options page's host status to show ready",
        )
        page.locator("#daemon-restart").click()
        wait_until(
            lambda: page.locator("#restart-msg").inner_text() == "The host restarted." or None,
            timeout=30.0,
            what="the options page to say the host restarted",
        )
        new = daemon_pid(browser.home)
        assert old is not None and new is not None and new != old
        assert page.locator("#daemon-restart").is_enabled()
        assert panel.errors == []
    finally:
        panel.close()
