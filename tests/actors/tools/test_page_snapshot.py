"""inspect_page in a real headless Chromium: what it lists, and that it stays out of the page."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from actors.tools.page import PageTools
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


def line_of(text: str, needle: str) -> str:
    lines = [ln for ln in text.splitlines() if needle in ln]
    assert lines, f"{needle!r} not in snapshot:\n{text}"
    return lines[0]


def index_of(text: str, needle: str) -> int:
    m = re.search(r"\[(\d+)\]", line_of(text, needle))
    assert m
    return int(m.group(1))


async def test_snapshot_lists_controls_with_roles_names_states_and_hrefs(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("controls.html"))
    snap = await PageTools(tab).inspect_page()
    text = snap.text
    assert text.startswith('# page "Controls" http://127.0.0.1')
    assert "ready=complete" in text
    assert f"doc={snap.doc_token}" in text
    assert re.search(r'^\[\d+\] link "Next" -> /page/2$', text, re.M)
    assert re.search(r'^\[\d+\] link "About us" -> example.com/about$', text, re.M)
    assert re.search(r'^\[\d+\] button "Add to cart"$', text, re.M)
    assert re.search(r'^\[\d+\] button "Close dialog"$', text, re.M)  # aria-label
    assert re.search(r'^\[\d+\] button "Sold out" disabled$', text, re.M)
    assert re.search(r'^\[\d+\] textbox "Email" required$', text, re.M)  # label[for]
    assert re.search(r'^\[\d+\] textbox "Name" value="Ann"$', text, re.M)  # wrapping label
    assert re.search(r'^\[\d+\] searchbox "Search products"$', text, re.M)  # placeholder
    assert re.search(r'^\[\d+\] combobox "Size" value="Small"$', text, re.M)
    assert re.search(r'^\[\d+\] radio "Standard" checked$', text, re.M)
    assert re.search(r'^\[\d+\] button "More info" collapsed$', text, re.M)  # summary
    assert re.search(r'^\[\d+\] textbox "Editor" value="Hello"$', text, re.M)  # contenteditable
    assert re.search(r'^\[\d+\] button "Role button"$', text, re.M)
    assert re.search(r'^\[\d+\] clickable "Product card"$', text, re.M)  # cursor:pointer
    # A visually hidden checkbox is listed through its visible label; display:none is not.
    assert re.search(r'^\[\d+\] checkbox "I accept the terms"$', text, re.M)
    assert "Hidden button" not in text
    assert snap.count == snap.listed == snap.shown == 19
    assert snap.next_offset is None
    assert not snap.truncated


async def test_lines_cost_about_ten_tokens_or_less_on_average(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("controls.html"))
    snap = await PageTools(tab).inspect_page()
    body = [ln for ln in snap.text.splitlines() if ln.startswith("[")]
    assert sum(len(ln) for ln in body) / 4 / len(body) <= 10


async def test_open_and_closed_shadow_root_and_same_origin_iframe_controls_are_listed(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("frames.html"))
    text = (await PageTools(tab).inspect_page()).text
    assert re.search(r'^\[\d+\] button "Shadow button"$', text, re.M)
    assert re.search(r'^\[\d+\] textbox "Shadow input"$', text, re.M)
    assert re.search(r'^\[\d+\] button "Frame button"$', text, re.M)
    assert re.search(r'^\[\d+\] textbox "Frame input"$', text, re.M)
    assert re.search(r'^\[\d+\] button "Closed shadow button"$', text, re.M)  # issue 15


async def test_password_and_card_values_are_masked_but_ordinary_values_are_not(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("secrets.html"))
    text = (await PageTools(tab).inspect_page()).text
    for secret in ("hunter2", "4111111111111111", "5500000000000004", "123"):
        assert secret not in text
    # A password field says so by its role; other secret fields carry the "secret" state, so
    # the host masks whatever is typed into them too.
    assert line_of(text, '"Password"').endswith('value="••••"')
    assert line_of(text, '"Card"').endswith('value="••••" secret')
    assert line_of(text, '"Number on card"').endswith('value="••••" secret')
    assert line_of(text, '"CVC"').endswith('value="••••" secret')
    assert line_of(text, '"City"').endswith('value="Paris"')


async def test_elements_far_below_the_fold_are_counted_not_listed_by_default(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("long.html"))
    tools = PageTools(tab)
    snap = await tools.inspect_page()
    assert snap.count == 200
    assert '"Item 1"' in snap.text
    assert '"Item 200"' not in snap.text
    assert "-- below viewport --" in snap.text
    m = re.search(r"# not listed: 0 controls further above, (\d+) further below", snap.text)
    assert m
    assert int(m.group(1)) + snap.listed == 200
    everything = await tools.inspect_page(scope="all")
    assert everything.listed == 200
    assert '"Item 200"' in everything.text


async def test_paging_text_filter_and_budget_truncation_marker(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("long.html"))
    tools = PageTools(tab)
    page1 = await tools.inspect_page(scope="all", limit=50)
    assert page1.shown == 50
    assert page1.next_offset == 50
    assert "# [150 more; use offset=50]" in page1.text
    page2 = await tools.inspect_page(scope="all", offset=50, limit=50)
    assert '"Item 51"' in page2.text
    assert '"Item 50"' not in page2.text
    filtered = await tools.inspect_page(scope="all", text_filter="item 19")
    names = re.findall(r'"(Item \d+)"', filtered.text)
    assert names == ["Item 19"] + [f"Item {i}" for i in range(190, 200)]
    small = await tools.inspect_page(scope="all", max_chars=600)
    assert small.truncated
    assert len(small.text) <= 600
    assert re.search(r"# \[truncated at max_chars: \d+ more; use offset=\d+", small.text)


async def test_indices_are_stable_and_new_elements_are_starred(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("nav.html"))
    tools = PageTools(tab)
    first = await tools.inspect_page()
    assert "*[" not in first.text
    await tab.evaluate("document.body.insertAdjacentHTML('afterbegin', '<button>Fresh</button>')")
    second = await tools.inspect_page()
    assert second.doc_token == first.doc_token
    assert re.search(r'^\*\[4\] button "Fresh"$', second.text, re.M)
    assert line_of(second.text, '"Go to target"').startswith("[1]")
    assert second.new == 1


async def test_the_indexer_is_invisible_to_page_scripts_and_adds_no_attributes(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("controls.html"))
    tools = PageTools(tab)
    await tools.inspect_page()
    await tools.inspect_page(scope="all")
    seen = await tab.evaluate(
        """(async () => {
            await new Promise((r) => setTimeout(r, 0));  // let MutationObserver callbacks run
            const attrs = new Set();
            for (const el of document.querySelectorAll('*'))
                for (const a of el.getAttributeNames()) attrs.add(a);
            return {
                global: typeof globalThis.__browy,
                browyAttrs: [...attrs].filter((a) => /browy|data-/.test(a)),
                mutations: window.attrMutations,
            };
        })()"""
    )
    assert seen == {"global": "undefined", "browyAttrs": [], "mutations": 0}


async def test_a_page_cannot_break_the_indexer_by_overriding_builtins(
    tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("controls.html"))
    await tab.evaluate(
        "Element.prototype.getBoundingClientRect = () => { throw new Error('boom') };"
        "Document.prototype.querySelectorAll = () => [];"
    )
    snap = await PageTools(tab).inspect_page()
    assert '"Add to cart"' in snap.text
