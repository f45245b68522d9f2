"""Real-world page patterns, end to end: the daemon's tools drive local pages in a real headless
Chromium through our extension, the relay and the daemon (issue 15).

One browser for the module. Every pattern runs twice: with the extension speaking protocol 2, and
with it forced to say hello as a v1 service worker (``browyTest.useProtocol(1)``), so the host's
v1 path is what drives it. The tools are called by a local client as ``tool.call`` turns
(:mod:`tests.e2e.tool_client`), with ``approval_mode = "never"`` (the approval rules of each
pattern are unit-tested).

- JavaScript dialogs: a click that opens a ``confirm`` returns at once saying so; the snapshot
  shows the dialog; ``handle_dialog`` dismisses or accepts it (a prompt gets its text); an alert
  a timer opens after the click; leaving a page with unsaved input asks (``beforeunload``).
- Recycled rows: after a search re-renders a list that reuses its row elements, a number from the
  fresh snapshot clicks the row that snapshot showed; a number from before the re-render is
  refused (STALE_REF). A row of 10,000 that is not rendered is found by scrolling, with progress.
- Closed shadow roots: their controls are listed, typed into, checked and clicked.
- Drag and drop by index: an HTML5 card onto a column, a pointer-driven sortable list reordered.
- Cross-origin frames: a card form on another site (a child session of the tab, v2 only: on v1
  the snapshot says it cannot be reached and how to get to it) and a cross-origin frame of the
  same site (in the tab's own session, v1 too), listed in the same snapshot and used.
- Every action checks what it did: typing into date, time and number fields is read back (and
  their picker's value set), a reformatting mask is accepted, a field that keeps less fails, a
  select the page refuses fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Playwright

from tests.e2e.browser import REPO_ROOT, E2EBrowser, launched, wait_until
from tests.e2e.test_panels_at_work import Site, write_config
from tests.e2e.tool_client import ToolClient, client_on_protocol, index_of

pytestmark = pytest.mark.browser

#: A step that a dialog used to hold to the 10 s browser deadline must now take far less.
QUICK_S = 5.0

ORDERS = """<!doctype html><title>Orders</title>
<h1>Orders</h1>
<ul><li id="o12">Order #12 <button id="del12">Delete #12</button></li></ul>
<button id="save">Save</button> <button id="name">Name</button> <button id="later">Later</button>
<label>Notes <input id="notes"></label> <a href="plain.html">Leave</a>
<p id="log"></p>
<script>
const log = (t) => { document.getElementById('log').textContent += t + ';'; };
document.getElementById('del12').onclick = () => {
  if (confirm('Delete order #12?')) { document.getElementById('o12').remove(); log('deleted'); }
  else log('kept');
};
document.getElementById('save').onclick = () => { alert('Saved!'); log('saved'); };
document.getElementById('name').onclick = () => log('name=' + prompt('Your name?', 'guest'));
document.getElementById('later').onclick =
  () => setTimeout(() => { alert('Later!'); log('later'); }, 30);
