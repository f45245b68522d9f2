"""``browy mcp`` end to end: the SDK's own MCP clients drive the user's browser.

Real headless Chromium with the extension, the real relay and daemon (started by the browser),
``browy mcp`` started by the SDK's stdio client (and ``browy mcp --http`` reached by its
Streamable HTTP client), a local site, and a scripted model for a panel turn running beside the
clients. The side panel page (``sidepanel.html``, a v2 panel) is where the user is asked.

- the tools' schemas all validate; no host tool is offered;
- consent: the first call of a client asks in the panel, "Always" is remembered (config) and the
  client is not asked again (a second process of it neither);
- new tab (in the background), snapshot, type and click by index, screenshot as MCP image;
- two MCP clients and a panel turn at once, each on its own tab;
- a navigation cancelled by the client (``notifications/cancelled``) ends at once, the next
  call works;
- the daemon killed mid-click: the call comes back ``unknown`` at once, the click is not
  repeated, the next call works on a new daemon;
- HTTP: no token or a foreign ``Origin`` is refused; with the token, it works.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from mcp import types
from playwright.sync_api import Playwright

from tests.e2e.browser import (
    E2EBrowser,
    PanelPage,
    daemon_pid,
    launched,
    panel_session_id,
    pid_alive,
    wait_until,
)
from tests.e2e.mcp_client import BROWY, McpClient, text_of
from tests.e2e.test_panels_at_work import (
    ModelThread,
    Site,
    open_devtools_panel,
    open_site_tab,
    send_task,
    wait_turn_end,
    write_config,
)

pytestmark = pytest.mark.browser

FORM = """<!doctype html><title>Greeter {n}</title>
<h1>Greeter {n}</h1>
<label>Name <input id="name"></label>
<button id="go" onclick="document.getElementById('out').textContent =
  'Hello, ' + document.getElementById('name').value">Greet</button>
<p id="out">nobody greeted</p>
"""
PAY = """<!doctype html><title>Pay</title>
<h1>Pay</h1>
<button id="pay" onclick="window.paid = (window.paid || 0) + 1;
  document.getElementById('st').textContent = 'Paid ' + window.paid + ' time(s)';
  const x = new XMLHttpRequest(); x.open('GET', '/hit/pay', false); x.send();">Pay now</button>
<p id="st">Not paid</p>
"""
POPUP = """<!doctype html><title>Links</title>
<h1>Links</h1>
<a href="/plain-P.html?popup=1" target="_blank">Open the help page</a>
"""
PLAIN = "<!doctype html><title>{t}</title><h1>{t}</h1><p>Nothing here.</p>\n"


class World:
    def __init__(self, browser: E2EBrowser, site: Site, model: ModelThread, panel: PanelPage):
        self.browser = browser
        self.site = site
        self.model = model
        self.panel = panel
        self.clients: list[McpClient] = []

    def client(self, name: str, **kwargs: Any) -> McpClient:
        client = McpClient(self.browser.home, name, **kwargs)
        self.clients.append(client)
        return client

    def answer_consent(self, decision: str, *, client: str) -> None:
        """Click *decision* on the panel's card asking about *client* (once it is armed)."""
        page = self.panel.page
        card = page.locator("section.prompt.approval:not(.answered)").filter(has_text=client)
        button = card.locator(f'button[data-decision="{decision}"]')
        wait_until(
            lambda: (button.count() == 1 and button.is_enabled()) or None,
            timeout=15,
            what=f"the consent card for {client}",
        )
        button.click()


def _script() -> dict[str, Any]:
    return {
        "steps": [
            {"session": "[panel-1]", "tool_calls": [{"name": "inspect_page", "arguments": {}}]},
            {"session": "[panel-1]", "text": "The panel's page is Plain P."},
        ]
    }


