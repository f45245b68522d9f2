"""Index actions against a real headless Chromium: they act like a user and refuse stale indices."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import pytest

from actors.tools.cdp import CdpError, ErrorCode
from actors.tools.page import PageTools, Snapshot
from tests.helpers.cdp_ws import CdpWsSession
from tests.helpers.chromium import Chromium, PageServer, chromium_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium"),
]


@pytest.fixture
async def tab(browser: Chromium) -> AsyncIterator[CdpWsSession]:
    session = await CdpWsSession.open(browser.http_base)
    try:
        yield session
    finally:
        await session.close()


def idx(snap: Snapshot, needle: str) -> int:
    for line in snap.text.splitlines():
        if needle in line:
            m = re.search(r"\[(\d+)\]", line)
            assert m
            return int(m.group(1))
    raise AssertionError(f"{needle!r} not in snapshot:\n{snap.text}")


async def open_page(tab: CdpWsSession, pages: PageServer, name: str) -> tuple[PageTools, Snapshot]:
    await tab.navigate(pages.url(name))
    tools = PageTools(tab)
    return tools, await tools.inspect_page()


async def test_click_index_clicks_with_real_mouse_events(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "controls.html")
    await tab.evaluate(
        "window.trusted = [];"
        "document.getElementById('add').addEventListener('click', (e) => trusted.push(e.isTrusted))"
    )
    result = await tools.click_index(idx(snap, '"Add to cart"'), snap.doc_token)
    result = await tools.click_index(idx(snap, '"Add to cart"'), snap.doc_token)
    assert result.ok
    assert not result.navigated
    assert await tab.evaluate("document.getElementById('count').textContent") == "2"
    assert await tab.evaluate("window.trusted") == [True, True]
    mouse = [pc for m, pc in tab.sent if m == "Input.dispatchMouseEvent"]
    assert mouse
    assert all(mouse)
    assert ("Runtime.evaluate", False) in tab.sent  # reads are not


async def test_cursor_pointer_element_is_clickable(tab: CdpWsSession, pages: PageServer) -> None:
    tools, snap = await open_page(tab, pages, "controls.html")
    result = await tools.click_index(idx(snap, '"Product card"'), snap.doc_token)
    assert result.element == f'[{idx(snap, "Product card")}] clickable "Card clicked"'


async def test_shadow_root_and_iframe_buttons_are_clickable(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "frames.html")
    await tools.click_index(idx(snap, '"Shadow button"'), snap.doc_token)
    assert await tab.evaluate("document.getElementById('shadow-count').textContent") == "1"
    result = await tools.click_index(idx(snap, '"Frame button"'), snap.doc_token)
    frame_text = "document.getElementById('child').contentDocument.getElementById('fb').textContent"
    assert await tab.evaluate(frame_text) == "Frame clicked"
    assert result.element is not None
    assert '"Frame clicked"' in result.element


async def test_type_index_types_clears_and_reads_the_value_back(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "controls.html")
    name = idx(snap, '"Name"')
    result = await tools.type_index(name, snap.doc_token, "Bob")
    assert await tab.evaluate("document.getElementById('name').value") == "Bob"
    assert result.element == f'[{name}] textbox "Name" value="Bob" focused'
    await tools.type_index(name, snap.doc_token, " Jr", clear=False)
    assert await tab.evaluate("document.getElementById('name').value") == "Bob Jr"
    await tools.clear_index(name, snap.doc_token)
    assert await tab.evaluate("document.getElementById('name').value") == ""
    editor = idx(snap, '"Editor"')
    await tools.type_index(editor, snap.doc_token, "Rich text")
    assert await tab.evaluate("document.getElementById('editor').textContent") == "Rich text"


async def test_type_index_with_submit_presses_enter(tab: CdpWsSession, pages: PageServer) -> None:
    tools, snap = await open_page(tab, pages, "controls.html")
    await tools.type_index(idx(snap, '"Search products"'), snap.doc_token, "shoes", submit=True)
    assert await tab.evaluate("window.submitted") == "shoes"


async def test_typed_secrets_are_not_echoed_back(tab: CdpWsSession, pages: PageServer) -> None:
    tools, snap = await open_page(tab, pages, "secrets.html")
    result = await tools.type_index(idx(snap, '"Password"'), snap.doc_token, "s3cret-pass")
    assert await tab.evaluate("document.getElementById('pw').value") == "s3cret-pass"
    assert "s3cret" not in result.to_text()
    assert 'value="••••"' in (result.element or "")


async def test_select_and_check_work(tab: CdpWsSession, pages: PageServer) -> None:
    tools, snap = await open_page(tab, pages, "controls.html")
    await tab.evaluate(
        "window.changes = 0; document.getElementById('size')"
        ".addEventListener('change', () => changes++)"
    )
    size = idx(snap, '"Size"')
    result = await tools.select_index(size, snap.doc_token, "large")
    assert result.ok
    assert result.element == f'[{size}] combobox "Size" value="Large"'
    assert await tab.evaluate("[document.getElementById('size').value, window.changes]") == ["l", 1]
    missing = await tools.select_index(size, snap.doc_token, "Huge")
    assert not missing.ok
    assert '"Medium"' in missing.note

    news = idx(snap, '"Newsletter"')
    assert (await tools.check_index(news, snap.doc_token, True)).ok
    assert await tab.evaluate("document.getElementById('news').checked") is True
    again = await tools.check_index(news, snap.doc_token, True)
    assert again.ok
    assert again.note == "already checked"
    assert (await tools.check_index(news, snap.doc_token, False)).ok
    assert await tab.evaluate("document.getElementById('news').checked") is False
    # A visually hidden checkbox is checked by clicking its label, as a user would.
    assert (await tools.check_index(idx(snap, '"I accept the terms"'), snap.doc_token)).ok
    assert await tab.evaluate("document.getElementById('terms').checked") is True
    express = idx(snap, '"Express"')
    assert (await tools.check_index(express, snap.doc_token)).ok
    assert await tab.evaluate("document.querySelector('[value=exp]').checked") is True


async def test_focus_and_hover(tab: CdpWsSession, pages: PageServer) -> None:
    tools, snap = await open_page(tab, pages, "controls.html")
    await tab.evaluate(
        "window.hovered = false; document.getElementById('add')"
        ".addEventListener('mouseover', () => { window.hovered = true })"
    )
    assert (await tools.hover_index(idx(snap, '"Add to cart"'), snap.doc_token)).ok
    assert await tab.evaluate("window.hovered") is True
    result = await tools.focus_index(idx(snap, '"Email"'), snap.doc_token)
    assert result.element is not None
    assert result.element.endswith("required focused")
    assert await tab.evaluate("document.activeElement.id") == "email"


async def test_click_scrolls_an_element_far_below_into_view(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("long.html"))
    tools = PageTools(tab)
    snap = await tools.inspect_page(scope="all")
    result = await tools.click_index(idx(snap, '"Item 180"'), snap.doc_token)
    assert result.element is not None
    assert '"done 180"' in result.element
    assert await tab.evaluate("scrollY") > 5000


async def test_after_a_navigation_an_old_index_gives_stale_ref_instead_of_acting(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "nav.html")
    result = await tools.click_index(idx(snap, '"Go to target"'), snap.doc_token)
    assert result.navigated
    assert not result.same_document
    assert result.url_after.endswith("/nav_target.html")
    assert result.title == "Target"
    assert result.element is None
    with pytest.raises(CdpError) as err:
        await tools.click_index(1, snap.doc_token)  # [1] is now "Target button"'s number too
    assert err.value.code is ErrorCode.STALE_REF
    fresh = await tools.inspect_page()
    assert fresh.doc_token != snap.doc_token
    with pytest.raises(CdpError) as err:
        await tools.click_index(1, snap.doc_token)
    assert err.value.code is ErrorCode.STALE_REF


async def test_same_document_navigation_is_reported_and_keeps_indices(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "nav.html")
    result = await tools.click_index(idx(snap, '"Step 2"'), snap.doc_token)
    assert result.navigated
    assert result.same_document
    assert result.url_after.endswith("#step2")
    assert (await tools.click_index(idx(snap, '"Remove me"'), snap.doc_token)).element is None
    with pytest.raises(CdpError) as err:
        await tools.click_index(idx(snap, '"Remove me"'), snap.doc_token)
    assert err.value.code is ErrorCode.STALE_REF


async def test_a_reload_makes_old_indices_stale(tab: CdpWsSession, pages: PageServer) -> None:
    tools, snap = await open_page(tab, pages, "controls.html")
    await tab.navigate(pages.url("controls.html"))
    with pytest.raises(CdpError) as err:
        await tools.click_index(idx(snap, '"Add to cart"'), snap.doc_token)
    assert err.value.code is ErrorCode.STALE_REF
    assert await tab.evaluate("window.clicks") == 0


async def test_a_new_page_tools_on_the_same_document_shares_the_indices(
    tab: CdpWsSession, pages: PageServer
) -> None:
    _, snap = await open_page(tab, pages, "controls.html")
    other = PageTools(tab)  # e.g. a restarted actor: Chromium hands back the same named world
    assert (await other.click_index(idx(snap, '"Add to cart"'), snap.doc_token)).ok
    assert await tab.evaluate("window.clicks") == 1
    assert (await other.inspect_page()).doc_token == snap.doc_token
    with pytest.raises(CdpError) as err:
        await other.click_index(idx(snap, '"Add to cart"'), "0123456789ab")
    assert err.value.code is ErrorCode.STALE_REF


async def test_controls_inside_closed_shadow_roots_are_listed_and_used(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "closed_shadow.html")
    assert await tab.evaluate("document.querySelector('pay-widget').shadowRoot") is None
    for name in ('"Card holder"', '"Pay now"', '"Accept terms"', '"Get help"'):
        assert name in snap.text, snap.text  # a closed root in a closed root, and on a div
    typed = await tools.type_index(idx(snap, '"Card holder"'), snap.doc_token, "Ada")
    assert typed.ok, typed
    clicked = await tools.click_index(idx(snap, '"Pay now"'), snap.doc_token)
    assert clicked.ok, clicked
    assert await tab.evaluate("document.getElementById('out').textContent") == "paid by Ada"
    checked = await tools.check_index(idx(snap, '"Accept terms"'), snap.doc_token)
    assert checked.ok, checked
    assert await tab.evaluate("document.getElementById('out').textContent") == "terms true"
    helped = await tools.click_index(idx(snap, '"Get help"'), snap.doc_token)
    assert helped.ok and await tab.evaluate("document.getElementById('out').textContent") == "help"
    again = await tools.inspect_page()  # asked once per host: the second snapshot is plain
    assert '"Pay now"' in again.text and again.doc_token == snap.doc_token


async def test_drag_index_drops_an_html5_card_and_reorders_a_pointer_sortable_list(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "drag.html")
    moved = await tools.drag_index(idx(snap, '"Write report"'), idx(snap, '"Done"'), snap.doc_token)
    assert moved.ok and "HTML5 drag" in moved.note, moved
    assert await tab.evaluate("document.getElementById('done').textContent") == "Write report"
    order = await tools.drag_index(idx(snap, '"Alpha"'), idx(snap, '"Charlie"'), snap.doc_token)
    assert order.ok and "pointer drag" in order.note, order
    log = await tab.evaluate("document.getElementById('log').textContent")
    assert log == "moved Write report to done;order Bravo,Charlie,Alpha,Delta;", log
    assert tab.sent.count(("Input.setInterceptDrags", True)) == 4  # on and off, each drag


async def test_typing_is_read_back_and_picker_fields_get_their_picker_value(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "fields.html")

    async def typed(name: str, text: str) -> tuple[bool, str]:
        result = await tools.type_index(idx(snap, name), snap.doc_token, text)
        return result.ok, result.to_text()

    for name, field, text, value in (
        ('"Arrival"', "date", "2025-12-31", "2025-12-31"),
        ('"Time"', "time", "2:30 pm", "14:30"),
        ('"Month"', "month", "2026-03", "2026-03"),
        ('"Colour"', "color", "#FF8800", "#ff8800"),
        ('"Guests"', "num", "1,200", "1200"),
    ):
        ok, text_out = await typed(name, text)
        assert ok, text_out
        got = await tab.evaluate(f"document.getElementById({json.dumps(field)}).value")
        assert got == value, (name, got, text_out)
    log = await tab.evaluate("document.getElementById('log').textContent")
    assert log == "date=2025-12-31;time=14:30;month=2026-03;color=#ff8800;num=1200;", log
    ok, text_out = await typed('"Phone"', "5551234567")
    assert ok and 'formats it as "(555) 123-4567"' in text_out, text_out
    ok, text_out = await typed('"Code"', "123456")
    assert not ok and 'it holds "1234"' in text_out, text_out
    ok, text_out = await typed('"Arrival"', "the day after tomorrow-ish")
    assert not ok and "takes a date as YYYY-MM-DD" in text_out, text_out
    sold = await tools.select_index(idx(snap, '"Plan"'), snap.doc_token, "Gold")
    assert not sold.ok and 'put it back to "Basic"' in sold.to_text(), sold
