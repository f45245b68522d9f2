"""Form, upload and hover tools in a real headless Chromium, run through the registry."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.tools.files import FileSandbox
from actors.tools.inspect_more import register_more_tools
from actors.tools.page import PageTools, Snapshot
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolContext, ToolError
from messages.errors import ErrorCode
from tests.helpers.cdp_ws import CdpWsSession, WsTab
from tests.helpers.chromium import Chromium, PageServer, chromium_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium"),
]

FORM_HTML = """<!doctype html><title>Form</title>
<form id=signup action="done.html" method=get>
  <label>Email <input name=email type=email required></label>
  <label>Password <input name=pw type=password value="hunter2-secret"></label>
  <label for=cc>Card number</label><input id=cc name=cardnumber autocomplete=cc-number
    value="4111111111111111">
  <label>Country <select name=country><option value="">Pick one</option>
    <option value=de>Germany</option><option value=fr>France</option></select></label>
  <fieldset><legend>Plan</legend>
    <label><input type=radio name=plan value=free checked> Free</label>
    <label><input type=radio name=plan value=pro> Pro</label></fieldset>
  <label><input type=checkbox name=terms> I agree</label>
  <textarea name=notes placeholder="Notes"></textarea>
  <label>Doc <input type=file name=doc id=doc></label>
  <label class=pick for=photo>Pick photo</label><input type=file id=photo style="display:none">
  <button type=submit>Sign up</button>
</form>
<div id=menu role=button tabindex=0 onmouseover="this.textContent='Menu open'">Menu</div>
<script>
  window.trusted = [];
  document.querySelector('[name=email]')
    .addEventListener('input', (e) => trusted.push(e.isTrusted));
</script>
"""

DONE_HTML = "<title>Done</title><p id=q></p><script>q.textContent = location.search</script>"


class Pinned:
    """The part of ``TurnBrowser`` the index tools use: the tab's PageTools and doc token."""

    def __init__(self, ws: CdpWsSession) -> None:
        self.tools = PageTools(ws)
        self.tab_id: int | None = 1
        self.tokens: dict[int, str] = {}

    def page(self) -> PageTools:
        return self.tools

    def token(self) -> str:
        if 1 not in self.tokens:
            raise ToolError("call inspect_page first", code=ErrorCode.STALE_REF)
        return self.tokens[1]

    async def snapshot(self) -> Snapshot:
        snap = await self.tools.inspect_page(scope="all")
        self.tokens[1] = snap.doc_token
        return snap


def index_of(snap: Snapshot, needle: str) -> int:
    for line in snap.text.splitlines():
        if needle in line:
            m = re.search(r"\[(\d+)\]", line)
            assert m
            return int(m.group(1))
    raise AssertionError(f"{needle!r} not in snapshot:\n{snap.text}")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageServer]:
    root = tmp_path_factory.mktemp("forms")
    (root / "form.html").write_text(FORM_HTML)
    (root / "done.html").write_text(DONE_HTML)
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
        await session.navigate(site.url("form.html"))
        yield session
    finally:
        await session.close()


@pytest.fixture
def pinned(ws: CdpWsSession) -> Pinned:
    return Pinned(ws)


@pytest.fixture
def ctx(ws: CdpWsSession, pinned: Pinned, tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="s", cdp=WsTab(ws), files=FileSandbox(tmp_path), state={"browser": pinned}
    )


def text(out: Any) -> str:
    return str(out.content_for_model)


async def test_extract_form_lists_fields_with_labels_types_options_and_masks_secrets(
    reg: Registry, ctx: ToolContext
) -> None:
    out = await reg.run("extract_form", {"form": "#signup"}, ctx)
    assert out.ok, out.content_for_model
    body = text(out)
    assert "form signup GET" in body
    assert re.search(r"- email \(email\) label \"Email\" value \"\" required", body)
    assert '- country (select) label "Country"' in body
    assert '"Germany=de"' in body
    assert '- plan (radio) label "Plan" value "free"' in body
    assert "- terms (checkbox)" in body
    assert 'buttons: ["Sign up"]' in body
    # Secrets: the page's values never reach the model.
    assert "hunter2" not in body
    assert "4111" not in body
    assert body.count("(set, hidden)") == 2


async def test_extract_form_names_a_missing_form(reg: Registry, ctx: ToolContext) -> None:
    out = await reg.run("extract_form", {"form": "#nope"}, ctx)
    assert out.outcome == "error"
    assert "no element matches #nope" in text(out)


