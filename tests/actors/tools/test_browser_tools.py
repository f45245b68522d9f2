"""Browser tools in a real headless Chromium, run through the registry like the ToolWorker does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from actors.tools.catalog import default_registry
from actors.tools.files import FileSandbox
from actors.tools.keys import key_events
from actors.tools.registry import Registry
from actors.tools.tool_def import ApprovalRequestInfo, ToolContext, ToolError
from messages.errors import ErrorCode
from tests.helpers.cdp_ws import CdpWsSession, WsTab
from tests.helpers.chromium import Chromium, PageServer, chromium_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageServer]:
    root = tmp_path_factory.mktemp("site")
    (root / "slow.html").write_text(
        "<title>Slow</title><p>start</p>"
        "<img src='/missing.png'><script>console.log('boot', 42); console.error('bad thing');"
        "</script>"
    )
    (root / "page.html").write_text(
        "<title>Page</title><h1 id=h>Hello world</h1><input id=q><button id=b "
        "onclick=\"document.title='clicked'\">Go</button>"
    )
    with PageServer(root) as srv:
        yield srv


@pytest.fixture
async def ctx(browser: Chromium, tmp_path: Path) -> AsyncIterator[ToolContext]:
    ws = await CdpWsSession.open(browser.http_base)
    try:
        yield ToolContext(session_id="s", cdp=WsTab(ws, None), files=FileSandbox(tmp_path))
    finally:
        await ws.close()


@pytest.fixture(scope="module")
def reg() -> Registry:
    return default_registry()


async def test_navigate_waits_for_the_page_to_load(
    reg: Registry, ctx: ToolContext, site: PageServer
) -> None:
    out = await reg.run("navigate", {"url": site.url("page.html")}, ctx)
    assert out.outcome == "ok", out.content_for_model
    assert out.data is not None
    assert out.data["readyState"] == "complete"
    assert out.data["title"] == "Page"
    info = await reg.run("get_page_info", {}, ctx)
    assert info.data is not None
    assert info.data["url"] == site.url("page.html")


async def test_navigate_refuses_browser_internal_urls(reg: Registry, ctx: ToolContext) -> None:
    out = await reg.run("navigate", {"url": "chrome://settings"}, ctx)
    assert (out.outcome, out.error_code) == ("error", ErrorCode.NOT_ALLOWED_URL)


async def test_evaluate_js_returns_the_last_expression_or_a_return_value(
    reg: Registry, ctx: ToolContext, site: PageServer
) -> None:
    await reg.run("navigate", {"url": site.url("page.html")}, ctx)
    expr = await reg.run("evaluate_js", {"code": "1 + 2; document.title"}, ctx)
    assert expr.content_for_model == '"Page"'
    ret = await reg.run(
        "evaluate_js", {"code": "const x = await Promise.resolve(20); return {x: x + 1}"}, ctx
    )
    assert ret.content_for_model == '{"x": 21}'
    big = await reg.run("evaluate_js", {"code": "'a'.repeat(50000)"}, ctx)
    assert "truncated" in str(big.content_for_model)
    err = await reg.run("evaluate_js", {"code": "throw new Error('boom')"}, ctx)
    assert err.outcome == "error"
    assert "boom" in str(err.content_for_model)


async def test_wait_for_times_out_with_wait_timeout_and_succeeds_when_present(
    reg: Registry, ctx: ToolContext, site: PageServer
) -> None:
    await reg.run("navigate", {"url": site.url("page.html")}, ctx)
    ok = await reg.run("wait_for", {"selector": "#h", "text": "Hello"}, ctx)
    assert ok.outcome == "ok"
    out = await reg.run("wait_for", {"selector": "#never", "timeout": "0.3"}, ctx)
    assert (out.outcome, out.error_code) == ("error", ErrorCode.WAIT_TIMEOUT)


async def test_console_logs_are_kept_in_a_ring_buffer(
    reg: Registry, ctx: ToolContext, site: PageServer
) -> None:
    await reg.run("navigate", {"url": site.url("slow.html")}, ctx)
    first = await reg.run("get_console_logs", {}, ctx)
    # Runtime.enable replays what the page logged before capture started.
    assert "[log] boot 42" in str(first.content_for_model)
    assert "[error] bad thing" in str(first.content_for_model)
    await reg.run("evaluate_js", {"code": "console.warn('later')"}, ctx)
    errors = await reg.run("get_console_logs", {"level": "warning"}, ctx)
    assert "later" in str(errors.content_for_model)
    assert "boot" not in str(errors.content_for_model)


async def test_screenshot_returns_an_image_part_and_saves_a_file(
    reg: Registry, ctx: ToolContext, site: PageServer
) -> None:
    await reg.run("navigate", {"url": site.url("page.html")}, ctx)
    out = await reg.run("screenshot", {}, ctx)
    assert out.outcome == "ok", out.content_for_model
    parts = out.content_for_model
    assert isinstance(parts, list)
    assert parts[1]["type"] == "image_url"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert out.data is not None
    assert isinstance(ctx.files, FileSandbox)
    assert (ctx.files.root / out.data["file"]).stat().st_size > 100


async def test_cookies_can_be_set_and_read(
    reg: Registry, ctx: ToolContext, site: PageServer
) -> None:
    await reg.run("navigate", {"url": site.url("page.html")}, ctx)
    assert (await reg.run("set_cookie", {"name": "flavour", "value": "oat"}, ctx)).ok
    assert (
        await reg.run("set_cookie", {"name": "sid", "value": "s3cr3t", "http_only": True}, ctx)
    ).ok
    # A cookie read asks every time: with nobody to ask, it is refused.
    refused = await reg.run("get_cookies", {}, ctx)
    assert refused.error_code is ErrorCode.APPROVAL_DENIED
    asked: list[str] = []

    async def approve(info: ApprovalRequestInfo) -> bool:
        asked.append(info.tool)
        return not info.remember  # a secret read is never to be remembered

    allowed = replace(ctx, approve=approve)
    out = await reg.run("get_cookies", {}, allowed)
    assert asked == ["get_cookies"]
    assert "flavour=oat" in str(out.content_for_model)
    assert "sid=(httpOnly: value not shown)" in str(out.content_for_model)
    assert "s3cr3t" not in str(out.content_for_model)  # httpOnly: never shown to the model
    seen = await reg.run("evaluate_js", {"code": "document.cookie"}, ctx)
    assert "flavour=oat" in str(seen.content_for_model)


async def test_fill_click_and_keys_act_like_a_user(
    reg: Registry, ctx: ToolContext, site: PageServer
) -> None:
    await reg.run("navigate", {"url": site.url("page.html")}, ctx)
    assert (await reg.run("fill_input", {"selector": "#q", "value": "abc"}, ctx)).ok
    assert (await reg.run("press_keys", {"keys": ["Backspace", "Shift+d"]}, ctx)).ok
    value = await reg.run("evaluate_js", {"code": "document.querySelector('#q').value"}, ctx)
    assert value.content_for_model == '"abD"'
    assert (await reg.run("click_element", {"selector": "#b"}, ctx)).ok
    title = await reg.run("evaluate_js", {"code": "document.title"}, ctx)
    assert title.content_for_model == '"clicked"'


def test_key_combos_map_to_cdp_key_events() -> None:
    down, up = key_events("Ctrl+A")
    assert (down["type"], down["modifiers"], down["commands"]) == ("rawKeyDown", 2, ["selectAll"])
    assert up["type"] == "keyUp"
    enter, _ = key_events("Enter")
    assert (enter["type"], enter["text"], enter["windowsVirtualKeyCode"]) == ("keyDown", "\r", 13)
    with pytest.raises(ToolError):
        key_events("Hyper+x")


def test_a_chord_with_a_capital_letter_sends_the_key_a_user_s_keyboard_would() -> None:
    ctrl_k, _ = key_events("Ctrl+K")
    assert (ctrl_k["key"], ctrl_k["code"], ctrl_k["modifiers"]) == ("k", "KeyK", 2)
    assert key_events("Ctrl+Shift+k")[0]["key"] == "K"
    assert key_events("K")[0]["key"] == "K"  # typing a capital, no chord
