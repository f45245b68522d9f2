"""Accessibility, listeners, downloads, replays, web_fetch, host code and await_user: real headless
Chromium and a tiny local HTTP server, run through the registry."""

from __future__ import annotations

import asyncio
import http.server
import json
import re
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.tools.catalog import build_registry
from actors.tools.files import FileSandbox
from actors.tools.page import PageTools
from actors.tools.registry import Registry
from actors.tools.shared import CAPTURED_HEADER_CHARS, CAPTURED_HEADERS, captured_headers
from actors.tools.tool_def import ToolContext, ToolPolicy
from actors.tools.transfer import fetch
from messages.errors import ErrorCode
from tests.helpers.cdp_ws import CdpWsSession, WsTab
from tests.helpers.chromium import Chromium, chromium_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs /usr/lib/chromium/chromium"),
]

PAGE = """<!doctype html><title>Shop</title>
<h1>Welcome back</h1>
<nav aria-label="Main"><a href="/cart">Cart</a></nav>
<label>Search <input id=q type=search></label>
<label>Password <input type=password value="pa55word-xyz"></label>
<button id=go onclick="document.title = 'went'">Go</button>
<button id=quiet>Quiet</button>
<ul id=list></ul>
<script>
  for (let i = 0; i < 100; i++) {
    list.appendChild(document.createElement('li')).textContent = 'Item ' + i;
  }
  document.getElementById('quiet')
    .addEventListener('keydown', function onKey(e) {}, {passive: true});
</script>
"""


