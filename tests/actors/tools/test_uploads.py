"""Uploads read back and files dropped on drop zones, in a real Chromium (over CDP).

- ``upload_index`` says which files the page received; a page that takes them and empties its
  input (as upload widgets do) is said so; a page that refuses them fails, saying what it holds.
- ``drop_files`` drops sandbox files on a drop zone (the page reads their names and text), refuses
  an element that takes no files without dropping anything (and the tab stays where it was), and
  keeps to the sandbox.
- A slider (``type_index`` on a range input) that clamps the value fails, saying what it holds.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from actors.tools.files import FileSandbox
from actors.tools.inspect_more import register_more_tools
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolContext, ToolError
from actors.tools.uploads import _upload_verdict
from tests.actors.tools.test_forms import Pinned, index_of, text
from tests.helpers.cdp_ws import CdpWsSession, WsTab
from tests.helpers.chromium import Chromium, PageServer, chromium_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium"),
]

PAGE = """<!doctype html><title>Files</title>
<label>Plain <input type=file id=plain multiple></label>
<label>Widget <input type=file id=widget></label>
<label>Locked <input type=file id=locked disabled></label>
<div id=zone class=zone role=button tabindex=0 aria-label="Upload area"
  style="width:300px;height:120px;border:2px dashed #888">Drop files here</div>
<div id=bare class=zone style="width:300px;height:80px"><p>Or drop receipts here</p></div>
<button id=wall>Not a zone</button>
<label>Volume <input type=range id=vol min=0 max=100 step=10 value=20></label>
<p id=log></p>
<script>
const log = (t) => { document.getElementById('log').textContent += t + ';'; };
document.getElementById('widget').addEventListener('change', (e) => {
  log('widget got ' + Array.from(e.target.files, (f) => f.name).join(','));
  e.target.value = '';
});
for (const zone of document.querySelectorAll('.zone')) {
  zone.addEventListener('dragover', (e) => e.preventDefault());
  zone.addEventListener('drop', async (e) => {
    e.preventDefault();
    for (const f of e.dataTransfer.files) {
      log(zone.id + ' dropped ' + f.name + '=' + (await f.text()).trim());
    }
  });
}
</script>
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageServer]:
    root = tmp_path_factory.mktemp("uploads")
    (root / "files.html").write_text(PAGE)
    with PageServer(root) as srv:
        yield srv


@pytest.fixture(scope="module")
def reg() -> Registry:
    registry = Registry()
    register_more_tools(registry)
    return registry


@pytest.fixture
async def ws(browser: Chromium, site: PageServer) -> AsyncIterator[CdpWsSession]:
    session = await CdpWsSession.open(browser.http_base)
    try:
        await session.navigate(site.url("files.html"))
        yield session
    finally:
        await session.close()


@pytest.fixture
def ctx(ws: CdpWsSession, tmp_path: Path) -> ToolContext:
    box = FileSandbox(tmp_path)
    box.write("cv.txt", "curriculum vitae")
    box.write("notes.txt", "two")
    return ToolContext(session_id="s", cdp=WsTab(ws), files=box, state={"browser": Pinned(ws)})


def _pinned(ctx: ToolContext) -> Pinned:
    pinned = ctx.state["browser"]
    assert isinstance(pinned, Pinned)
    return pinned


async def _log(ws: CdpWsSession) -> str:
    return str(await ws.evaluate("document.getElementById('log').textContent"))


async def test_an_upload_says_what_the_page_received(reg: Registry, ctx: ToolContext) -> None:
    snap = await _pinned(ctx).snapshot()
    out = await reg.run(
        "upload_index", {"index": index_of(snap, '"Plain"'), "paths": ["cv.txt", "notes.txt"]}, ctx
    )
    assert out.ok, text(out)
    assert "set 2 file(s) on" in text(out) and "cv.txt, notes.txt" in text(out)