addEventListener('beforeunload', (e) => {
  if (document.getElementById('notes').value) { e.preventDefault(); e.returnValue = ''; }
});
</script>
"""
#: 10,000 orders in a window-scrolled list that recycles a fixed pool of row links (their text
#: and position are reassigned on scroll and on search); a search box filters the orders.
ORDER_LIST = """<!doctype html><title>Order list</title>
<style>body { margin: 0; font: 14px sans-serif; } #list { position: relative; }
.row { position: absolute; left: 8px; height: 26px; width: 320px; display: block; }</style>
<h1>Orders</h1><label>Search <input id="q"></label> <p id="picked">nothing picked</p>
<div id="list"></div>
<script>
const ALL = Array.from({ length: 10000 }, (_, i) => 'Order #' + (100001 + i));
const H = 30, list = document.getElementById('list'), pool = [];
let rows = ALL;
function render() {
  list.style.height = rows.length * H + 'px';
  const top = scrollY - list.offsetTop;
  const first = Math.max(0, Math.floor(top / H) - 2);
  const last = Math.min(rows.length - 1, Math.ceil((top + innerHeight) / H) + 2);
  const need = Math.max(0, last - first + 1);
  while (pool.length < need) {
    const a = list.appendChild(document.createElement('a'));
    a.className = 'row'; a.href = '#';
    a.onclick = (e) => { e.preventDefault();
      document.getElementById('picked').textContent = 'picked ' + a.textContent; };
    pool.push(a);
  }
  pool.forEach((a, slot) => { a.hidden = slot >= need; });
  for (let i = first; i <= last; i++) {
    const a = pool[i % need];
    a.textContent = rows[i]; a.style.top = i * H + 'px';
  }
}
document.getElementById('q').addEventListener('input', (e) => {
  rows = ALL.filter((t) => t.includes(e.target.value)); scrollTo(0, 0); render();
});
addEventListener('scroll', render, { passive: true });
render();
</script>
"""
#: A checkout page whose card form is a frame of another site (localhost vs 127.0.0.1: out of
#: process under site isolation) and whose newsletter box is a cross-origin frame of the same site.
CHECKOUT = """<!doctype html><title>Checkout</title><h1>Checkout</h1><p id="out">nothing yet</p>
<iframe src="{other}/card.html" style="width:420px;height:150px;border:4px solid #333"></iframe>
<iframe src="{same}/news.html" style="width:300px;height:80px"></iframe>
<script>
addEventListener('message', (e) => {{ document.getElementById('out').textContent = e.data; }});
</script>"""
CARD = """<!doctype html><title>Card</title>
<label>Card number <input autocomplete="cc-number"></label> <label>Name <input id="n"></label>
<button onclick="parent.postMessage('paid by ' + document.getElementById('n').value, '*')">
Pay</button>"""
NEWS = """<!doctype html><title>News</title>
<a href="#" onclick="parent.postMessage('subscribed', '*'); return false">Subscribe</a>"""
#: Frames inside a frame of another site: a card issuer's check in a payment form. The issuer
#: (localhost) holds a challenge of the top's own site (127.0.0.1: another process, a child of
#: the issuer's session) and a help box of its own site on another port (the issuer's renderer).
NESTED = """<!doctype html><title>Pay</title><h1>Pay</h1><p id="out">nothing yet</p>
<iframe src="{other}/issuer.html" style="width:520px;height:300px;border:4px solid #333"></iframe>
<script>
addEventListener('message', (e) => {{ document.getElementById('out').textContent = e.data; }});
</script>"""
ISSUER = """<!doctype html><title>Issuer</title><p>Your bank</p>
<iframe src="{top}/challenge.html" style="width:260px;height:100px"></iframe>
<iframe src="{issuer2}/help.html" style="width:180px;height:100px"></iframe>"""
CHALLENGE = """<!doctype html><title>Challenge</title><label>Code <input id="c"></label>
<button onclick="top.postMessage('code ' + document.getElementById('c').value, '*')">Confirm
</button>"""
HELP = """<!doctype html><title>Help</title>
<button onclick="top.postMessage('help opened', '*')">Open help</button>"""
#: Also served: closed_shadow.html (web components with closed shadow roots, one inside another,
#: one on a plain div) and drag.html (an HTML5 board and a pointer-driven sortable list).
HELPER_PAGES = REPO_ROOT / "tests" / "helpers" / "pages"
PLAIN = "<!doctype html><title>Plain</title><h1>Plain</h1><p>Nothing here.</p>\n"


@dataclass
class World:
    browser: E2EBrowser
    site: Site
    protocol: int = 2  # what the extension speaks now (the client fixture sets it)


@pytest.fixture(scope="module")
def world(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("pages")
    other = Site(
        root / "other", {"card.html": CARD, "news.html": NEWS, "challenge.html": CHALLENGE}
    )
    other_port = other.url.rsplit(":", 1)[1]
    checkout = CHECKOUT.format(
        other=f"http://localhost:{other_port}", same=f"http://127.0.0.1:{other_port}"
    )
    pages = {"orders.html": ORDERS, "plain.html": PLAIN, "list.html": ORDER_LIST,
             "checkout.html": checkout, "help.html": HELP,
             "nested.html": NESTED.format(other=f"http://localhost:{other_port}"),
             "closed.html": (HELPER_PAGES / "closed_shadow.html").read_text(encoding="utf-8"),
             "drag.html": (HELPER_PAGES / "drag.html").read_text(encoding="utf-8"),
             "fields.html": (HELPER_PAGES / "fields.html").read_text(encoding="utf-8")}  # fmt: skip
    site = Site(root / "site", pages)
    (root / "other" / "issuer.html").write_text(
        ISSUER.format(
            top=f"http://127.0.0.1:{other_port}",
            issuer2=f"http://localhost:{site.url.rsplit(':', 1)[1]}",
        ),
        encoding="utf-8",
    )
    write_config(
        root / "home",
        "http://127.0.0.1:9/v1",
        '[daemon]\nallow_local_clients = true\n[tools]\napproval_mode = "never"\n',
    )
    try:
        with launched(playwright, name="pages", root=root) as browser:
            # Playwright dismisses every dialog nobody listens for: a listener that does nothing
            # leaves them to Browy, as in a browser no test harness drives.
            browser.context.on("dialog", lambda dialog: None)
            browser.wait_state("ready", timeout=20)
            yield World(browser, site)
    finally:
        site.close()
        other.close()


@pytest.fixture(scope="module", params=[2, 1], ids=["v2", "v1"])
def client(world: World, request: pytest.FixtureRequest) -> Iterator[ToolClient]:
    """A local client of the daemon, with the extension speaking ``request.param``."""
    world.protocol = protocol = int(request.param)
    with client_on_protocol(world.browser, protocol, f"e2e-pages-v{protocol}") as tools:
        yield tools


def open_tab(client: ToolClient, url: str) -> str:
    """A new tab on *url* for the client; its first snapshot."""
    client.ok("new_tab", {"url": url})
    return client.ok("inspect_page")


def until_text(client: ToolClient, tool: str, args: dict[str, Any], needle: str) -> str:
    """Call *tool* until its text mentions *needle* (10 s at most); that text."""

    def probe() -> str | None:
        text = client.call(tool, args).text
        return text if needle in text else None

    return wait_until(probe, timeout=10, what=f"{tool} to mention {needle!r}")


# --------------------------------------------------------------------------------------------
# JavaScript dialogs


def test_a_confirm_is_reported_at_once_shown_and_answered(world: World, client: ToolClient) -> None:
    snap = open_tab(client, f"{world.site.url}/orders.html")
    delete = index_of(snap, "Delete #12")

    clicked = client.call("click_index", {"index": delete})
    assert clicked.ok and clicked.seconds < QUICK_S, clicked
    assert "confirm dialog" in clicked.text and "Delete order #12?" in clicked.text, clicked
    shown = client.call("inspect_page")
    assert shown.ok and shown.seconds < QUICK_S, shown
    assert "the page is blocked" in shown.text and "Delete order #12?" in shown.text, shown
    blocked = client.call("extract_text", {"selector": "#log"})
    assert (blocked.outcome, blocked.code) == ("error", "DIALOG_OPEN"), blocked
    assert blocked.seconds < QUICK_S and "handle_dialog" in blocked.text

    assert "dismissed the confirm dialog" in client.ok("handle_dialog", {"accept": False})
    assert "kept;" in client.ok("extract_text", {"selector": "#log"})
    client.ok("click_index", {"index": delete})
    assert "accepted the confirm dialog" in client.ok("handle_dialog", {"accept": True})
    assert "deleted;" in client.ok("extract_text", {"selector": "#log"})
    assert "Delete #12" not in client.ok("inspect_page")


def test_a_prompt_gets_its_answer_and_a_timer_alert_is_seen(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/orders.html")
    asked = client.call("click_index", {"index": index_of(snap, "Name")})
    assert asked.ok and "prompt dialog" in asked.text and '"guest"' in asked.text, asked
    client.ok("handle_dialog", {"accept": True, "text": "Ada"})
    assert "name=Ada;" in client.ok("extract_text", {"selector": "#log"})

    # The alert opens after the click has returned: the next call shows it, at once.
    client.ok("click_index", {"index": index_of(snap, "Later")})
    shown = until_text(client, "inspect_page", {}, "alert dialog")
    assert "Later!" in shown and "handle_dialog(accept=true) closes it" in shown
    client.ok("handle_dialog", {"accept": True})
    assert "later;" in client.ok("extract_text", {"selector": "#log"})


def test_leaving_a_page_with_unsaved_input_asks_first(world: World, client: ToolClient) -> None:
    snap = open_tab(client, f"{world.site.url}/orders.html")
    client.ok("type_index", {"index": index_of(snap, "Notes"), "text": "half-written"})
    leaving = client.call("navigate", {"url": f"{world.site.url}/plain.html"})
    assert leaving.ok and leaving.seconds < QUICK_S, leaving
    assert "beforeunload dialog" in leaving.text and "leaves the page" in leaving.text, leaving
    client.ok("handle_dialog", {"accept": False})
    assert "Orders" in client.ok("get_page_info")
    client.call("navigate", {"url": f"{world.site.url}/plain.html"})
    client.ok("handle_dialog", {"accept": True})
    assert "Plain" in until_text(client, "get_page_info", {}, "Plain")


# --------------------------------------------------------------------------------------------
# Recycled rows and long lists


def test_a_recycled_row_is_clicked_by_the_number_the_newest_snapshot_gave_it(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/list.html")
    second = index_of(snap, "Order #100002")
    client.ok("type_index", {"index": index_of(snap, "Search"), "text": "77"})
    fresh = until_text(client, "inspect_page", {}, "Order #100077")
    assert f'[{second}] link "Order #1' in fresh and "Order #100002" not in fresh, fresh
    shows = re.search(rf'\[{second}\] link "(Order #\d+)"', fresh)
    assert shows is not None
    clicked = client.call("click_index", {"index": second})
    assert clicked.ok, clicked
    picked = client.ok("extract_text", {"selector": "#picked"})
    assert f"picked {shows.group(1)}" in picked, (picked, fresh)

    # The list re-renders after the snapshot the model is using: that number is refused.
    client.ok("type_index", {"index": index_of(snap, "Search"), "text": "88"})
    until_text(client, "extract_text", {"selector": "#list"}, "Order #100088")
    refused = client.call("click_index", {"index": second})
    assert (refused.outcome, refused.code) == ("error", "STALE_REF"), refused
    assert "now shows" in refused.text
    assert f"picked {shows.group(1)}" in client.ok("extract_text", {"selector": "#picked"})


def test_a_row_not_rendered_yet_is_found_by_scrolling_with_progress(
    world: World, client: ToolClient
) -> None:
    open_tab(client, f"{world.site.url}/list.html")
    found = client.call("find_by_scrolling", {"text": "Order #102500"}, timeout=90)
    assert found.ok, found
    assert re.search(r'\[\d+\] link "Order #102500"', found.text), found
    assert "Order #102499" not in found.text and len(found.text) < 700, found
    assert any("of the list searched" in note for note in found.progress), found
    client.ok("click_index", {"index": index_of(found.text, "Order #102500")})
    assert "picked Order #102500" in client.ok("extract_text", {"selector": "#picked"})


# --------------------------------------------------------------------------------------------
# Closed shadow roots


def test_controls_in_closed_shadow_roots_are_listed_and_used(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/closed.html")
    for name in ('"Card holder"', '"Pay now"', '"Accept terms"', '"Get help"'):
        assert name in snap, snap
    client.ok("type_index", {"index": index_of(snap, '"Card holder"'), "text": "Ada"})
    client.ok("click_index", {"index": index_of(snap, '"Pay now"')})
    assert "paid by Ada" in client.ok("extract_text", {"selector": "#out"})
    client.ok("check_index", {"index": index_of(snap, '"Accept terms"')})
    assert "terms true" in client.ok("extract_text", {"selector": "#out"})
    client.ok("click_index", {"index": index_of(snap, '"Get help"')})
    assert "help" in client.ok("extract_text", {"selector": "#out"})


# --------------------------------------------------------------------------------------------
# Drag and drop


def test_drag_index_moves_an_html5_card_and_reorders_a_pointer_list(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/drag.html")
    card, done = index_of(snap, '"Write report"'), index_of(snap, '"Done"')
    moved = client.call("drag_index", {"index": card, "to_index": done})
    assert moved.ok and "HTML5 drag" in moved.text, moved
    alpha, charlie = index_of(snap, '"Alpha"'), index_of(snap, '"Charlie"')
    reordered = client.call("drag_index", {"index": alpha, "to_index": charlie})
    assert reordered.ok and "pointer drag" in reordered.text, reordered
    log = client.ok("extract_text", {"selector": "#log"})
    assert "moved Write report to done;order Bravo,Charlie,Alpha,Delta;" in log, log


# --------------------------------------------------------------------------------------------
# Cross-origin frames


def test_frames_of_other_origins_are_listed_and_used_or_said_unreachable(
    world: World, client: ToolClient
) -> None:
    open_tab(client, f"{world.site.url}/checkout.html")
    # Both frames in the page (a loaded box), the card's reached or said unreachable.
    card_line = "card.html (another site)" if world.protocol >= 2 else "card.html (cross-origin)"
    snap = until_text(client, "inspect_page", {}, card_line)
    # A frame slot is numbered when the page first shows that frame: a slow one comes later.
    assert re.search(r"^-- frame \d+: 127\.0\.0\.1:\d+/news\.html \(cross-origin\) --$", snap, re.M)
    client.ok("click_index", {"index": index_of(snap, '"Subscribe"')})
    assert "subscribed" in client.ok("extract_text", {"selector": "#out"})
    if world.protocol < 2:
        assert re.search(
            r"^# frame \d+ localhost:\d+/card\.html \(cross-origin\): it runs in another process, "
            r"which this connection cannot address, so its controls are not listed; open "
            r"http://localhost:\d+/card\.html in a tab of its own",
            snap,
            re.M,
        ), snap
        return
    assert re.search(r"^-- frame \d+: localhost:\d+/card\.html \(another site\) --$", snap, re.M)
    card = index_of(snap, '"Card number"')
    assert (
        card > 100_000
        and "secret"
        in snap.splitlines()[[ln.startswith(f"[{card}]") for ln in snap.splitlines()].index(True)]
    )
    client.ok("type_index", {"index": index_of(snap, '"Name"'), "text": "Ada"})
    client.ok("click_index", {"index": index_of(snap, '"Pay"')})
    assert "paid by Ada" in client.ok("extract_text", {"selector": "#out"})


def test_frames_inside_a_frame_of_another_site_are_listed_and_used(
    world: World, client: ToolClient
) -> None:
    open_tab(client, f"{world.site.url}/nested.html")
    if world.protocol < 2:  # the issuer cannot be reached, nor what is inside it
        snap = until_text(client, "inspect_page", {}, "issuer.html (cross-origin)")
        assert "challenge.html" not in snap and "Confirm" not in snap, snap
        return
    snap = until_text(client, "inspect_page", {}, "help.html (cross-origin, inside frame")
    snap = until_text(client, "inspect_page", {}, "challenge.html (another site, inside frame")
    client.ok("type_index", {"index": index_of(snap, '"Code"'), "text": "4321"})
    client.ok("click_index", {"index": index_of(snap, '"Confirm"')})
    assert "code 4321" in client.ok("extract_text", {"selector": "#out"})
    client.ok("click_index", {"index": index_of(snap, '"Open help"')})
    assert "help opened" in client.ok("extract_text", {"selector": "#out"})


# --------------------------------------------------------------------------------------------
# Every action checks what it did


def test_typing_is_read_back_and_a_refused_choice_is_not_ok(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/fields.html")
    for name, text in (('"Arrival"', "2025-12-31"), ('"Time"', "2:30 pm"), ('"Guests"', "1,200")):
        client.ok("type_index", {"index": index_of(snap, name), "text": text})
    log = client.ok("extract_text", {"selector": "#log"})
    assert "date=2025-12-31;time=14:30;num=1200;" in log, log
    phone = client.ok("type_index", {"index": index_of(snap, '"Phone"'), "text": "5551234567"})
    assert "formats it as" in phone and "(555) 123-4567" in phone, phone
    code = client.call("type_index", {"index": index_of(snap, '"Code"'), "text": "123456"})
    assert code.outcome == "error" and "1234" in code.text, code
    plan = client.call("select_index", {"index": index_of(snap, '"Plan"'), "value": "Gold"})
    assert plan.outcome == "error" and "put it back" in plan.text, plan
