"""``find_by_scrolling`` in a real headless Chromium: a row of a 10,000-row virtualised list that is
not rendered is found by scrolling, with progress, and only the match reaches the model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.tools.registry import Registry
from tests.actors.tools.test_page_corpus import Model, browser, idx, pages, reg, tab
from tests.helpers.cdp_ws import CdpWsSession
from tests.helpers.chromium import PageServer, chromium_available

__all__ = ["browser", "pages", "reg", "tab"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium"),
]


@pytest.fixture
def model(reg: Registry, tab: CdpWsSession, tmp_path: Path) -> Model:
    made = Model(reg, tab, tmp_path)
    made.progress: list[str] = []  # type: ignore[misc]

    async def progress(text: str) -> None:
        made.progress.append(text)  # type: ignore[attr-defined]

    made.ctx.progress = progress
    return made


async def test_a_row_far_down_a_page_virtualised_list_is_found_with_progress_and_clicked(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("virtual.html?mode=recycle"))
    await model.inspect()
    found = await model.ok("find_by_scrolling", text="Row 2500")
    assert re.search(r'\[\d+\] button "Row 2500"', found), found
    assert "Row 2499" not in found and len(found) < 600  # the match, not the list
    assert model.progress and "% of the list searched" in model.progress[0]  # type: ignore[attr-defined]
    await model.ok("click_index", index=idx(found, '"Row 2500"'))
    assert await tab.evaluate("window.log") == [2500]
    # Above where it stands now: down to the end, then from the top.
    await tab.evaluate("scrollTo(0, document.documentElement.scrollHeight - 3000)")
    again = await model.ok("find_by_scrolling", text="Row 40")
    assert re.search(r'button "Row 40"', again) and "Row 400" not in again, again


async def test_a_debounced_list_in_a_scrolling_box_is_searched_through_its_box(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("virtual_box.html"))
    snap = await model.inspect()
    first_row = idx(snap, "Order #100001")
    found = await model.ok("find_by_scrolling", text="Order #100600", index=first_row)
    assert re.search(r'\[\d+\] link "Order #100600"', found), found
    await model.ok("click_index", index=idx(found, "Order #100600"))
    assert await tab.evaluate("document.getElementById('picked').textContent") == (
        "picked Order #100600"
    )


async def test_a_debounced_list_whose_scroll_frames_run_late_is_still_searched_row_by_row(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    # The scroll handler works 120 ms before it sets its 40 ms render timer: a wait for the
    # render that starts at the scroll (not once the frame has run) gave up before the render
    # came, scrolled on, and the rows in between were never rendered (flaked under CI load).
    await tab.navigate(pages.url("virtual_box.html?busy=120"))
    snap = await model.inspect()
    found = await model.ok(
        "find_by_scrolling", text="Order #100100", index=idx(snap, "Order #100001")
    )
    assert re.search(r'\[\d+\] link "Order #100100"', found), found


async def test_a_text_that_is_nowhere_is_reported_not_found(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("long.html"))
    await model.inspect()
    gone = await model.ok("find_by_scrolling", text="no such words anywhere")
    assert gone.startswith("not found: scrolled through the whole list"), gone
    await tab.navigate(pages.url("virtual.html"))
    await model.inspect()
    late = await model.ok("find_by_scrolling", text="Row 99999", max_seconds=1)
    assert late.startswith("not found in 1 s") and "call again" in late, late