async def test_a_widget_that_empties_its_input_is_said_so(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    snap = await _pinned(ctx).snapshot()
    out = await reg.run(
        "upload_index", {"index": index_of(snap, '"Widget"'), "paths": ["cv.txt"]}, ctx
    )
    assert out.ok, text(out)
    assert "the page received them and the input is empty again" in text(out)
    assert "widget got cv.txt" in await _log(ws)


async def test_an_upload_to_a_disabled_input_is_refused_and_sets_nothing(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    snap = await _pinned(ctx).snapshot()
    out = await reg.run(
        "upload_index", {"index": index_of(snap, '"Locked"'), "paths": ["cv.txt"]}, ctx
    )
    assert out.outcome == "error"
    assert "is disabled" in text(out)
    assert await ws.evaluate("document.getElementById('locked').files.length") == 0


def test_an_upload_the_input_does_not_hold_fails_saying_what_it_holds() -> None:
    files = ["/box/cv.txt"]
    assert _upload_verdict({"names": None, "now": ["cv.txt"]}, files, "[1]").endswith(": cv.txt")
    with pytest.raises(ToolError, match=r"not done: \[1\] holds no file, not cv.txt"):
        _upload_verdict({"names": None, "now": []}, files, "[1]")
    with pytest.raises(ToolError, match=r"holds old\.pdf, not cv\.txt"):
        _upload_verdict({"names": ["old.pdf"], "now": ["old.pdf"]}, files, "[1]")


async def test_files_dropped_on_a_drop_zone_reach_the_page(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    snap = await _pinned(ctx).snapshot()
    zone = index_of(snap, '"Upload area"')
    out = await reg.run("drop_files", {"index": zone, "paths": ["cv.txt", "notes.txt"]}, ctx)
    assert out.ok, text(out)
    assert "dropped 2 file(s); the page took them" in text(out)
    log = await _log(ws)
    assert "zone dropped cv.txt=curriculum vitae" in log and "zone dropped notes.txt=two" in log
    # A zone with no control, so no number: named by the text it shows.
    out = await reg.run("drop_files", {"text": "drop receipts", "paths": ["notes.txt"]}, ctx)
    assert out.ok, text(out)
    assert 'drop on <p> "Or drop receipts here": ok; dropped 1 file(s)' in text(out)
    assert "bare dropped notes.txt=two" in await _log(ws)
    out = await reg.run("drop_files", {"text": "nowhere to be seen", "paths": ["cv.txt"]}, ctx)
    assert out.outcome == "error" and "no visible element shows" in text(out)


async def test_an_element_that_takes_no_files_gets_none(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    url = await ws.evaluate("location.href")
    snap = await _pinned(ctx).snapshot()
    out = await reg.run(
        "drop_files", {"index": index_of(snap, '"Not a zone"'), "paths": ["cv.txt"]}, ctx
    )
    assert out.outcome == "error"
    assert "does not take dropped files" in text(out)
    assert await ws.evaluate("location.href") == url  # the browser did not open the file
    assert "dropped" not in await _log(ws)


async def test_a_drop_keeps_to_the_sandbox(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    snap = await _pinned(ctx).snapshot()
    zone = index_of(snap, '"Upload area"')
    out = await reg.run("drop_files", {"index": zone, "paths": ["/etc/passwd"]}, ctx)
    assert out.outcome == "error"
    out = await reg.run("drop_files", {"index": zone, "paths": ["../x.txt"]}, ctx)
    assert out.outcome == "error"
    out = await reg.run("drop_files", {"paths": ["cv.txt"]}, ctx)
    assert out.outcome == "error" and "exactly one of index or text" in text(out)
    out = await reg.run("drop_files", {"text": "x" * 501, "paths": ["cv.txt"]}, ctx)
    assert out.outcome == "error" and "text" in text(out)
    assert "dropped" not in await _log(ws)


async def test_a_slider_that_clamps_the_value_fails_saying_what_it_holds(
    ctx: ToolContext, ws: CdpWsSession
) -> None:
    pinned = _pinned(ctx)
    snap = await pinned.snapshot()
    vol, tools = index_of(snap, '"Volume"'), pinned.page()
    result = await tools.type_index(vol, snap.doc_token, "60")
    assert result.ok, result.to_text()
    assert await ws.evaluate("document.getElementById('vol').value") == "60"
    result = await tools.type_index(vol, snap.doc_token, "150")
    assert not result.ok
    assert 'holds "100"' in result.to_text()
    result = await tools.type_index(vol, snap.doc_token, "45")
    assert not result.ok
    assert re.search(r'holds "(40|50)"', result.to_text())
