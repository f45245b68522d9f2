"""The page-model corpus: hard page shapes driven the way the model drives them.

Each test loads one local page from ``tests/helpers/pages/`` (served from 127.0.0.1) in a real
headless Chromium (one per module) and uses the real tools: :class:`PageTools` directly, or the
registry's ``inspect_page`` / ``click_index`` / ``scroll`` / ``wait_for`` through a
:class:`TurnBrowser` pinned to the test's tab. Pages keep a ``window.log`` of what was really
clicked, so every test can tell "acted on the element it named" from "acted on something else".

The contracts these tests pin down:

- indices name DOM elements of one document. A same-document route change (SPA, pushState) keeps
  the document, so indices of elements that survive it keep working and an index of an element
  that was removed is STALE_REF, never a click on whatever now carries that number;
- a click whose point is covered (modal dialog, overlay) is reported, naming what was on top;
- a page that rewrites itself every few milliseconds never breaks the snapshot, and persistent
  elements keep their numbers;
- a click that does not reach the element it named (it moved, a modal covers it) says so
  (``ok=False``, "the click landed on ..."); a node that now shows another row than its number was
  listed with is STALE_REF; controls behind an open modal are marked (or left out) as inert; the
  ``scroll`` tool returns after the page's scroll handlers ran.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from actors.tools.catalog import build_registry
from actors.tools.cdp import CdpError, ErrorCode
from actors.tools.files import FileSandbox
from actors.tools.page import ActionResult, PageTools, Snapshot
from actors.tools.pinned_tab import TurnBrowser
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolContext, ToolOutcome
from tests.helpers.cdp_ws import CdpWsSession
from tests.helpers.chromium import Chromium, PageServer, chromium_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium"),
]

T = TypeVar("T")

# --- fixtures and helpers -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    with Chromium.launched() as b:
        yield b


@pytest.fixture(scope="module")
def pages() -> Iterator[PageServer]:
    with PageServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def reg(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    return build_registry(tmp_path_factory.mktemp("home"))


@pytest.fixture
async def tab(browser: Chromium) -> AsyncIterator[CdpWsSession]:
    session = await CdpWsSession.open(browser.http_base)
    try:
        yield session
    finally:
        await session.close()


class WsBrowser(TurnBrowser):
    """A :class:`TurnBrowser` whose pinned tab is a test websocket session, not the extension."""

    def __init__(self, ws: CdpWsSession) -> None:
        super().__init__(
            tabs=cast(Any, None), session_id="s", owner_id="o", tab_id=1, window_id=None
        )
        self.ws = ws

    def session(self) -> Any:
        return self.ws


class Model:
    """Calls registry tools by name with JSON-ish arguments, as the model's tool calls do."""

    def __init__(self, reg: Registry, ws: CdpWsSession, files: Path) -> None:
        self.reg = reg
        self.browser = WsBrowser(ws)
        self.ctx = ToolContext(
            session_id="s",
            cdp=cast(Any, ws),
            files=FileSandbox(files),
            state={"browser": self.browser},
        )

    async def call(self, name: str, **args: Any) -> ToolOutcome:
        return await self.reg.run(name, args, self.ctx)

    async def ok(self, name: str, **args: Any) -> str:
        out = await self.call(name, **args)
        assert out.ok, f"{name} {args} failed: {out.content_for_model}"
        return str(out.content_for_model)

    async def inspect(self, **args: Any) -> str:
        text = await self.ok("inspect_page", **args)
        assert text.startswith("<untrusted_page_content>\n")
        return text


@pytest.fixture
def model(reg: Registry, tab: CdpWsSession, tmp_path: Path) -> Model:
    return Model(reg, tab, tmp_path)


def entry(text: str, needle: str) -> tuple[int, str]:
    """(index, line) of the first snapshot entry containing ``needle``."""
    for line in text.splitlines():
        m = re.match(r"^\*?\[(\d+)\] ", line)
        if m and needle in line:
            return int(m.group(1)), line
    raise AssertionError(f"{needle!r} not in snapshot:\n{text}")


def idx(text: str | Snapshot, needle: str) -> int:
    return entry(text.text if isinstance(text, Snapshot) else text, needle)[0]


