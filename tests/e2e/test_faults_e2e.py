"""Faults in the real product path: the service worker or the daemon dies in the middle of a turn.

One browser for the module (``[tools] approval_mode = "never"``: clicks run without a prompt) and
one scripted model server; each test's task names its own ``session`` marker of the script.

- the service worker is stopped (``ServiceWorker.stopAllWorkers`` over CDP) while a click is in
  flight: the host keeps the session, the click comes back ``unknown`` and is never sent again —
  the page counts its clicks (a page-side effect) and sees exactly one;
- the daemon is SIGKILLed mid-turn: the panel gets a definite end (no stuck busy state), and the
  next turn works once the relay has started a new daemon.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Playwright, Worker

from tests.e2e.browser import (
    EXTENSION_ORIGIN,
    E2EBrowser,
    daemon_pid,
    launched,
    pid_alive,
    relay_pids,
    wait_until,
)
from tests.e2e.test_panels_at_work import (
    ModelThread,
    Site,
    is_busy,
    log_text,
    open_devtools_panel,
    open_site_tab,
    screenshot,
    send_task,
    session_messages,
    wait_idle,
    wait_turn_end,
    write_config,
)

pytestmark = pytest.mark.browser

PAY = """<!doctype html><title>Pay</title>
<h1>Pay</h1>
<button id="pay" onclick="window.paid = (window.paid || 0) + 1;
  document.getElementById('st').textContent = 'Paid ' + window.paid + ' time(s)';
  const x = new XMLHttpRequest(); x.open('GET', '/hit/pay', false); x.send();">Pay now</button>
