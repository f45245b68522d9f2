"""One rule for secret fields, from the element where the page can be asked, from names
otherwise: what is typed into a secret field never reaches the panel, the journal or the log.

Regressions of the security review: ``fill_form`` keys and ``fill_input`` selectors were masked by
name only (``{'Kennwort': …}``, ``{'#f2': …}`` and ``{'Security code': '123'}`` went through) and
``press_keys`` text was never masked; three regexes disagreed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import pytest

from actors.tools.masking import MASK, mask_secret_args, secret_view
from actors.tools.pinned_tab import TurnBrowser
from actors.tools.secret_rule import name_is_secret
from tests.helpers.cdp_ws import CdpWsSession
from tests.helpers.chromium import Chromium, PageServer, chromium_available


@pytest.mark.parametrize(
    "name",
    ["Kennwort", "Password", "passwd", "Security code", "CVV", "card number", "one-time code",
     "otp", "PIN", "Contraseña", "mot de passe", "2FA", "Sicherheitscode"],
)  # fmt: skip
def test_names_that_say_secret_are_secret(name: str) -> None:
    assert name_is_secret(name)


@pytest.mark.parametrize("name", ["City", "Stadt", "email", "search", "spinach", "Company"])
def test_ordinary_names_are_not(name: str) -> None:
    assert not name_is_secret(name)


def test_without_the_page_names_decide() -> None:
    view = mask_secret_args(
        "fill_form", {"fields": {"Kennwort": "pw", "Security code": "123", "Stadt": "Bonn"}}, None
    )
    assert view["fields"] == {"Kennwort": MASK, "Security code": MASK, "Stadt": "Bonn"}


# --- the page decides, where it can be asked ----------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chromium]:
    with Chromium.launched() as b:
        yield b


@pytest.fixture(scope="module")
def pages() -> Iterator[PageServer]:
    with PageServer() as srv:
        yield srv


class WsBrowser(TurnBrowser):
    def __init__(self, ws: CdpWsSession) -> None:
        super().__init__(
            tabs=cast(Any, None), session_id="s", owner_id="o", tab_id=1, window_id=None
        )
        self.ws = ws

    def session(self) -> Any:
        return self.ws


@pytest.fixture
async def page(chromium: Chromium, pages: PageServer) -> AsyncIterator[WsBrowser]:
    ws = await CdpWsSession.open(chromium.http_base)
    try:
        await ws.navigate(pages.url("secret_fields.html"))
        yield WsBrowser(ws)
    finally:
        await ws.close()


@pytest.mark.browser
@pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium")
async def test_fill_input_by_selector_asks_the_element(page: WsBrowser) -> None:
    assert (await secret_view("fill_input", {"selector": "#f2", "value": "pw"}, page))[
        "value"
    ] == MASK  # autocomplete=current-password: the name says nothing
    assert (await secret_view("fill_input", {"selector": "#f3", "value": "1234"}, page))[
        "value"
    ] == MASK  # inputmode=numeric one-time code
    shown = await secret_view("fill_input", {"selector": "#f5", "value": "Bonn"}, page)
    assert shown["value"] == "Bonn"


@pytest.mark.browser
@pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium")
async def test_fill_form_keys_are_judged_by_their_fields(page: WsBrowser) -> None:
    view = await secret_view(
        "fill_form",
        {"fields": {"k": "pw", "Einmalcode": "123456", "sc": "123", "stadt": "Bonn"}},
        page,
    )
    assert view["fields"] == {"k": MASK, "Einmalcode": MASK, "sc": MASK, "stadt": "Bonn"}


@pytest.mark.browser
@pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium")
async def test_keys_pressed_into_a_focused_secret_field_are_masked(page: WsBrowser) -> None:
    await page.ws.send("Runtime.evaluate", {"expression": "document.getElementById('f2').focus()"})
    assert (await secret_view("press_keys", {"keys": ["h", "i"]}, page))["keys"] == MASK
    assert (await secret_view("press_key", {"key": "x"}, page))["key"] == MASK
    await page.ws.send("Runtime.evaluate", {"expression": "document.getElementById('f5').focus()"})
    assert (await secret_view("press_keys", {"keys": ["h", "i"]}, page))["keys"] == ["h", "i"]