@pytest.fixture(scope="module")
def world(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("mcp")
    pages = {"pay.html": PAY, "plain-P.html": PLAIN.format(t="Plain P"), "popup.html": POPUP}
    for n in ("A", "B", "1"):
        pages[f"form-{n}.html"] = FORM.format(n=n)
    site = Site(root / "site", pages)
    model = ModelThread(_script())
    write_config(root / "home", model.url, '[tools]\napproval_mode = "never"\n')
    try:
        with launched(playwright, name="mcp", root=root) as browser:
            browser.wait_state("ready", timeout=20)
            panel = browser.open_panel("sidepanel.html")
            sid = panel_session_id(panel, "sp")
            browser.wait_received(
                lambda m: m.get("type") == "session.ready" and m.get("sessionId") == sid,
                timeout=15,
                what="the side panel's session",
            )
            world = World(browser, site, model, panel)
            try:
                yield world
            finally:
                for client in world.clients:
                    client.close()
    finally:
        with contextlib.suppress(Exception):
            model.close()
        site.close()


def _index_of(snapshot: str, needle: str) -> int:
    """The element number of the first snapshot line that mentions *needle*."""
    for line in snapshot.splitlines():
        match = re.search(r"\[(\d+)\]", line)
        if match and needle in line:
            return int(match.group(1))
    raise AssertionError(f"no element with {needle!r} in:\n{snapshot}")


def _greet(client: McpClient, url: str, name: str) -> str:
    """In a new background tab: snapshot, type *name*, click Greet; the page's greeting."""
    opened = client.call_now("new_tab", {"url": url})
    assert not opened.is_error, text_of(opened)
    snap = text_of(client.call_now("inspect_page"))
    typed = client.call_now("type_index", {"index": _index_of(snap, "Name"), "text": name})
    assert not typed.is_error, text_of(typed)
    clicked = client.call_now("click_index", {"index": _index_of(snap, "Greet")})
    assert not clicked.is_error, text_of(clicked)
    return _page_text(client.call_now("extract_text", {"selector": "#out"}))


def _page_text(result: types.CallToolResult) -> str:
    """The page text of a read (it comes marked as untrusted page content)."""
    assert not result.is_error, text_of(result)
    text = text_of(result).strip()
    assert text.startswith("<untrusted_page_content>"), text
    return (
        text.removeprefix("<untrusted_page_content>").split("</untrusted_page_content>")[0].strip()
    )


# --------------------------------------------------------------------------------------------


def test_tools_validate_and_consent_is_asked_once_then_remembered(world: World) -> None:
    client = world.client("e2e-agent")
    tools = client.run(client.session.list_tools).result(30).tools
    names = {t.name for t in tools}
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    assert {"navigate", "inspect_page", "click_index", "type_index", "screenshot"} <= names
    assert not names & {"bash", "run_script", "save_file", "read_file", "ask_user"}

    pending = client.call("list_tabs")
    world.answer_consent("allow_site", client="e2e-agent")
    result = pending.result(timeout=30)
    assert not result.is_error, text_of(result)
    assert "waiting for the browser's user" in " ".join(client.progress)
    assert 'allowed_clients = ["e2e-agent"]' in (world.browser.home / "config.toml").read_text()

    # Another process of the same client, pinned to this browser by the name its extension
    # gave (headless Chromium): not asked again.
    again = world.client("e2e-agent", args=("--browser", "chromium"))
    assert not again.call_now("list_tabs", timeout=20).is_error
    cards = world.panel.page.locator("section.prompt.approval").filter(has_text="e2e-agent")
    assert cards.count() == 1


def test_a_client_works_in_its_own_background_tab_and_sees_a_screenshot(world: World) -> None:
    client = world.client("e2e-agent")
    before = world.browser.worker.evaluate(
        "async () => (await chrome.tabs.query({active: true, currentWindow: true}))[0].id"
    )
    assert _greet(client, f"{world.site.url}/form-1.html", "Ada") == "Hello, Ada"
    after = world.browser.worker.evaluate(
        "async () => (await chrome.tabs.query({active: true, currentWindow: true}))[0].id"
    )
    assert after == before, "the client's tab opened in the background"
    shot = client.call_now("screenshot")
    images = [c for c in shot.content if isinstance(c, types.ImageContent)]
    assert not shot.is_error and len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data)[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_tab_its_click_opens_is_named_in_the_result_and_is_the_clients_own(
    world: World,
) -> None:
    client = world.client("e2e-agent")
    assert not client.call_now("new_tab", {"url": f"{world.site.url}/popup.html"}).is_error
    snap = text_of(client.call_now("inspect_page"))
    clicked = client.call_now("click_index", {"index": _index_of(snap, "Open the help page")})
    said = text_of(clicked)
    assert not clicked.is_error and "opened a new tab" in said, said
    match = re.search(r"tab (\d+) \S*plain-P\.html\?popup=1", said)
    assert match, said
    # It is the client's own (opened by its action): switching asks nobody.
    switched = client.call_now("switch_tab", {"tab_id": int(match.group(1))}, timeout=20)
    assert not switched.is_error, text_of(switched)
    info = client.call_now("get_page_info")
    assert "popup=1" in text_of(info), text_of(info)


def test_two_clients_and_a_panel_turn_at_once_each_on_its_own_tab(world: World) -> None:
    browser, site = world.browser, world.site
    a = world.client("e2e-agent")
    b = world.client("e2e-other")
    first = b.call("list_tabs")  # B is new: asked once, allowed once
    world.answer_consent("allow", client="e2e-other")
    assert not first.result(timeout=30).is_error
    page, tab_id = open_site_tab(browser, f"{site.url}/plain-P.html")
    panel, sid = open_devtools_panel(browser, tab_id)
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            greet_a = pool.submit(_greet, a, f"{site.url}/form-A.html", "Alice")
            greet_b = pool.submit(_greet, b, f"{site.url}/form-B.html", "Bob")
            send_task(panel, "[panel-1] What page is this?")
            assert greet_a.result(timeout=60) == "Hello, Alice"
            assert greet_b.result(timeout=60) == "Hello, Bob"
        end = wait_turn_end(browser, sid, timeout=30)
        assert end["type"] == "chat.done" and "Plain P" in end["text"], end
    finally:
        panel.close()
        page.close()


def test_the_panel_lists_the_client_groups_its_tabs_stops_it_and_hands_it_a_tab(
    world: World,
) -> None:
    browser, site, panel = world.browser, world.site, world.panel
    client = world.client("e2e-agent")
    opened = client.call_now("new_tab", {"url": f"{site.url}/plain-P.html"})
    match = re.search(r"opened tab (\d+)", text_of(opened))
    assert not opened.is_error and match, text_of(opened)
    own_tab = int(match.group(1))
    # Its tabs are in a tab group named after it.
    grouped = wait_until(
        lambda: browser.worker.evaluate(
            "async () => { const [g] = await chrome.tabGroups.query({title: 'e2e-agent'});"
            " return g ? (await chrome.tabs.query({groupId: g.id})).length : 0; }"
        ),
        timeout=10,
        what="the client's tab group",
    )
    assert grouped >= 1
    # The panel lists it (other clients of the module are listed too: found by its tab).
    mine = panel.page.locator(f'.clients .client[data-tabs*="{own_tab}"]')
    wait_until(lambda: mine.count() == 1 or None, timeout=10, what="the client in the panel")
    client_id = mine.get_attribute("data-client")
    row = panel.page.locator(f'.clients .client[data-client="{client_id}"]')
    assert "e2e-agent" in row.inner_text()
    # Stop, while a navigation of it hangs: the call ends, nothing is repeated.
    site.hold("stopped-nav")
    try:
        pending = client.call("navigate", {"url": f"{site.url}/hit/stopped-nav"})
        site.wait_arrived("stopped-nav", timeout=10)
        row.locator('button[data-action="stop"]').click()
        stopped = pending.result(timeout=10)
    finally:
        site.release("stopped-nav")
    assert stopped.is_error, text_of(stopped)
    assert site.count("stopped-nav") == 1
    # It must be allowed again (remembered clients are let in at once); then the user hands
    # it the tab the panel's window shows: it works there.
    assert not client.call_now("list_tabs", timeout=20).is_error
    page, tab_id = open_site_tab(browser, f"{site.url}/form-A.html?handed=1")
    page.bring_to_front()
    wait_until(lambda: row.count() == 1 or None, timeout=10, what="the client listed again")
    row.locator('button[data-action="hand"]').click()
    wait_until(
        lambda: tab_id in json.loads(row.get_attribute("data-tabs") or "[]") or None,
        timeout=10,
        what="the handed tab in the client's row",
    )
    info = client.call_now("get_page_info", timeout=20)
    assert not info.is_error and "Greeter A" in text_of(info), text_of(info)
    page.close()


def test_a_cancelled_navigation_ends_at_once_and_the_next_call_works(world: World) -> None:
    client = world.client("e2e-agent")
    site = world.site
    assert not client.call_now("new_tab", {"url": f"{site.url}/plain-P.html"}).is_error
    site.hold("slow-nav")
    try:
        cancelled = client.cancel_after(
            1.0, "navigate", {"url": f"{site.url}/hit/slow-nav", "timeout": 30}
        )
        site.wait_arrived("slow-nav", timeout=10)
        assert cancelled.result(timeout=5) is True
    finally:
        site.release("slow-nav")
    info = client.call_now("get_page_info", timeout=20)
    assert not info.is_error, text_of(info)
    assert site.count("slow-nav") == 1


def test_the_daemon_killed_mid_click_reports_unknown_and_never_repeats_it(world: World) -> None:
    client = world.client("e2e-agent")
    site, home = world.site, world.browser.home
    assert not client.call_now("new_tab", {"url": f"{site.url}/pay.html"}).is_error
    snap = text_of(client.call_now("inspect_page"))
    site.hold("pay")
    try:
        click = client.call("click_index", {"index": _index_of(snap, "Pay now")})
        site.wait_arrived("pay", timeout=15)
        old = daemon_pid(home)
        assert old is not None and pid_alive(old)
        os.kill(old, signal.SIGKILL)
        result = click.result(timeout=10)
    finally:
        site.release("pay")
    assert result.is_error
    assert text_of(result).startswith("outcome unknown"), text_of(result)
    # The next call reaches a new daemon (started by the relay or by browy mcp) and works.
    info = client.call_now("extract_text", {"selector": "#st"}, timeout=60)
    assert _page_text(info) == "Paid 1 time(s)"
    assert site.count("pay") == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, headers: dict[str, str]) -> int:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "probe", "version": "1"}}}
    ).encode()  # fmt: skip
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except urllib.error.URLError:
        return 0  # not listening yet