<p id="st">Not paid</p>
"""
SLOW = "<!doctype html><title>Slow</title><h1>Slow</h1><p>A page for the daemon-kill test.</p>\n"


def _script() -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        # 4. the worker stops while the click is in flight
        {"session": "[sw-1]", "tool_calls": [{"name": "inspect_page", "arguments": {}}]},
        {"session": "[sw-1]", "tool_calls": [{"name": "click_index", "arguments": {"index": 1}}]},
        {
            "session": "[sw-1]",
            "text": "I pressed Pay once; its outcome is unknown, so I did not press it again.",
            "fault": {"kind": "delay", "first_chunk_s": 1.0},
        },
        # 5. the daemon is killed while the model answers; then the next turn works
        # ("[kill-2]" first: the second task's conversation also holds the first task's marker.)
        {"session": "[kill-2]", "text": "Back after the restart."},
        {"session": "[kill-1]", "text": "never seen", "fault": {"kind": "hang"}},
    ]
    return {"steps": steps}


class World:
    def __init__(self, browser: E2EBrowser, site: Site, model: ModelThread) -> None:
        self.browser = browser
        self.site = site
        self.model = model


@pytest.fixture(scope="module")
def world(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("faults")
    site = Site(root / "site", {"pay.html": PAY, "slow.html": SLOW})
    model = ModelThread(_script())
    write_config(root / "home", model.url, '[tools]\napproval_mode = "never"\n')
    try:
        with launched(playwright, name="faults", root=root) as browser:
            browser.wait_state("ready", timeout=20)
            yield World(browser, site, model)
    finally:
        with contextlib.suppress(Exception):
            model.close()
        site.close()


def _workers(browser: E2EBrowser) -> list[Worker]:
    prefix = f"{EXTENSION_ORIGIN}sw.js"
    return [w for w in browser.context.service_workers if w.url.startswith(prefix)]


@dataclass
class WorkerStop:
    """What happened when the worker was stopped while the click was in flight."""

    sid: str
    before: list[dict[str, Any]]  # what the first incarnation received, up to the stop
    after: list[dict[str, Any]]  # what the restarted worker received for the session
    end: dict[str, Any]
    cards: list[str]  # the panel's tool cards: "<tool> <outcome>"
    paid_in_page: int
    paid_on_server: int
    model_calls: int
    busy_after: bool


@pytest.fixture(scope="module")
def worker_stop(world: World) -> Iterator[WorkerStop]:
    """Stop the service worker (``ServiceWorker.stopAllWorkers``) while a click is in flight.

    The page's click handler counts the click, then blocks in a synchronous XHR that the site
    holds: the click's ``Input.dispatchMouseEvent`` has no answer until the site lets it go.
    """
    browser, site, model = world.browser, world.site, world.model
    page, tab_id = open_site_tab(browser, f"{site.url}/pay.html")
    panel, sid = open_devtools_panel(browser, tab_id)
    relays = len(relay_pids(browser.home))
    browser.worker.evaluate("() => { globalThis.browyMark = 1; }")
    try:
        site.hold("pay")
        send_task(panel, "[sw-1] Pay my bill.")
        site.wait_arrived("pay", timeout=20)  # the click is in flight now
        before = session_messages(browser, sid)
        screenshot(browser, panel, "sw-stop-click-in-flight")
        cdp = browser.context.new_cdp_session(panel.page)
        try:
            cdp.send("ServiceWorker.enable")
            cdp.send("ServiceWorker.stopAllWorkers")
        finally:
            cdp.detach()
        # A new incarnation (the old one's globals are gone) with a new relay; Playwright keeps
        # the same Worker object for the restarted worker. The panel's port reconnects and
        # re-registers the same session id.
        wait_until(
            lambda: browser.worker.evaluate("() => globalThis.browyMark === undefined") or None,
            timeout=15,
            what="the restarted service worker",
        )
        wait_until(
            lambda: len(relay_pids(browser.home)) == relays + 1 or None,
            timeout=15,
            what="the new worker's relay",
        )
        browser.wait_state("ready", timeout=20)
        site.release("pay")
        end = wait_turn_end(browser, sid, timeout=30)
        wait_idle(panel, timeout=5)
        wait_until(lambda: page.evaluate("() => window.paid") or None, timeout=10, what="paid")
        screenshot(browser, panel, "sw-stop-after")
        cards = panel.page.evaluate(
            "() => [...document.querySelectorAll('main.log details.tool')].map((c) =>"
            " c.querySelector('.tool-name').textContent + ' '"
            " + c.querySelector('.tool-outcome').textContent)"
        )
        yield WorkerStop(
            sid=sid,
            before=before,
            after=session_messages(browser, sid),
            end=end,
            cards=cards,
            paid_in_page=page.evaluate("() => window.paid"),
            paid_on_server=site.count("pay"),
            model_calls=len(model.requests_with("[sw-1]")),
            busy_after=is_busy(panel),
        )
    finally:
        site.release("pay")
        panel.close()
        page.close()


def test_worker_stopped_mid_click_keeps_the_session_ends_the_turn_and_never_repeats_it(
    worker_stop: WorkerStop,
) -> None:
    ws = worker_stop
    # The click was sent once and counted once, in the page and at the site: never twice.
    assert [m["tool"] for m in ws.before if m["type"] == "chat.tool_call"] == [
        "inspect_page",
        "click_index",
    ], ws.before
    assert ws.paid_in_page == 1
    assert ws.paid_on_server == 1
    # The host kept the session: the restarted worker's panel registered the same id again.
    assert [m["type"] for m in ws.after][:1] == ["session.ready"], ws.after
    # The turn ended exactly once, on the new connection, and the panel is not busy.
    ends = [m for m in ws.after if m["type"] in ("chat.done", "chat.error")]
    assert ends == [ws.end], ws.after
    assert not ws.busy_after
    # No click_index was sent again after the restart.
    assert not [m for m in ws.after if m["type"] == "chat.tool_call"], ws.after


def test_worker_stopped_mid_click_the_click_comes_back_unknown(worker_stop: WorkerStop) -> None:
    ws = worker_stop
    results = [m for m in ws.before + ws.after if m["type"] == "chat.tool_result"]
    assert [r.get("outcome") for r in results] == ["ok", "unknown"], results
    assert ws.cards[-1].startswith("click_index unknown"), ws.cards


def _linked_daemons(browser: E2EBrowser) -> list[int]:
    try:
        text = (browser.home / "logs" / "relay.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [int(m) for m in re.findall(r"linked to browyd pid (\d+)", text)]


def test_daemon_killed_mid_turn_the_panel_gets_an_end_and_the_next_turn_works(
    world: World,
) -> None:
    browser, site, model = world.browser, world.site, world.model
    page, tab_id = open_site_tab(browser, f"{site.url}/slow.html")
    panel, sid = open_devtools_panel(browser, tab_id)
    try:
        send_task(panel, "[kill-1] Take your time.")
        wait_until(lambda: model.requests_with("[kill-1]") or None, timeout=15, what="the call")
        assert is_busy(panel)
        screenshot(browser, panel, "daemon-kill-busy")
        old = daemon_pid(browser.home)
        assert old is not None and pid_alive(old)
        os.kill(old, signal.SIGKILL)
        # A definite end: chat.error then status.error, and the panel leaves busy.
        end = wait_turn_end(browser, sid, timeout=10)
        assert end["type"] == "chat.error", end
        assert end.get("code") == "CONNECTION_LOST", end
        wait_idle(panel, timeout=2)
        wait_until(
            lambda: end["message"] in log_text(panel) or None, timeout=5, what="the error shown"
        )
        screenshot(browser, panel, "daemon-kill-ended")
        # The relay starts a new daemon and links to it.
        new = wait_until(
            lambda: next((p for p in _linked_daemons(browser) if p != old), None),
            timeout=30,
            what="the relay to link to a new daemon",
        )
        assert pid_alive(new) and not pid_alive(old)
        browser.clear_received()
        send_task(panel, "[kill-2] Are you back?")
        end = wait_turn_end(browser, sid, timeout=20)
        assert (end["type"], end["text"]) == ("chat.done", "Back after the restart."), end
        wait_idle(panel, timeout=5)
        wait_until(
            lambda: "Back after the restart." in log_text(panel) or None,
            timeout=5,
            what="the answer after the restart",
        )
        screenshot(browser, panel, "daemon-kill-next-turn")
        assert panel.errors == []
    finally:
        panel.close()
        page.close()
