"""Cross-origin frames in a real headless Chromium (site isolation on): a frame of another site
(out of process: a child session) and a cross-origin frame of the same site (in process) are
listed in the same snapshot with numbers of their own, and typed into and clicked with trusted
input at top-viewport coordinates; files are uploaded and dropped into them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from actors.tools.cdp import CdpError, ErrorCode
from actors.tools.files import FileSandbox
from actors.tools.inspect_more import register_more_tools
from actors.tools.page import PageTools
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolContext
from tests.actors.tools.test_forms import Pinned
from tests.helpers.cdp_ws import CdpWsSession, WsTab
from tests.helpers.chromium import Chromium, PageServer, chromium_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium"),
]

TOP = """<!doctype html><title>Shop</title><h1>Checkout</h1><button id="b">Top button</button>
<p id="out">nothing yet</p>
<iframe id="pay" src="{other}/card.html" style="width:420px;height:160px;border:6px solid #000;
 padding:4px;margin:40px"></iframe>
<iframe id="news" src="{same}/news.html" style="width:300px;height:90px"></iframe>
<script>
addEventListener('message', (e) => {{ document.getElementById('out').textContent = e.data; }});
</script>"""
CARD = """<!doctype html><title>Card</title><body style="margin:0">
<label>Card number <input id="cc" autocomplete="cc-number"></label>
<label>Name on card <input id="name"></label>
<button onclick="parent.postMessage('paid by ' + document.getElementById('name').value, '*')">
Pay</button>
<label>Receipt <input type="file" id="receipt"></label>
<span id="zone" role="button" tabindex="0">Drop a scan</span>
<script>
const tell = (what, files) => parent.postMessage(what + Array.from(files, (f) => f.name), '*');
document.getElementById('receipt').onchange = (e) => tell('got ', e.target.files);
const zone = document.getElementById('zone');
zone.ondragover = (e) => e.preventDefault();
zone.ondrop = (e) => { e.preventDefault(); tell('dropped ', e.dataTransfer.files); };
</script></body>"""
NEWS = """<!doctype html><title>News</title>
<a href="#" onclick="parent.postMessage('subscribed', '*'); return false">Subscribe</a>
<x-share></x-share>
<script>
customElements.define('x-share', class extends HTMLElement {
  constructor() {
    super();
    const root = this.attachShadow({ mode: 'closed' });
    root.innerHTML = '<button>Share privately</button>';
    root.querySelector('button').onclick = () => parent.postMessage('shared', '*');
  }
});
</script>"""

# Frames inside a frame of another site: a card issuer's check inside a payment form. The issuer
# (localhost) holds a challenge from the top's own site (127.0.0.1: a process and a target of
# its own, under the issuer's session) and a help box of its own site on another port (the same
# renderer as the issuer: its frame tree).
NESTED_TOP = """<!doctype html><title>Pay</title><h1>Pay</h1><p id="out">nothing yet</p>
<iframe id="issuer" src="{other}/issuer.html" style="width:520px;height:330px;margin:30px;
 border:4px solid #000"></iframe>