class Site(http.server.BaseHTTPRequestHandler):
    """``/login`` sets a session cookie; ``/report`` needs it; ``/api`` echoes what it got."""

    hits: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(
        self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        cookie = self.headers.get("Cookie", "")
        if self.path == "/login":
            self._send(200, PAGE.encode(), "text/html", {"Set-Cookie": "sid=abc123; Path=/"})
        elif self.path == "/report":
            if "sid=abc123" not in cookie:
                self._send(403, b"forbidden", "text/plain")
            else:
                self._send(
                    200, b"a,b\n1,2\n", "text/csv",
                    {"Content-Disposition": 'attachment; filename="report.csv"'},
                )  # fmt: skip
        elif self.path == "/old-report":
            self._send(302, b"", "text/plain", {"Location": "/report"})
        elif self.path == "/big":
            self._send(200, b"x" * 5000, "application/octet-stream")
        elif self.path == "/article":
            html = (
                "<html><head><title>News</title><style>p{color:red}</style></head><body>"
                "<script>var secret = 1;</script><h1>Headline</h1><p>First &amp; second.</p>"
                "</body></html>"
            )
            self._send(200, html.encode(), "text/html; charset=utf-8")
        else:
            self._send(404, b"not found", "text/plain")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        if self.path == "/api/moved":  # 307: same method and body, at another origin
            there = f"http://localhost:{self.server.server_address[1]}/api/order"
            self._send(307, b"", "text/plain", {"Location": there})
            return
        Site.hits.append(
            {
                "path": self.path,
                "body": body,
                "cookie": self.headers.get("Cookie"),
                "authorization": self.headers.get("Authorization"),
                "csrf": self.headers.get("X-CSRF-Token"),
                "host": self.headers.get("Host"),
            }
        )
        answer = {"n": len(Site.hits), "got": body, "type": self.headers.get("Content-Type")}
        self._send(200, json.dumps(answer).encode(), "application/json")


class Pinned:
    def __init__(self, ws: CdpWsSession) -> None:
        self.tools = PageTools(ws)
        self.tab_id: int | None = 7
        self.tokens: dict[int, str] = {}

    def page(self) -> PageTools:
        return self.tools

    def token(self) -> str:
        return self.tokens[7]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def reg(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    return build_registry(tmp_path_factory.mktemp("home"))


@pytest.fixture
async def ws(browser: Chromium, server: str) -> AsyncIterator[CdpWsSession]:
    session = await CdpWsSession.open(browser.http_base)
    try:
        await session.navigate(f"{server}/login")
        yield session
    finally:
        await session.close()


@pytest.fixture
def ctx(ws: CdpWsSession, tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="s", cdp=WsTab(ws, 7), files=FileSandbox(tmp_path), state={"browser": Pinned(ws)}
    )


def text(out: Any) -> str:
    return str(out.content_for_model)


# --- reading the page ---------------------------------------------------------------------------


async def test_accessibility_snapshot_lists_roles_and_names_and_masks_secrets(
    reg: Registry, ctx: ToolContext
) -> None:
    out = await reg.run("accessibility_snapshot", {}, ctx)
    assert out.ok, out.content_for_model
    body = text(out)
    assert 'RootWebArea "Shop"' in body
    assert 'heading "Welcome back" level=1' in body
    assert 'navigation "Main"' in body
    assert 'link "Cart"' in body
    assert 'searchbox "Search"' in body
    assert 'button "Go"' in body
    assert "pa55word" not in body
    assert "InlineTextBox" not in body


async def test_accessibility_snapshot_keeps_to_its_size_budget(
    reg: Registry, ctx: ToolContext
) -> None:
    out = await reg.run("accessibility_snapshot", {"max_chars": 500}, ctx)
    assert out.ok
    body = text(out)
    assert "more nodes left out" in body
    assert len(body) < 800


async def test_event_listeners_are_found_for_an_onclick_button(
    reg: Registry, ctx: ToolContext
) -> None:
    out = await reg.run("get_event_listeners", {"selector": "#go"}, ctx)
    assert out.ok, out.content_for_model
    assert out.data == {"types": ["click"]}
    assert "document.title = 'went'" in text(out)
    quiet = await reg.run("get_event_listeners", {"selector": "#quiet"}, ctx)
    assert quiet.data == {"types": ["keydown"]}
    assert "keydown (passive)" in text(quiet)
    assert "function onKey" in text(quiet)


async def test_event_listeners_by_index_from_the_snapshot(reg: Registry, ctx: ToolContext) -> None:
    pinned = ctx.state["browser"]  # a stand-in for TurnBrowser: take its snapshot by hand
    shot = await pinned.tools.inspect_page()
    pinned.tokens[7] = shot.doc_token
    m = re.search(r"\[(\d+)\] button \"Go\"", shot.text)
    assert m, shot.text
    out = await reg.run("get_event_listeners", {"index": int(m.group(1))}, ctx)
    assert out.ok, out.content_for_model
    assert out.data == {"types": ["click"]}


async def test_event_listeners_need_exactly_one_target(reg: Registry, ctx: ToolContext) -> None:
    out = await reg.run("get_event_listeners", {}, ctx)
    assert out.outcome == "error"
    assert "exactly one" in text(out)


# --- downloads and replays ----------------------------------------------------------------------


async def test_download_file_saves_with_the_browsers_cookies(
    reg: Registry, ctx: ToolContext, server: str
) -> None:
    out = await reg.run("download_file", {"url": "/old-report"}, ctx)  # relative, redirected
    assert out.ok, out.content_for_model
    assert out.data is not None
    assert out.data["file"] == "downloads/report.csv"
    assert isinstance(ctx.files, FileSandbox)
    assert (ctx.files.root / "downloads/report.csv").read_bytes() == b"a,b\n1,2\n"


async def test_download_file_sends_cookies_only_to_the_site_that_set_them(
    reg: Registry, ctx: ToolContext, server: str
) -> None:
    other_host = server.replace("127.0.0.1", "localhost")
    out = await reg.run("download_file", {"url": f"{other_host}/report"}, ctx)
    assert out.outcome == "error"
    assert "answered 403" in text(out)


async def test_download_file_is_size_capped_and_http_only(
    reg: Registry, ctx: ToolContext, server: str
) -> None:
    big = await reg.run("download_file", {"url": f"{server}/big", "max_bytes": 1000}, ctx)
    assert big.outcome == "error"
    assert "larger than the limit of 1000 bytes" in text(big)
    local = await reg.run("download_file", {"url": "file:///etc/passwd"}, ctx)
    assert (local.outcome, local.error_code) == ("error", ErrorCode.NOT_ALLOWED_URL)
    assert isinstance(ctx.files, FileSandbox)
    assert not (ctx.files.root / "downloads").exists()


async def test_replay_request_resends_a_captured_post_with_cookies(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    Site.hits.clear()
    listed = await reg.run("get_network_requests", {}, ctx)  # capture starts here
    assert listed.ok
    await ws.evaluate(
        "fetch('/api/order', {method: 'POST', headers: {'Content-Type': 'application/json'}, "
        "body: JSON.stringify({item: 7})}).then(r => r.text())"
    )
    out = await reg.run("replay_request", {"url_contains": "/api/order"}, ctx)
    assert out.ok, out.content_for_model
    assert out.data is not None
    assert out.data["status"] == 200
    assert len(Site.hits) == 2
    assert Site.hits[1]["body"] == '{"item":7}'
    assert Site.hits[1]["cookie"] == "sid=abc123"
    assert '"type": "application/json"' in text(out)


async def test_replay_request_sends_the_captured_headers(
    reg: Registry, ctx: ToolContext, ws: CdpWsSession
) -> None:
    Site.hits.clear()
    await reg.run("get_network_requests", {}, ctx)
    headers = "{'Authorization': 'Bearer tok-1', 'X-CSRF-Token': 'csrf-9'}"
    await ws.evaluate(f"fetch('/api/order', {{method: 'POST', headers: {headers}, body: 'a=1'}})")
    listed = await reg.run("get_network_requests", {}, ctx)
    assert "tok-1" not in text(listed) and "csrf-9" not in text(listed)  # host-side only
    same = await reg.run("replay_request", {"url_contains": "/api/order"}, ctx)
    assert same.ok, same.content_for_model
    replayed = Site.hits[-1]
    assert (replayed["authorization"], replayed["csrf"]) == ("Bearer tok-1", "csrf-9")
    assert replayed["body"] == "a=1" and replayed["cookie"] == "sid=abc123"
    override = await reg.run(
        "replay_request",
        {"url_contains": "/api/order", "headers": {"x-csrf-token": "mine"}, "body": "c=3"},
        ctx,
    )
    assert override.ok and Site.hits[-1]["csrf"] == "mine" and Site.hits[-1]["body"] == "c=3"


async def test_a_redirect_to_another_origin_carries_no_credentials(server: str) -> None:
    Site.hits.clear()
    secret = {"Authorization": "Bearer tok-1", "X-CSRF-Token": "csrf-9", "Accept": "*/*"}
    res = await fetch(
        server + "/api/moved", method="POST", headers=secret, body=b"b=2", max_bytes=10_000
    )
    assert res.status == 200 and res.url.startswith("http://localhost:")
    (landed,) = Site.hits
    assert landed["body"] == "b=2"  # a 307 keeps the method and body
    assert (landed["authorization"], landed["csrf"]) == (None, None)  # as browsers do
    same = await fetch(server + "/api/order", method="POST", headers=secret, max_bytes=10_000)
    assert same.status == 200 and Site.hits[-1]["authorization"] == "Bearer tok-1"


def test_captured_headers_keep_what_a_replay_needs_and_never_cookies() -> None:
    raw = {":authority": "x", "Cookie": "sid=1", "Host": "h", "Authorization": "Bearer t"}
    raw |= {f"X-{i}": "v" * 5000 for i in range(60)}
    kept = captured_headers(raw)
    assert "Cookie" not in kept and "Host" not in kept and ":authority" not in kept
    assert kept["Authorization"] == "Bearer t"
    assert len(kept) == CAPTURED_HEADERS
    assert all(len(v) <= CAPTURED_HEADER_CHARS for v in kept.values())
    assert captured_headers(None) == {}


async def test_replay_request_lists_the_captured_ids_when_none_matches(
    reg: Registry, ctx: ToolContext
) -> None:
    assert "get_network_requests first" in text(await reg.run("replay_request", {}, ctx))
    await reg.run("get_network_requests", {}, ctx)
    out = await reg.run("replay_request", {"url_contains": "/nothing-like-it"}, ctx)
    assert out.outcome == "error"
    assert "recent ones (id method url)" in text(out)


def test_page_changing_tools_are_marked_and_reads_are_retryable(reg: Registry) -> None:
    changing = ["fill_form", "submit_form", "upload_index", "upload_file", "drop_files",
                "hover_index", "download_file", "replay_request"]  # fmt: skip
    reads = ["extract_form", "accessibility_snapshot", "get_event_listeners", "web_fetch",
             "await_user"]  # fmt: skip
    for name in changing:
        tool = reg.get(name)
        assert tool is not None
        assert tool.page_changing, name
        assert not tool.retryable, name
    for name in reads:
        tool = reg.get(name)
        assert tool is not None
        assert not tool.page_changing, name
        assert tool.retryable, name
    for name in ("bash", "run_script"):
        tool = reg.get(name)
        assert tool is not None
        assert tool.host_code
        assert not tool.retryable


# --- host tools -----------------------------------------------------------------------------------


def offered(reg: Registry, policy: ToolPolicy) -> set[str]:
    return {d["function"]["name"] for d in reg.definitions(policy)}


async def test_web_fetch_is_not_offered_unless_enabled(
    reg: Registry, ctx: ToolContext, server: str
) -> None:
    assert "web_fetch" not in offered(reg, ToolPolicy())
    refused = await reg.run("web_fetch", {"url": f"{server}/article"}, ctx)
    assert (refused.outcome, refused.error_code) == ("error", ErrorCode.TOOL_DISABLED)
    ctx.policy = ToolPolicy(enabled_host_tools=frozenset({"web_fetch"}))
    assert "web_fetch" in offered(reg, ctx.policy)
    out = await reg.run("web_fetch", {"url": f"{server}/article"}, ctx)
    assert out.ok, out.content_for_model
    body = text(out)
    assert "200 http://127.0.0.1" in body
    assert '"News"' in body
    assert "Headline\nFirst & second." in body
    assert "secret" not in body
    assert "color:red" not in body


async def test_host_code_is_refused_by_default(reg: Registry, ctx: ToolContext) -> None:
    assert isinstance(ctx.files, FileSandbox)
    marker = ctx.files.root / "ran.txt"
    for policy in (ToolPolicy(), ToolPolicy(enabled_host_tools=frozenset({"bash"}))):
        ctx.policy = policy
        assert not {"bash", "run_script"} & offered(reg, policy)
        bash = await reg.run("bash", {"command": f"touch {marker}"}, ctx)
        script = await reg.run("run_script", {"code": f"open({str(marker)!r}, 'w')"}, ctx)
        assert bash.error_code == script.error_code == ErrorCode.TOOL_DISABLED
    assert "does not allow" in text(bash)
    assert not marker.exists()


async def test_host_code_runs_in_the_sandbox_when_the_config_allows_it(
    reg: Registry, ctx: ToolContext
) -> None:
    assert isinstance(ctx.files, FileSandbox)
    # Each a host-tool switch of its own, and host code allowed besides (from a terminal).
    ctx.policy = ToolPolicy(
        enabled_host_tools=frozenset({"bash", "run_script"}), allow_host_code=True
    )
    assert {"bash", "run_script"} <= offered(reg, ctx.policy)
    out = await reg.run("bash", {"command": "echo hi > out.txt; cat out.txt; pwd; exit 3"}, ctx)
    assert out.ok, out.content_for_model
    assert out.data == {"exit_code": 3, "timed_out": False}
    assert f"hi\n{ctx.files.root.resolve()}" in text(out)
    script = await reg.run(
        "run_script", {"code": "import os; print(sorted(os.listdir('.')), os.environ['HOME'])"}, ctx
    )
    assert script.ok
    assert f"['out.txt'] {ctx.files.root}" in text(script)


async def test_host_code_is_killed_at_its_timeout_and_its_output_capped(
    reg: Registry, ctx: ToolContext
) -> None:
    ctx.policy = ToolPolicy(enabled_host_tools=frozenset({"run_script"}), allow_host_code=True)
    slow = await reg.run("run_script", {"code": "sleep 20", "language": "sh", "timeout": 0.5}, ctx)
    assert slow.ok
    assert slow.data is not None
    assert slow.data["timed_out"] is True
    assert "killed after" in text(slow)
    loud = await reg.run("run_script", {"code": "print('x' * 200000)"}, ctx)
    assert "output cut at the size limit" in text(loud)
    assert len(text(loud)) < 60_000


async def test_await_user_tells_the_model_to_hand_over_without_blocking(
    reg: Registry, ctx: ToolContext
) -> None:
    out = await asyncio.wait_for(
        reg.run("await_user", {"message": "log in to the bank"}, ctx), timeout=1
    )
    assert out.ok
    assert "The user must now: log in to the bank." in text(out)
    assert "tell the user exactly this" in text(out)
