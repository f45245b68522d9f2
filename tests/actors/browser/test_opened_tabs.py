"""The tabs an action opened, as its result names them (``actors.browser.opened_tabs``)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.browser import opened_tabs
from actors.browser.opened_tabs import note_of, opened_since


class Tabs:
    """``tabs.list()`` answering each listing in turn (the last one again and again)."""

    def __init__(self, *listings: list[dict[str, Any]]) -> None:
        self.listings = list(listings)
        self.calls = 0

    async def list(self) -> list[dict[str, Any]]:
        self.calls += 1
        return self.listings[min(self.calls, len(self.listings)) - 1]


async def test_a_popup_that_shows_no_address_yet_is_asked_about_until_it_does() -> None:
    # Chrome lists a tab whose first page is on its way with no address (CI: "opened a new tab
    # (tab N)" and nothing to tell it by).
    tabs = Tabs(
        [{"tabId": 1, "url": "https://shop.test/"}, {"tabId": 2, "url": ""}],
        [{"tabId": 1, "url": "https://shop.test/"}, {"tabId": 2, "url": "https://shop.test/help"}],
    )
    opened = await opened_since(tabs, {1})
    assert opened == [(2, "https://shop.test/help")]
    assert "tab 2 https://shop.test/help" in note_of(opened)


async def test_a_tab_that_never_shows_an_address_is_named_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(opened_tabs, "ADDRESS_WAIT_S", 0.3)
    tabs = Tabs([{"tabId": 1, "url": "https://shop.test/"}, {"tabId": 2, "url": ""}])
    assert await opened_since(tabs, {1}) == [(2, "")]
    assert 2 <= tabs.calls <= 6  # asked again a few times within the bound, then given up


async def test_nothing_opened_is_one_listing() -> None:
    tabs = Tabs([{"tabId": 1, "url": "https://shop.test/"}])
    assert await opened_since(tabs, {1}) == [] and tabs.calls == 1
    assert await opened_since(tabs, None) == []
