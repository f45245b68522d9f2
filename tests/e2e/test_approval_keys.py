"""Keys typed for the composer never answer an approval prompt (real Chromium, real host).

The composer stays usable during a turn. The prompt takes focus to the card itself, never to
"Allow once", and a button counts only a deliberate click or a fresh key on it once the prompt
is armed (``extension/lib/deliberate.js``). Here real key events (CDP ``Input.dispatchKeyEvent``,
through Playwright's keyboard) keep coming — Space and Enter — from before the prompt appears until
well after it is armed, first with the focus wherever the prompt left it, then back in the
composer. The host must get no approval: the test then clicks Deny, and the page staying unchanged
and the model being told ``APPROVAL_DENIED`` prove Deny was the first and only decision (an
earlier Allow would have run the click). A second test shows that a deliberate keyboard choice —
Tab to "Allow once", then Enter — does approve.

One browser for the module, ``approval_mode = "page-changing"``, the scripted model server.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, Playwright

from tests.e2e.browser import E2EBrowser, PanelPage, launched, wait_until
from tests.e2e.test_panels_at_work import (
    ORDER,
    ModelThread,
    Site,
    open_devtools_panel,
    open_site_tab,
    screenshot,
    session_messages,
    wait_idle,
    wait_turn_end,
    write_config,
)

pytestmark = pytest.mark.browser

PROMPT = "section.prompt.approval"


def _order_turn(marker: str, answer: str) -> list[dict[str, Any]]:
    return [
        {"session": marker, "tool_calls": [{"name": "inspect_page", "arguments": {}}]},
        {"session": marker, "tool_calls": [{"name": "click_index", "arguments": {"index": 1}}]},
        {"session": marker, "text": answer},
    ]


class World:
    def __init__(self, browser: E2EBrowser, site: Site, model: ModelThread) -> None:
        self.browser = browser
        self.site = site
        self.model = model


@pytest.fixture(scope="module")
def world(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("approvalkeys")
    site = Site(
        root / "site",
        {f"order-{n}.html": ORDER.format(n=n) for n in ("keys", "tab")},
    )
    steps = _order_turn("[keys-storm]", "Nothing was ordered.")
    steps += _order_turn("[keys-tab]", "Your order is placed.")
    model = ModelThread({"steps": steps})
    write_config(root / "home", model.url, '[tools]\napproval_mode = "page-changing"\n')
    try:
        with launched(playwright, name="approvalkeys", root=root) as browser:
            browser.wait_state("ready", timeout=20)
            yield World(browser, site, model)
    finally:
        with contextlib.suppress(Exception):
            model.close()
        site.close()


def _start_turn(world: World, which: str, marker: str) -> tuple[Page, PanelPage, str]:
    page, tab_id = open_site_tab(world.browser, f"{world.site.url}/order-{which}.html")
    panel, sid = open_devtools_panel(world.browser, tab_id)
    panel.page.bring_to_front()
    box = panel.page.locator("textarea")
    box.click()
    box.fill(f"{marker} Place my order.")
    box.press("Enter")
    return page, panel, sid


def _focused(panel: PanelPage) -> str:
    return str(
        panel.page.evaluate(
            "() => { const a = document.activeElement;"
            " return a ? a.tagName.toLowerCase() + '.' + [...a.classList].join('.') : ''; }"
        )
    )


def _prompt_state(panel: PanelPage) -> str | None:
    """None before the prompt is shown; then its ``data-armed`` ("false", "true")."""
    return panel.page.evaluate(
        "(sel) => { const p = document.querySelector(sel);"
        " return p ? (p.dataset.armed ?? 'shown') : null; }",
        PROMPT,
    )


def test_space_and_enter_typed_for_the_composer_never_approve(world: World) -> None:
    browser, site, model = world.browser, world.site, world.model
    page, panel, sid = _start_turn(world, "keys", "[keys-storm]")
    keyboard = panel.page.keyboard
    try:
        # Keys keep coming until the prompt is there: the composer has the focus.
        deadline = time.monotonic() + 20
        while _prompt_state(panel) is None:
            assert time.monotonic() < deadline, "no approval prompt"
            keyboard.press("Space")
            keyboard.press("Enter")
        # The prompt put the focus on the card itself, not on a button.
        assert _focused(panel).startswith("section.prompt.approval"), _focused(panel)
        # Enter, Space and letters keep coming through the arming delay and after it.
        storm_end = time.monotonic() + 2.0
        while time.monotonic() < storm_end:
            keyboard.press("Enter")
            keyboard.press("Space")
            keyboard.type("y ")
        assert _prompt_state(panel) == "true", "the prompt never armed"
        # Back in the composer: still nothing reaches the prompt.
        panel.page.locator("textarea").click()
        for _ in range(10):
            keyboard.press("Space")
            keyboard.press("Enter")
        screenshot(browser, panel, "approval-keys-storm")
        assert panel.page.locator(f"{PROMPT} button").count() == 4, "the prompt was answered"
        assert site.count("order-keys") == 0
        assert page.locator("#st").inner_text() == "Not ordered"
        results = [m for m in session_messages(browser, sid) if m["type"] == "chat.tool_result"]
        assert [r["outcome"] for r in results] == ["ok"], results  # inspect only: click waits

        # The first decision the host gets is this Deny.
        panel.page.locator(PROMPT).get_by_role("button", name="Deny").click()
        end = wait_turn_end(browser, sid, timeout=20)
        assert (end["type"], end["text"]) == ("chat.done", "Nothing was ordered."), end
        last = model.requests_with("[keys-storm]")[-1]["messages"][-1]
        assert last["role"] == "tool" and "APPROVAL_DENIED" in last["content"], last
        assert site.count("order-keys") == 0
        assert page.locator("#st").inner_text() == "Not ordered"
        wait_idle(panel, timeout=5)
        assert panel.errors == []
    finally:
        panel.close()
        page.close()


def test_a_deliberate_tab_to_allow_then_enter_approves(world: World) -> None:
    browser, site = world.browser, world.site
    page, panel, sid = _start_turn(world, "tab", "[keys-tab]")
    keyboard = panel.page.keyboard
    try:
        wait_until(
            lambda: _prompt_state(panel) == "true" or None, timeout=20, what="an armed prompt"
        )
        assert _focused(panel).startswith("section.prompt.approval"), _focused(panel)
        keyboard.press("Tab")
        assert panel.page.evaluate("() => document.activeElement.textContent") == "Allow once"
        keyboard.press("Enter")
        end = wait_turn_end(browser, sid, timeout=20)
        assert (end["type"], end["text"]) == ("chat.done", "Your order is placed."), end
        wait_until(
            lambda: page.locator("#st").inner_text() == "Ordered" or None,
            timeout=5,
            what="the page to change",
        )
        assert site.count("order-tab") == 1
        # The answered card gave the focus back to the composer.
        assert panel.page.evaluate("() => document.activeElement.tagName") == "TEXTAREA"
        assert panel.errors == []
    finally:
        panel.close()
        page.close()