def entries(text: str) -> dict[int, str]:
    """index -> line for every entry of a snapshot."""
    out: dict[int, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\*?\[(\d+)\] ", line)
        if m:
            assert int(m.group(1)) not in out, f"index listed twice:\n{text}"
            out[int(m.group(1))] = line
    return out


async def until(
    probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool], *, timeout: float = 5.0
) -> T:
    """Call ``probe`` until ``ok(result)``; the last result after ``timeout`` fails the test."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if ok(value) or time.monotonic() >= deadline:
            assert ok(value), f"condition not met in {timeout}s; last value: {value!r}"
            return value
        await asyncio.sleep(0.02)  # polling with a deadline


def showing(needle: str) -> Callable[[str], bool]:
    """A condition for :func:`until`: the snapshot text contains ``needle``."""
    return lambda text: needle in text


async def open_page(tab: CdpWsSession, pages: PageServer, name: str) -> tuple[PageTools, Snapshot]:
    await tab.navigate(pages.url(name))
    tools = PageTools(tab)
    return tools, await tools.inspect_page()


async def stale(action: Awaitable[ActionResult]) -> CdpError:
    with pytest.raises(CdpError) as err:
        await action
    assert err.value.code is ErrorCode.STALE_REF
    return err.value


# --- SPA: route changes without a document load -------------------------------------------------


async def test_spa_route_change_keeps_the_document_surviving_indices_work_removed_ones_are_stale(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, home = await open_page(tab, pages, "spa.html")
    start_tour = idx(home, '"Start tour"')
    result = await tools.click_index(idx(home, '"Settings"'), home.doc_token)
    assert result.ok
    assert result.navigated
    assert result.same_document
    assert result.url_after.endswith("/spa/settings")
    assert result.title == "SPA: Settings"
    assert "old indices are stale" not in result.to_text()  # that is for new documents only

    settings = await tools.inspect_page()
    assert settings.doc_token == home.doc_token  # same document, same numbering
    assert re.search(r'^\*\[\d+\] checkbox "Dark mode"$', settings.text, re.M)
    assert re.search(r'^\*\[\d+\] button "Save settings"$', settings.text, re.M)
    assert '"Start tour"' not in settings.text
    for name in ('"Home"', '"Settings"', '"Profile"'):  # the nav survived with its numbers
        assert idx(settings, name) == idx(home, name)
    assert settings.new == 2

    # The removed button's number is refused, and nothing at all is clicked by the attempt.
    err = await stale(tools.click_index(start_tour, home.doc_token))
    assert "removed" in str(err)
    assert await tab.evaluate("window.log") == ["to-settings"]

    # A surviving element works with its number from the FIRST snapshot.
    result = await tools.click_index(idx(home, '"Profile"'), home.doc_token)
    assert result.same_document
    assert result.url_after.endswith("/spa/profile")
    assert await tab.evaluate("window.log") == ["to-settings", "to-profile"]
    # The settings route's controls were removed by this route change in turn.
    await stale(tools.check_index(idx(settings, '"Dark mode"'), home.doc_token))

    # Back home: "Start tour" is a NEW element with a NEW number; the old number stays stale.
    await tools.click_index(idx(home, '"Home"'), home.doc_token)
    back = await tools.inspect_page()
    again, line = entry(back.text, '"Start tour"')
    assert again != start_tour
    assert line.startswith("*[")
    await stale(tools.click_index(start_tour, home.doc_token))
    assert (await tools.click_index(again, back.doc_token)).ok
    assert await tab.evaluate("window.log") == [
        "to-settings", "to-profile", "to-home", "home-action"
    ]  # fmt: skip


async def test_via_tools_numbers_survive_a_route_change_and_removed_ones_are_stale(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("spa.html"))
    home = await model.inspect()
    text = await model.ok("click_index", index=idx(home, '"Settings"'))
    assert "URL now http://127.0.0.1" in text
    assert "/spa/settings" in text
    # A route change keeps the document: the numbers of elements that survive it keep working
    # without a new snapshot, and a removed element's number is STALE_REF, never another click.
    out = await model.call("click_index", index=idx(home, '"Start tour"'))  # gone with the route
    assert out.error_code is ErrorCode.STALE_REF
    settings = await model.inspect()
    assert idx(settings, '"Profile"') == idx(home, '"Profile"')
    await model.ok("check_index", index=idx(settings, '"Dark mode"'))
    assert await tab.evaluate("document.getElementById('dark').checked") is True
    await model.ok("click_index", index=idx(settings, '"Save settings"'))
    await model.ok("click_index", index=idx(home, '"Profile"'))  # number from before the route
    assert await tab.evaluate("location.pathname") == "/spa/profile"
    assert await tab.evaluate("window.log") == ["to-settings", "dark", "save", "to-profile"]


# --- custom dropdowns ---------------------------------------------------------------------------


async def test_custom_combobox_opens_on_click_options_appear_new_and_a_choice_updates_its_value(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("dropdown.html"))
    closed = await model.inspect()
    combo, line = entry(closed, "combobox")
    assert line.endswith('combobox "Country Choose…" collapsed')
    assert "option" not in closed  # hidden options are neither listed nor numbered

    text = await model.ok("click_index", index=combo)
    assert f'now: [{combo}] combobox "Country Choose…" expanded' in text
    opened = await model.inspect()
    options = {n: line for n, line in entries(opened).items() if " option " in line}
    assert [line.split(" ", 2)[2] for line in options.values()] == [
        '"Belgium"', '"France"', '"Japan"'
    ]  # fmt: skip
    assert all(line.startswith("*[") for line in options.values())  # first seen now
    assert "3 new (*)" in opened

    france = idx(opened, '"France"')
    text = await model.ok("click_index", index=france)
    assert f'now: [{france}] option "France" selected' in text  # hidden again, but still there
    assert await tab.evaluate("window.log") == ["opt-fr"]
    chosen = await model.inspect()
    assert entry(chosen, "combobox")[1] == f'[{combo}] combobox "Country France" collapsed'
    assert '"Belgium"' not in chosen  # closed again
    # Reopening shows the same option elements under the same numbers, France selected.
    await model.ok("click_index", index=combo)
    reopened = await model.inspect()
    assert entry(reopened, '"France"')[1] == f'[{france}] option "France" selected'


async def test_portal_dropdown_makes_new_options_on_each_opening_so_an_earlier_option_is_stale(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "dropdown.html")
    fruit = idx(snap, '"Fruit: Apple"')
    await tools.click_index(fruit, snap.doc_token)
    first = await tools.inspect_page()
    banana = idx(first, '"Banana"')
    result = await tools.click_index(banana, first.doc_token)
    assert result.ok
    assert result.element is None  # the option went away with the portal it was in
    assert await tab.evaluate("document.getElementById('fruit-value').textContent") == "Banana"

    await tools.click_index(fruit, snap.doc_token)
    second = await tools.inspect_page()
    assert idx(second, '"Fruit: Banana"') == fruit
    new_banana, line = entry(second.text, '"Banana"')
    assert new_banana != banana
    assert line.startswith("*[")
    # The old number names an element that no longer exists: refused, not sent to the new one.
    await stale(tools.click_index(banana, first.doc_token))
    assert await tab.evaluate("window.log") == ["fruit:Banana"]
    await tools.click_index(idx(second, '"Cherry"'), second.doc_token)
    assert await tab.evaluate("window.log") == ["fruit:Banana", "fruit:Cherry"]


# --- modals -------------------------------------------------------------------------------------


async def test_click_behind_a_modal_dialog_is_reported_as_landing_on_it_and_never_reaches_it(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("modal.html"))
    page = await model.inspect()
    buy = idx(page, '"Buy now"')
    await model.ok("click_index", index=idx(page, '"Open dialog"'))
    assert await tab.evaluate("document.getElementById('confirm').open") is True
    dialog = await model.inspect()
    assert re.search(r'^\*\[\d+\] button "Yes, continue" focused$', dialog, re.M)

    out = await model.call("click_index", index=buy)
    # Explicit, not silent: the tool says where the click went. The control was not clicked.
    assert "the click landed on dialog#confirm, which covers the element" in str(
        out.content_for_model
    )
    assert await tab.evaluate("document.getElementById('bought').textContent") == "0"
    assert await tab.evaluate("window.log.slice(-1)") == ["confirm"]  # the dialog got it

    await model.ok("click_index", index=idx(dialog, '"Close dialog"'))
    assert await tab.evaluate("document.getElementById('confirm').open") is False
    text = await model.ok("click_index", index=buy)
    assert "landed on" not in text
    assert await tab.evaluate("document.getElementById('bought').textContent") == "1"


async def test_click_behind_an_aria_modal_overlay_names_the_overlay_and_accepting_restores_clicks(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "modal.html")
    buy = idx(snap, '"Buy now"')
    await tools.click_index(idx(snap, '"Open overlay"'), snap.doc_token)
    point = await tools.resolve(buy, snap.doc_token)
    assert point.covered_by == "div#overlay"

    result = await tools.click_index(buy, snap.doc_token)
    assert result.note == "the click landed on div#overlay, which covers the element"
    assert "div#overlay" in result.to_text()
    assert await tab.evaluate("document.getElementById('bought').textContent") == "0"
    assert await tab.evaluate("window.log.slice(-1)") == ["overlay"]

    overlay = await tools.inspect_page()
    accept, line = entry(overlay.text, '"Accept cookies"')
    assert line.startswith("*[")
    assert (await tools.click_index(accept, overlay.doc_token)).ok
    assert await tab.evaluate("document.getElementById('overlay').hidden") is True
    assert '"Accept cookies"' not in (await tools.inspect_page()).text
    result = await tools.click_index(buy, snap.doc_token)
    assert result.note == ""
    assert (await tools.resolve(buy, snap.doc_token)).covered_by is None
    assert await tab.evaluate("document.getElementById('bought').textContent") == "1"


async def test_the_snapshot_tells_controls_behind_an_open_modal_dialog_from_clickable_ones(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "modal.html")
    await tools.click_index(idx(snap, '"Open dialog"'), snap.doc_token)
    text = (await tools.inspect_page()).text
    buy_lines = [ln for ln in text.splitlines() if '"Buy now"' in ln]
    assert not buy_lines or re.search(r"\b(inert|covered|blocked)\b", buy_lines[0]), text


async def test_a_modal_dialog_inside_a_web_component_makes_the_rest_of_the_page_inert(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "shadow-modal.html")
    assert " inert" not in snap.text  # closed: the component's slotted button is just hidden
    await tools.click_index(idx(snap, '"Open confirm"'), snap.doc_token)
    viewport = (await tools.inspect_page()).text
    assert '"Buy now"' not in viewport and '"Open confirm"' not in viewport, viewport
    everything = (await tools.inspect_page(scope="all")).text
    assert re.search(r'button "Buy now".* inert', everything), everything
    # Inside the dialog: its own button and the one the page slotted into it stay clickable.
    for name in ('"Inside cancel"', '"Slotted yes"'):
        (line,) = [ln for ln in everything.splitlines() if name in ln]
        assert " inert" not in line, line


# --- a virtualised list -------------------------------------------------------------------------


async def test_virtual_list_snapshot_lists_rendered_rows_and_after_scroll_new_rows_get_new_numbers(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("virtual.html"))
    top = await model.inspect()
    rendered = await tab.evaluate("document.querySelectorAll('.row').length")
    assert 15 <= rendered <= 30  # of 10,000 rows
    m = re.search(r"^# controls (\d+) \((\d+) button\); scope=viewport$", top, re.M)
    assert m
    assert int(m.group(1)) == rendered  # it counts what is in the DOM, not the 10,000
    assert re.search(r"pages above=0\.0 below=5\d\d\.\d", top)  # but the header says how long
    first = entries(top)
    assert first[1] == '[1] button "Row 1"'
    assert max(first) == rendered

    scrolled = await model.ok("scroll", direction="down", amount=2000)
    assert "now at y=2000" in scrolled
    # The page re-renders on its scroll event (next frame): wait for it as the model would.
    assert "condition met" in await model.ok("wait_for", text="Row 60", timeout=5)
    after = await model.inspect()
    rows = {int(r) for r in re.findall(r'button "Row (\d+)"', after)}
    assert 60 in rows
    assert 1 not in rows
    new = {n: line for n, line in entries(after).items() if line.startswith("*[")}
    assert new
    assert min(new) > max(first)  # new rows got numbers never used before
    assert all(re.search(r'button "Row (4[5-9]|[5-9]\d)"$', line) for line in new.values())

    # A row scrolled away (its element removed) is STALE_REF through the tools too.
    out = await model.call("click_index", index=idx(top, '"Row 2"'))
    assert out.error_code is ErrorCode.STALE_REF
    await model.ok("click_index", index=idx(after, '"Row 60"'))
    assert await tab.evaluate("window.log") == [60]


async def test_keyed_virtual_list_a_row_that_stays_keeps_its_number_a_row_scrolled_out_is_stale(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, top = await open_page(tab, pages, "virtual.html")
    row3, row15 = idx(top, '"Row 3"'), idx(top, '"Row 15"')
    await tab.evaluate("scrollBy(0, 400)")  # 10 rows: rows 1-7 leave the DOM, 15 stays
    after = await until(tools.inspect_page, lambda s: '"Row 29"' in s.text)
    assert after.doc_token == top.doc_token
    assert idx(after, '"Row 15"') == row15
    assert '"Row 3"' not in after.text
    # Contract: an index names one element. Row 3's element was removed: STALE_REF, no click.
    await stale(tools.click_index(row3, top.doc_token))
    assert await tab.evaluate("window.log") == []
    # Row 15's element is still there: the click acts on Row 15 and on nothing else.
    result = await tools.click_index(row15, top.doc_token)
    assert (result.element or "").startswith(f'[{row15}] button "Row 15"')
    assert await tab.evaluate("window.log") == [15]


async def test_recycling_virtual_list_an_old_number_never_clicks_the_other_row_its_node_now_shows(
    tab: CdpWsSession, pages: PageServer
) -> None:
    # The contract asked of the page model: an index acts on the row it named, or is refused.
    # Identity is per element, so a reused node IS the same element; when that element shows a
    # different row than the snapshot the model is using listed, acting on it would be acting on
    # a different row than the model chose.
    tools, top = await open_page(tab, pages, "virtual.html?mode=recycle")
    row3 = idx(top, '"Row 3"')
    await tab.evaluate("scrollBy(0, 2000)")
    await until(lambda: tab.evaluate("document.body.innerText"), lambda t: "Row 60" in t)
    await stale(tools.click_index(row3, top.doc_token))  # "now shows Row …, was Row 3"
    assert await tab.evaluate("window.log") == []


async def test_recycling_virtual_list_the_newest_snapshot_decides_what_a_number_names(
    tab: CdpWsSession, pages: PageServer
) -> None:
    # Issue 15: a fresh snapshot lists a recycled node as [n] "Row 60"; click_index n clicks
    # Row 60 — the row the model was just shown — and is not refused for what [n] showed before.
    tools, top = await open_page(tab, pages, "virtual.html?mode=recycle")
    await tab.evaluate("scrollBy(0, 2000)")
    after = await until(tools.inspect_page, lambda s: '"Row 60"' in s.text)
    row60 = idx(after, '"Row 60"')
    assert row60 in entries(top.text)  # an old number: the node was reused for Row 60
    assert not entries(after.text)[row60].startswith("*")
    result = await tools.click_index(row60, after.doc_token)
    assert result.ok, result
    assert await tab.evaluate("window.log") == [60]
    # The list re-renders again after that snapshot: the number is refused, not misused.
    await tab.evaluate("scrollBy(0, 2000)")
    await until(lambda: tab.evaluate("document.body.innerText"), lambda t: "Row 110" in t)
    await stale(tools.click_index(row60, after.doc_token))
    assert await tab.evaluate("window.log") == [60]


async def test_inspect_page_right_after_the_scroll_tool_sees_the_rows_the_scroll_handler_renders(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("virtual.html"))
    await model.inspect()
    misses = []
    for i in range(1, 31):
        y = 2000 * i
        await model.ok("scroll", direction="down", amount=2000)
        row = y // 40 + 5  # well inside the new viewport
        text = await model.inspect()
        if f'"Row {row}"' not in text:
            misses.append(row)
        await until(model.inspect, showing(f'"Row {row}"'))  # let it settle before the next
    assert misses == []


# --- a page that mutates itself while being read --------------------------------------------------

_LINE = re.compile(r"^(\*?\[\d+\] [a-z]+( .*)?|-- (above|in|below) viewport --|# .*)$")
_HEAD = (
    re.compile(r'^# page ".*" http://127\.0\.0\.1:\d+/mutating\.html(\?shuffle=1)?$'),
    re.compile(
        r"^# ready=complete scroll=\d+,\d+ viewport=\d+x\d+ pages above=\d+\.\d below=\d+\.\d "
        r"doc=[0-9a-f]{12}$"
    ),
    re.compile(r"^# controls \d+( \(.*\))?(, \d+ new \(\*\))?; scope=(viewport|all)"),
)


def well_formed(snap: Snapshot) -> dict[int, str]:
    lines = snap.text.splitlines()
    for pattern, line in zip(_HEAD, lines[:3], strict=True):
        assert pattern.match(line), f"bad header line {line!r}"
    for line in lines[3:]:
        assert _LINE.match(line), f"bad line {line!r} in\n{snap.text}"
    found = entries(snap.text)
    assert len(found) == snap.shown
    assert sum(1 for ln in found.values() if ln.startswith("*[")) <= snap.new
    return found


async def test_page_rewriting_itself_every_few_ms_never_breaks_the_snapshot_persistent_numbers_hold(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, first = await open_page(tab, pages, "mutating.html")
    ticks = await tab.evaluate("window.ticks")
    stable = {name: idx(first, f'"Stable {name}"') for name in "ABC"}
    seen: dict[int, str] = {}
    deadline = time.monotonic() + 3.0
    shots = 0
    # At least 40 shots, and on until the page has really churned under them (the snapshots can
    # be faster than its 2 ms timer, which Chromium clamps to 4 ms): bounded by the deadline.
    while time.monotonic() < deadline and (
        shots < 40 or await tab.evaluate("window.ticks") <= ticks + 20
    ):
        kwargs: dict[str, Any] = [{}, {"scope": "all"}, {"text_filter": "e"}][shots % 3]
        snap = await asyncio.wait_for(tools.inspect_page(**kwargs), 2.0)  # never hangs
        shots += 1
        assert snap.doc_token == first.doc_token
        found = well_formed(snap)
        for name, n in stable.items():
            assert found[n] == f'[{n}] button "Stable {name}"'
        for n, line in found.items():  # a number never moves to another element's name
            name = re.sub(r"^\*?\[\d+\] ", "", line).split(" focused")[0]
            name = re.sub(r"( disabled| value=\".*\")+$", "", name)
            assert seen.setdefault(n, name) == name, (n, seen[n], line)
    assert shots >= 20
    assert await tab.evaluate("window.ticks") > ticks + 20  # the page really was churning


async def test_a_persistent_control_on_a_mutating_page_is_clicked_by_its_number(
    model: Model, tab: CdpWsSession, pages: PageServer
) -> None:
    await tab.navigate(pages.url("mutating.html"))
    snap = await model.inspect()
    b = idx(snap, '"Stable B"')
    for _ in range(5):
        text = await model.ok("click_index", index=b)
        assert f'now: [{b}] button "Stable B"' in text
    assert await tab.evaluate("window.log") == ["b"] * 5
    later = await model.inspect()
    assert idx(later, '"Stable B"') == b


async def test_click_on_a_control_moving_between_resolve_and_input_is_never_a_silent_wrong_click(
    tab: CdpWsSession, pages: PageServer
) -> None:
    tools, snap = await open_page(tab, pages, "mutating.html?shuffle=1")
    a = idx(snap, '"Stable A"')
    silent_wrong = []
    for i in range(30):
        before = await tab.evaluate("window.log.length")
        result = await tools.click_index(a, snap.doc_token)
        got = await tab.evaluate(f"window.log.slice({before})")
        if got != ["a"] and result.ok and not result.note:
            silent_wrong.append((i, got))
    assert silent_wrong == []
