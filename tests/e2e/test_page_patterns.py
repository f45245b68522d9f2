"""Page patterns the tools already get through, kept working, end to end (issue 15, "Patterns
that work"): the daemon's tools drive local pages in a real headless Chromium through our
extension, the relay and the daemon, as in :mod:`tests.e2e.test_real_pages`.

One browser for the module. Every pattern runs twice: with the extension speaking protocol 2, and
forced to say hello as a v1 service worker (``browyTest.useProtocol(1)``).

- Popups and new tabs: a ``target=_blank`` link and a ``window.open`` popup are named in the
  click's result (tab id), and ``switch_tab`` goes there.
- Rich-text editors: a ``contenteditable`` is typed into and read back, and a key chord (select
  all, bold) reaches it; an editor that rebuilds its DOM on every key keeps what is typed, key
  by key too.
- Choices by label in one call: an ARIA select-only combobox, an editable ARIA combobox (typing
  filters its listbox) and a native select of 300 options, each by its visible label.
- Hover-only menus: ``hover_index`` opens a CSS ``:hover`` menu, its items are listed and clicked.
- Overlays: a click on a control under a cookie banner is refused naming the banner; once the
  banner is closed the click goes through.
- Key chords to the focused element: Ctrl+Enter sends a focused textarea, a page-wide Ctrl+K opens
  a search box that takes the focus, and Escape closes it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Playwright

from tests.e2e.browser import E2EBrowser, launched
from tests.e2e.test_panels_at_work import Site, write_config
from tests.e2e.test_real_pages import PLAIN, open_tab, until_text
from tests.e2e.tool_client import ToolClient, client_on_protocol, index_of

pytestmark = pytest.mark.browser

SHOP = """<!doctype html><title>Shop</title><h1>Shop</h1>
<a href="plain.html?terms" target="_blank">Terms in a new tab</a>
<button onclick="window.open('plain.html?help', 'help', 'popup,width=420,height=320')">
Open help</button>"""
#: A plain editor, and one that re-renders its whole content as word spans on every input event
#: (as code editors and some chat boxes do), putting the caret back at the end.
EDITOR = """<!doctype html><title>Editor</title>
<style>[contenteditable] { min-height: 2em; border: 1px solid #888; margin: 8px; }</style>
<div id="rich" contenteditable="true" role="textbox" aria-label="Message">Draft</div>
<div id="code" contenteditable="true" role="textbox" aria-label="Code"></div>
<p id="out"></p>
<script>
const code = document.getElementById('code');
let renders = 0;
code.addEventListener('input', () => {
  const words = code.textContent.split(/(\\s+)/).filter(Boolean);
  code.replaceChildren(...words.map((w) => {
    const s = document.createElement('span'); s.textContent = w; return s; }));
  const r = document.createRange(); r.selectNodeContents(code); r.collapse(false);
  getSelection().removeAllRanges(); getSelection().addRange(r);
  const out = 'renders=' + (++renders) + ' code=' + code.textContent;
  document.getElementById('out').textContent = out;
});
</script>"""
COUNTRIES = ["Belgium", "France", "Japan", "New Zealand", "Portugal", "Peru"]
#: A select-only ARIA combobox (its listbox hidden until opened), an editable one whose listbox
#: is filtered by what is typed (rendered into a portal at the end of <body>), and a long native
#: select.
CHOICES = """<!doctype html><title>Choices</title>
<style>[role=listbox] { list-style: none; border: 1px solid #888; width: 12em; padding: 0; }
[role=option] { padding: 3px; }
.combo { border: 1px solid #888; padding: 3px; width: 12em; }</style>
<span id="sl">Size</span>
<div id="size" class="combo" role="combobox" tabindex="0" aria-expanded="false"
     aria-controls="sizes" aria-labelledby="sl">Medium</div>
<ul id="sizes" role="listbox" hidden>
  <li role="option">Small</li><li role="option">Medium</li><li role="option">Large</li></ul>
<label for="country">Country</label>
<input id="country" role="combobox" aria-autocomplete="list" aria-expanded="false"
       autocomplete="off">
<label>Region <select id="region"><option value="">Choose…</option>REGIONS</select></label>
<p id="log"></p>
<script>
const log = (t) => { document.getElementById('log').textContent += t + ';'; };
const size = document.getElementById('size'), sizes = document.getElementById('sizes');
const openSizes = (open) => { sizes.hidden = !open; size.setAttribute('aria-expanded', open); };
size.onclick = () => openSizes(sizes.hidden);
sizes.onclick = (e) => { const o = e.target.closest('[role=option]'); if (!o) return;
  size.textContent = o.textContent; openSizes(false); log('size=' + o.textContent); };
const ALL = COUNTRIES, country = document.getElementById('country');
let portal = null;
country.addEventListener('input', () => {
  if (portal) portal.remove();
  const q = country.value.toLowerCase();
  portal = document.body.appendChild(document.createElement('ul'));
  portal.setAttribute('role', 'listbox'); portal.id = 'country-list';
  country.setAttribute('aria-controls', 'country-list');
  for (const c of ALL.filter((c) => q && c.toLowerCase().includes(q))) {
    const li = portal.appendChild(document.createElement('li'));
    li.setAttribute('role', 'option'); li.textContent = c;
    li.onmousedown = (e) => e.preventDefault();  // keep the focus in the field, as libraries do
    li.onclick = () => { country.value = c; portal.remove(); portal = null; log('country=' + c); };
  }
  country.setAttribute('aria-expanded', 'true');
});
document.getElementById('region').onchange = (e) => log('region=' + e.target.value);
</script>""".replace("COUNTRIES", repr(COUNTRIES)).replace(
    "REGIONS",
    "".join(f'<option value="r{n}">Region {n:03}</option>' for n in range(1, 300))
    + '<option value="nz">New Zealand</option>',
)
MENU = """<!doctype html><title>Menu</title>
<style>nav li ul { display: none; position: absolute; background: #eee; padding: 4px; }
nav li:hover ul { display: block; } nav ul { list-style: none; }</style>
<nav><ul><li><button aria-haspopup="true">Account</button>
  <ul><li><a href="#orders" onclick="out('orders')">My orders</a></li>
      <li><a href="#logout" onclick="out('logout')">Sign out</a></li></ul></li></ul></nav>
<p id="out" style="margin-top: 120px">nothing yet</p>
<script>function out(t) { document.getElementById('out').textContent = t; }</script>"""
OVERLAY = """<!doctype html><title>Overlay</title>
<button id="buy" onclick="document.getElementById('out').textContent = 'bought'">Buy now</button>
<p id="out">nothing yet</p>
<div id="cookies" style="position:fixed;inset:0;background:rgba(0,0,0,.4)">
  <div style="background:#fff;margin:30vh auto;width:300px;padding:12px">We use cookies.
  <button onclick="document.getElementById('cookies').remove()">Accept all</button></div></div>"""
KEYS = """<!doctype html><title>Keys</title>
<label>Message <textarea id="msg"></textarea></label>
<input id="search" aria-label="Search everything" hidden>
<p id="log"></p>
<script>
const log = (t) => { document.getElementById('log').textContent += t + ';'; };
const msg = document.getElementById('msg'), search = document.getElementById('search');
msg.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter' || !e.ctrlKey) return;
  e.preventDefault(); log('sent ' + msg.value); msg.value = '';
});
addEventListener('keydown', (e) => {
  if (e.key === 'k' && e.ctrlKey) {
    e.preventDefault(); search.hidden = false; search.focus(); log('palette');
  }
  if (e.key === 'Escape' && !search.hidden) { search.hidden = true; log('closed'); }
});
</script>"""


@dataclass
class World:
    browser: E2EBrowser
    site: Site


@pytest.fixture(scope="module")
def world(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("patterns")
    pages = {"shop.html": SHOP, "plain.html": PLAIN, "editor.html": EDITOR,
             "choices.html": CHOICES, "menu.html": MENU, "overlay.html": OVERLAY,
             "keys.html": KEYS}  # fmt: skip
    site = Site(root / "site", pages)
    write_config(
        root / "home",
        "http://127.0.0.1:9/v1",
        '[daemon]\nallow_local_clients = true\n[tools]\napproval_mode = "never"\n',
    )
    try:
        with launched(playwright, name="patterns", root=root) as browser:
            browser.wait_state("ready", timeout=20)
            yield World(browser, site)
    finally:
        site.close()


@pytest.fixture(scope="module", params=[2, 1], ids=["v2", "v1"])
def client(world: World, request: pytest.FixtureRequest) -> Iterator[ToolClient]:
    """A local client of the daemon, with the extension speaking ``request.param``."""
    protocol = int(request.param)
    with client_on_protocol(world.browser, protocol, f"e2e-patterns-v{protocol}") as tools:
        yield tools


def text_of(client: ToolClient, selector: str) -> str:
    return client.ok("extract_text", {"selector": selector})


def test_a_new_tab_and_a_popup_are_named_in_the_result_and_switched_to(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/shop.html")
    for button, query in (('"Terms in a new tab"', "terms"), ('"Open help"', "help")):
        opened = client.ok("click_index", {"index": index_of(snap, button)})
        found = re.search(
            r"This action opened a new tab \(tab (\d+)[^)]*\)\. You are still on", opened
        )
        assert found and "call switch_tab with its id" in opened, opened
        tab = int(found.group(1))
        client.ok("switch_tab", {"tab_id": tab})
        assert f"plain.html?{query}" in until_text(client, "get_page_info", {}, "Plain")
        client.ok("close_tab", {"tab_id": tab})


def test_a_new_tab_on_a_slow_page_returns_once_the_page_is_there(
    world: World, client: ToolClient
) -> None:
    # The tool after new_tab saw the tab's empty first document ("refusing to drive ''", or a
    # snapshot of nothing) when the page took a moment to answer (flaked in CI under load).
    key = f"slow-tab-{id(client)}"
    world.site.hold(key)

    def answer_later() -> None:
        world.site.wait_arrived(key, timeout=20)
        time.sleep(0.8)
        world.site.release(key)

    releaser = threading.Thread(target=answer_later, daemon=True)
    releaser.start()
    opened = client.ok("new_tab", {"url": f"{world.site.url}/menu.html?hold={key}"})
    releaser.join(timeout=30)
    # It says what loaded: the page's title (and no "still loading" note).
    assert opened.endswith(f'menu.html?hold={key} (title "Menu")'), opened
    snap = client.ok("inspect_page")
    assert '"Account"' in snap, snap
    # A page that cannot be shown (nothing listens there): the tab is open all the same, and
    # the result says so rather than failing (a model told "error" would open it again).
    refused = client.call("new_tab", {"url": "http://127.0.0.1:9/nothing", "timeout": 10})
    assert refused.ok and "opened tab" in refused.text, refused
    assert "http://127.0.0.1:9/nothing could not be loaded" in refused.text, refused
    client.ok("close_tab")


def test_rich_text_editors_take_typing_and_key_chords(world: World, client: ToolClient) -> None:
    snap = open_tab(client, f"{world.site.url}/editor.html")
    typed = client.call("type_index", {"index": index_of(snap, '"Message"'), "text": "Hi there"})
    assert typed.ok, typed
    client.ok("press_keys", {"keys": ["Ctrl+A", "Ctrl+B"]})
    html = client.ok("get_page_html", {"selector": "#rich"})
    assert re.search(r"<b>Hi there</b>|font-weight: bold", html) and "Draft" not in html, html

    code = index_of(snap, '"Code"')
    assert client.call("type_index", {"index": code, "text": "let x = 1"}).ok
    client.ok("press_keys", {"keys": ["Space", "+", "Space", "2"]})
    out = text_of(client, "#out").replace("\xa0", " ")  # a typed space at the end: nbsp
    assert "code=let x = 1 + 2" in out and "renders=5" in out, out


def test_comboboxes_and_a_long_select_are_chosen_by_label_in_one_call(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/choices.html")
    for name, label in (
        ('"Size"', "Large"),
        ('"Country"', "New Zealand"),
        ('"Region"', "New Zealand"),
    ):
        chosen = client.call("select_index", {"index": index_of(snap, name), "value": label})
        assert chosen.ok, chosen
    log = text_of(client, "#log")
    assert "size=Large;country=New Zealand;region=nz;" in log, log


def test_a_hover_menu_opens_on_hover_and_its_item_is_clicked(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/menu.html")
    assert "My orders" not in snap
    client.ok("hover_index", {"index": index_of(snap, '"Account"')})
    menu = client.ok("inspect_page")
    client.ok("click_index", {"index": index_of(menu, '"My orders"')})
    assert "orders" in text_of(client, "#out")


def test_a_click_under_an_overlay_names_it_and_goes_through_once_closed(
    world: World, client: ToolClient
) -> None:
    snap = open_tab(client, f"{world.site.url}/overlay.html")
    buy = index_of(snap, '"Buy now"')
    covered = client.call("click_index", {"index": buy})
    assert not covered.ok and "landed on div#cookies, which covers the element" in covered.text
    assert "nothing yet" in text_of(client, "#out")
    client.ok("click_index", {"index": index_of(snap, '"Accept all"')})
    client.ok("click_index", {"index": buy})
    assert "bought" in text_of(client, "#out")


def test_key_chords_reach_the_focused_element(world: World, client: ToolClient) -> None:
    snap = open_tab(client, f"{world.site.url}/keys.html")
    client.ok("type_index", {"index": index_of(snap, '"Message"'), "text": "hello"})
    client.ok("press_keys", {"keys": ["Ctrl+Enter"]})
    client.ok("press_key", {"key": "Ctrl+K"})
    shown = client.ok("inspect_page")
    assert re.search(r'\[\d+\] textbox "Search everything".*focused', shown), shown
    client.ok("press_keys", {"keys": ["a", "b", "Escape"]})
    assert "sent hello;palette;closed;" in text_of(client, "#log")
