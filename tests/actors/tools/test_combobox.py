"""``select_index`` on custom dropdowns (:mod:`actors.tools.combobox`), in a real headless
Chromium: one call opens them, clicks the option by label with trusted input and reads it back."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

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


async def open_dropdowns(tab: CdpWsSession, pages: PageServer) -> tuple[PageTools, Snapshot]:
    await tab.navigate(pages.url("dropdown.html"))
    tools = PageTools(tab)
    return tools, await tools.inspect_page()


async def test_an_aria_combobox_is_opened_and_its_option_clicked_by_label_in_one_call(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_dropdowns(tab, pages)
    country = idx(snap, '"Country Choose')
    result = await tools.select_index(country, snap.doc_token, "japan")
    assert result.ok, result
    assert result.note == 'selected "Japan"'
    assert result.element == f'[{country}] combobox "Country Japan" collapsed'
    assert await tab.evaluate("window.log") == ["opt-jp"]
    mouse = [changing for m, changing in tab.sent if m == "Input.dispatchMouseEvent"]
    assert len(mouse) == 6 and all(mouse)  # two trusted clicks: the combobox, the option


async def test_a_popup_button_whose_options_are_rendered_into_a_portal_is_chosen_too(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_dropdowns(tab, pages)
    result = await tools.select_index(idx(snap, '"Fruit: Apple"'), snap.doc_token, "Cherry")
    assert result.ok, result
    assert await tab.evaluate("window.log") == ["fruit:Cherry"]


async def test_no_matching_option_fails_with_the_labels_on_offer(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_dropdowns(tab, pages)
    result = await tools.select_index(idx(snap, '"Country Choose'), snap.doc_token, "Mango")
    assert not result.ok
    assert result.note == 'no option matches "Mango"; options: "Belgium", "France", "Japan"'
    assert await tab.evaluate("window.log") == []


async def test_a_control_that_is_no_dropdown_is_refused_untouched(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_dropdowns(tab, pages)
    result = await tools.select_index(idx(snap, '"Elsewhere"'), snap.doc_token, "Apple")
    assert not result.ok
    assert result.note == "the element is not a select or combobox"
    assert await tab.evaluate("window.log") == []
    assert not [m for m, _ in tab.sent if m == "Input.dispatchMouseEvent"]