<script>
addEventListener('message', (e) => {{ document.getElementById('out').textContent = e.data; }});
</script>"""
ISSUER = """<!doctype html><title>Issuer</title><body style="margin:8px">
<button onclick="top.postMessage('issuer ok', '*')">Issuer button</button><br>
<iframe src="{top}/challenge.html" style="width:240px;height:110px;margin-left:40px"></iframe>
<iframe src="{issuer2}/help.html" style="width:200px;height:110px"></iframe>
</body>"""
CHALLENGE = """<!doctype html><title>Challenge</title><body style="margin:0">
<label>Code <input id="code"></label>
<button onclick="top.postMessage('code ' + document.getElementById('code').value, '*')">
Confirm code</button></body>"""
HELP = """<!doctype html><title>Help</title><body style="margin:0">
<button onclick="top.postMessage('help opened', '*')">Open help</button></body>"""


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PageServer, PageServer]]:
    root = tmp_path_factory.mktemp("sites")
    (root / "card.html").write_text(CARD)
    (root / "news.html").write_text(NEWS)
    with PageServer(root) as top, PageServer(root) as other:
        port = other.httpd.server_address[1]
        (root / "top.html").write_text(
            TOP.format(other=f"http://localhost:{port}", same=f"http://127.0.0.1:{port}")
        )
        top_port = top.httpd.server_address[1]
        (root / "nested.html").write_text(NESTED_TOP.format(other=f"http://localhost:{port}"))
        (root / "issuer.html").write_text(
            ISSUER.format(top=f"http://127.0.0.1:{port}", issuer2=f"http://localhost:{top_port}")
        )
        (root / "challenge.html").write_text(CHALLENGE)
        (root / "help.html").write_text(HELP)
        yield top, other


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    with Chromium.launched() as b:
        yield b


@pytest.fixture
async def tab(browser: Chromium) -> AsyncIterator[CdpWsSession]:
    session = await CdpWsSession.open(browser.http_base)
    try:
        yield session
    finally:
        await session.close()


def idx(text: str, needle: str) -> int:
    for line in text.splitlines():
        m = re.match(r"^\*?\[(\d+)\] ", line)
        if m and needle in line:
            return int(m.group(1))
    raise AssertionError(f"{needle!r} not in:\n{text}")


async def test_frames_of_another_site_and_of_the_same_site_are_listed_and_used(
    tab: CdpWsSession, sites: tuple[PageServer, PageServer]
) -> None:
    await tab.navigate(sites[0].url("top.html"))
    tools = PageTools(tab)
    snap = await tools.inspect_page()
    text = snap.text
    assert re.search(r"^-- frame 1: localhost:\d+/card\.html \(another site\) --$", text, re.M)
    assert re.search(r"^-- frame 2: 127\.0\.0\.1:\d+/news\.html \(cross-origin\) --$", text, re.M)
    assert idx(text, '"Top button"') < 100_000
    card, name, pay = idx(text, '"Card number"'), idx(text, '"Name on card"'), idx(text, '"Pay"')
    assert 100_000 < card < 200_000 and 100_000 < pay < 200_000, text
    assert re.search(rf'^\[{card}\] textbox "Card number" secret$', text, re.M), text
    assert snap.count >= 5
    typed = await tools.type_index(name, snap.doc_token, "Ada")
    assert typed.ok, typed
    clicked = await tools.click_index(pay, snap.doc_token)
    assert clicked.ok, clicked  # the click check ran in the frame's world
    assert await tab.evaluate("document.getElementById('out').textContent") == "paid by Ada"
    sub = await tools.click_index(idx(text, '"Subscribe"'), snap.doc_token)
    assert sub.ok, sub
    assert await tab.evaluate("document.getElementById('out').textContent") == "subscribed"


async def test_a_frame_number_is_stale_once_its_frame_loads_another_document(
    tab: CdpWsSession, sites: tuple[PageServer, PageServer]
) -> None:
    await tab.navigate(sites[0].url("top.html"))
    tools = PageTools(tab)
    snap = await tools.inspect_page()
    pay = idx(snap.text, '"Pay"')
    await tab.evaluate(
        "new Promise((done) => { const f = document.getElementById('pay');"
        " f.onload = done; f.src += '?again'; })"
    )
    with pytest.raises(CdpError) as err:
        await tools.click_index(pay, snap.doc_token)
    assert err.value.code is ErrorCode.STALE_REF
    again = await tools.inspect_page()
    assert (await tools.click_index(idx(again.text, '"Pay"'), again.doc_token)).ok


async def test_another_page_tools_on_the_same_attachment_finds_the_same_numbers(
    tab: CdpWsSession, sites: tuple[PageServer, PageServer]
) -> None:
    await tab.navigate(sites[0].url("top.html"))
    first = await PageTools(tab).inspect_page()
    later = PageTools(tab)  # say, the next turn: the frame is attached already, unannounced
    again = await later.inspect_page()
    assert idx(again.text, '"Pay"') == idx(first.text, '"Pay"')
    assert (await later.click_index(idx(again.text, '"Pay"'), again.doc_token)).ok
    assert await tab.evaluate("document.getElementById('out').textContent") == "paid by "


async def test_files_go_into_a_frame_of_another_site_by_upload_and_by_drop(
    tab: CdpWsSession, sites: tuple[PageServer, PageServer], tmp_path: Path
) -> None:
    await tab.navigate(sites[0].url("top.html"))
    pinned = Pinned(tab)
    snap = await pinned.snapshot()
    box = FileSandbox(tmp_path)
    box.write("scan.pdf", "%PDF-1.4 scan")
    ctx = ToolContext(session_id="s", cdp=WsTab(tab), files=box, state={"browser": pinned})
    reg = Registry()
    register_more_tools(reg)
    receipt, zone = idx(snap.text, '"Receipt"'), idx(snap.text, '"Drop a scan"')
    assert receipt > 100_000 and zone > 100_000, snap.text
    out = await reg.run("upload_index", {"index": receipt, "paths": ["scan.pdf"]}, ctx)
    assert out.ok, out.content_for_model
    assert "set 1 file(s) on" in str(out.content_for_model)
    assert await tab.evaluate("document.getElementById('out').textContent") == "got scan.pdf"
    out = await reg.run("drop_files", {"index": zone, "paths": ["scan.pdf"]}, ctx)
    assert out.ok, out.content_for_model
    assert await tab.evaluate("document.getElementById('out').textContent") == "dropped scan.pdf"


async def test_a_closed_shadow_root_inside_a_cross_origin_frame_is_listed_and_clicked(
    tab: CdpWsSession, sites: tuple[PageServer, PageServer]
) -> None:
    await tab.navigate(sites[0].url("top.html"))
    tools = PageTools(tab)
    snap = await tools.inspect_page()
    share = idx(snap.text, '"Share privately"')
    assert share > 200_000, snap.text  # in frame 2, behind a closed root
    clicked = await tools.click_index(share, snap.doc_token)
    assert clicked.ok, clicked
    assert await tab.evaluate("document.getElementById('out').textContent") == "shared"


async def test_frames_inside_a_frame_of_another_site_are_listed_and_used(
    tab: CdpWsSession, sites: tuple[PageServer, PageServer]
) -> None:
    await tab.navigate(sites[0].url("nested.html"))
    tools = PageTools(tab)
    snap = await tools.inspect_page()
    text = snap.text
    assert re.search(r"^-- frame 1: localhost:\d+/issuer\.html \(another site\) --$", text, re.M)
    # The challenge: the top's site inside the issuer (another process: the issuer's target's
    # child); the help box: the issuer's site on another port (the issuer's own renderer).
    assert re.search(
        r"^-- frame (\d+): 127\.0\.0\.1:\d+/challenge\.html \(another site, inside frame 1\) --$",
        text,
        re.M,
    ), text
    assert re.search(
        r"^-- frame (\d+): localhost:\d+/help\.html \(cross-origin, inside frame 1\) --$",
        text,
        re.M,
    ), text
    code, confirm = idx(text, '"Code"'), idx(text, '"Confirm code"')
    help_button, issuer = idx(text, '"Open help"'), idx(text, '"Issuer button"')
    assert len({code // 100_000, help_button // 100_000, issuer // 100_000}) == 3, text
    assert (await tools.type_index(code, snap.doc_token, "123456")).ok
    clicked = await tools.click_index(confirm, snap.doc_token)
    assert clicked.ok, clicked  # trusted input at top coordinates: the boxes on the way summed
    assert await tab.evaluate("document.getElementById('out').textContent") == "code 123456"
    assert (await tools.click_index(help_button, snap.doc_token)).ok
    assert await tab.evaluate("document.getElementById('out').textContent") == "help opened"
    # The next turn's tools (a new PageTools) reach the same numbers: the top document keeps
    # which frame each nested slot stands for.
    later = PageTools(tab)
    again = await later.inspect_page()
    assert idx(again.text, '"Confirm code"') == confirm, again.text
    assert (await later.click_index(confirm, again.doc_token)).ok
    assert (await later.click_index(issuer, again.doc_token)).ok
    assert await tab.evaluate("document.getElementById('out').textContent") == "issuer ok"
