"""Files into pages, end to end: ``upload_index`` read back and ``drop_files`` on drop zones,
driven through our extension, the relay and the daemon in a real headless Chromium (issue 15,
item 6), with the extension speaking protocol 2 and forced to protocol 1.

A local client (``tool.call`` turns, :mod:`tests.e2e.tool_client`) is offered the two file tools by
``[mcp] host_tools``; the files come from the daemon's sandbox (``<home>/data/files``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Playwright

from actors.tools.files import FileSandbox
from tests.actors.tools.test_uploads import PAGE
from tests.e2e.browser import E2EBrowser, launched, wait_until
from tests.e2e.test_panels_at_work import Site, write_config
from tests.e2e.tool_client import ToolClient, client_on_protocol, index_of

pytestmark = pytest.mark.browser

CONFIG = """[daemon]
allow_local_clients = true
[tools]
approval_mode = "never"
[mcp]
host_tools = ["drop_files", "upload_index"]
"""


@pytest.fixture(scope="module")
def world(
    playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[E2EBrowser, Site]]:
    root = tmp_path_factory.mktemp("files")
    site = Site(root / "site", {"files.html": PAGE})
    write_config(root / "home", "http://127.0.0.1:9/v1", CONFIG)
    box = FileSandbox(root / "home")
    box.write("cv.txt", "curriculum vitae")
    box.write("notes.txt", "two")
    try:
        with launched(playwright, name="files", root=root) as browser:
            browser.wait_state("ready", timeout=20)
            yield browser, site
    finally:
        site.close()


@pytest.fixture(scope="module", params=[2, 1], ids=["v2", "v1"])
def client(world: tuple[E2EBrowser, Site], request: pytest.FixtureRequest) -> Iterator[ToolClient]:
    protocol = int(request.param)
    with client_on_protocol(world[0], protocol, f"e2e-files-v{protocol}") as tools:
        yield tools


def _log(client: ToolClient) -> str:
    return client.ok("evaluate_js", {"code": "document.getElementById('log').textContent"})


def test_files_reach_the_page_by_upload_and_by_drop(
    client: ToolClient, world: tuple[E2EBrowser, Site]
) -> None:
    _browser, site = world
    client.ok("new_tab", {"url": f"{site.url}/files.html"})
    snap = client.ok("inspect_page")
    out = client.ok("upload_index", {"index": index_of(snap, '"Widget"'), "paths": ["cv.txt"]})
    assert "the page received them and the input is empty again" in out
    out = client.ok(
        "drop_files", {"index": index_of(snap, '"Upload area"'), "paths": ["cv.txt", "notes.txt"]}
    )
    assert "dropped 2 file(s); the page took them" in out
    out = client.ok("drop_files", {"text": "drop receipts", "paths": ["notes.txt"]})
    assert "dropped 1 file(s)" in out
    refused = client.call(
        "drop_files", {"index": index_of(snap, '"Not a zone"'), "paths": ["cv.txt"]}
    )
    assert not refused.ok and "does not take dropped files" in refused.text

    def read() -> str | None:
        text = _log(client)
        return text if "bare dropped" in text else None

    log = wait_until(
        read,
        timeout=5,
        what="the page to read the dropped files",
    )
    assert "widget got cv.txt" in log
    assert "zone dropped cv.txt=curriculum vitae" in log and "zone dropped notes.txt=two" in log
    assert "bare dropped notes.txt=two" in log
    client.ok("close_tab", {})