async def test_fill_form_fills_fields_by_name_and_label_with_real_input(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    out = await reg.run(
        "fill_form",
        {
            "fields": {
                "Email": "ann@example.com",
                "pw": "s3cret-pass",
                "country": "France",
                "Plan": "Pro",
                "I agree": True,
                "Notes": "hello",
            }
        },
        ctx,
    )
    assert out.ok, out.content_for_model
    body = text(out)
    assert body.startswith("filled 6 of 6 fields")
    assert "pw: ok, typed (hidden)" in body
    assert "s3cret" not in body
    values = await ws.evaluate(
        "(() => { const f = document.forms.signup; return [f.email.value, f.pw.value, "
        "f.country.value, f.plan.value, f.terms.checked, f.notes.value]; })()"
    )
    assert values == ["ann@example.com", "s3cret-pass", "fr", "pro", True, "hello"]
    assert await ws.evaluate("window.trusted") == [True]  # typed like a user, not set by script
    assert ("Input.insertText", True) in ws.sent
    assert ("Input.dispatchMouseEvent", True) in ws.sent  # the radio and the checkbox


async def test_fill_form_reports_a_missing_field_and_fills_the_others(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    out = await reg.run("fill_form", {"fields": {"email": "a@b.c", "phone": "123"}}, ctx)
    assert out.ok
    body = text(out)
    assert "filled 1 of 2 fields" in body
    assert 'phone: FAILED, no field "phone"; choices:' in body
    assert "email" in body.split("choices:")[1]
    everything_wrong = await reg.run("fill_form", {"fields": {"country": "Mars"}}, ctx)
    assert everything_wrong.outcome == "error"
    assert "Germany" in text(everything_wrong)


async def test_submit_form_clicks_the_submit_button_and_reports_the_navigation(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession, site: PageServer
) -> None:
    await reg.run("fill_form", {"fields": {"email": "ann@example.com"}}, ctx)
    out = await reg.run("submit_form", {}, ctx)
    assert out.ok, out.content_for_model
    assert out.data is not None
    assert out.data["navigated"] is True
    assert out.data["url"].startswith(site.url("done.html?email=ann%40example.com"))
    assert 'clicked "Sign up"' in text(out)
    assert await ws.evaluate("document.title") == "Done"


async def test_submit_form_names_the_invalid_fields_when_nothing_happens(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    out = await reg.run("submit_form", {"form": "#signup", "timeout": 2}, ctx)
    assert out.ok
    assert out.data is not None
    assert out.data["navigated"] is False
    assert "invalid fields: email:" in text(out)
    assert await ws.evaluate("document.title") == "Form"


async def test_upload_index_sets_a_file_from_the_sandbox(
    reg: Registry, ctx: ToolContext, pinned: Pinned, ws: CdpWsSession
) -> None:
    assert isinstance(ctx.files, FileSandbox)
    ctx.files.write("docs/cv.txt", "curriculum vitae")
    snap = await pinned.snapshot()
    out = await reg.run(
        "upload_index", {"index": index_of(snap, '"Doc"'), "paths": ["docs/cv.txt"]}, ctx
    )
    assert out.ok, out.content_for_model
    files = await ws.evaluate(
        "Array.from(document.getElementById('doc').files).map(f => [f.name, f.size])"
    )
    assert files == [["cv.txt", 16]]
    # A hidden input behind a styled label: the snapshot's index still reaches the input.
    out = await reg.run(
        "upload_index", {"index": index_of(snap, '"Pick photo"'), "paths": ["docs/cv.txt"]}, ctx
    )
    assert out.ok, out.content_for_model
    assert await ws.evaluate("document.getElementById('photo').files.length") == 1


async def test_upload_index_refuses_paths_outside_the_sandbox(
    reg: Registry, ctx: ToolContext, pinned: Pinned, ws: CdpWsSession
) -> None:
    snap = await pinned.snapshot()
    doc = index_of(snap, '"Doc"')
    for path in ("/etc/passwd", "../../etc/passwd", "missing.txt"):
        out = await reg.run("upload_index", {"index": doc, "paths": [path]}, ctx)
        assert out.outcome == "error", path
    assert "absolute" in text(
        await reg.run("upload_index", {"index": doc, "paths": ["/etc/passwd"]}, ctx)
    )
    assert await ws.evaluate("document.getElementById('doc').files.length") == 0
    assert not any(m == "DOM.setFileInputFiles" for m, _ in ws.sent)


async def test_upload_index_refuses_a_field_that_is_not_a_file_input(
    reg: Registry, ctx: ToolContext, pinned: Pinned
) -> None:
    assert isinstance(ctx.files, FileSandbox)
    ctx.files.write("a.txt", "a")
    snap = await pinned.snapshot()
    out = await reg.run(
        "upload_index", {"index": index_of(snap, '"Email"'), "paths": ["a.txt"]}, ctx
    )
    assert out.outcome == "error"
    assert "not a file input" in text(out)


async def test_upload_index_after_a_navigation_is_a_stale_ref(
    reg: Registry, ctx: ToolContext, pinned: Pinned, ws: CdpWsSession, site: PageServer
) -> None:
    assert isinstance(ctx.files, FileSandbox)
    ctx.files.write("a.txt", "a")
    snap = await pinned.snapshot()
    await ws.navigate(site.url("form.html?again"))
    out = await reg.run("upload_index", {"index": index_of(snap, '"Doc"'), "paths": ["a.txt"]}, ctx)
    assert (out.outcome, out.error_code) == ("error", ErrorCode.STALE_REF)


async def test_upload_file_sets_files_by_selector(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    assert isinstance(ctx.files, FileSandbox)
    ctx.files.write("b.txt", "bee")
    out = await reg.run("upload_file", {"selector": "#doc", "paths": ["b.txt"]}, ctx)
    assert out.ok, out.content_for_model
    assert await ws.evaluate("document.getElementById('doc').files[0].name") == "b.txt"


async def test_hover_index_moves_the_mouse_over_the_element(
    reg: Registry, ctx: ToolContext, pinned: Pinned, ws: CdpWsSession
) -> None:
    snap = await pinned.snapshot()
    out = await reg.run("hover_index", {"index": index_of(snap, '"Menu"')}, ctx)
    assert out.ok, out.content_for_model
    assert "Menu open" in text(out)
    assert await asyncio.wait_for(ws.evaluate("menu.textContent"), 5) == "Menu open"