def test_http_needs_the_token_refuses_a_foreign_origin_and_serves_the_browser(
    world: World,
) -> None:
    home = world.browser.home
    port = _free_port()
    proc = subprocess.Popen(
        [BROWY, "mcp", "--http", str(port)],
        env={**os.environ, "BROWY_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "bearer token" in first, first
        token = (home / "mcp-token").read_text().strip()
        assert token in first  # shown once, when made
        assert (home / "mcp-token").stat().st_mode & 0o777 == 0o600
        url = f"http://127.0.0.1:{port}/mcp"
        wait_until(
            lambda: _post(url, {}) == 401 or None, timeout=15, what="the HTTP server to answer"
        )
        assert _post(url, {"Authorization": "Bearer wrong"}) == 401
        auth = {"Authorization": f"Bearer {token}"}
        assert _post(url, {**auth, "Origin": "http://evil.example"}) in (400, 403)
        assert _post(url, {**auth, "Host": f"evil.example:{port}"}) in (400, 403, 421)
        assert _post(url, auth) == 200

        client = world.client("e2e-http", http_url=url, token=token)
        pending = client.call("list_tabs")
        world.answer_consent("allow", client="e2e-http")
        result = pending.result(timeout=30)
        assert not result.is_error, text_of(result)
        assert "sidepanel.html" in text_of(result)
        client.close()
    finally:
        proc.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
