"""Downloads a page starts itself, end to end (issue 15, item 6): a real headless Chromium with
our extension (protocol 2, capability ``downloads``), the relay and the daemon.

A local page makes a file with script (a ``blob:`` link) and posts a form that the server
answers with an attachment — downloads no URL can fetch again. The click's result says the
download started and, once Chrome has written it, where it was saved in the files folder;
``wait_for_download`` waits for one and saves it; the copy has the bytes the page made. With the
extension forced to protocol 1 the same click says nothing of downloads and the tool says the
connection cannot report them (the v1 wire carries no ``download.*``).

Neither click changes the page: a download link is no navigation, and a form submission that
turns into a download is told apart from one that loads a page by the download the browser
reports meanwhile, so the snapshot's element numbers stay valid and the click answers at once.

Chromium saves downloads where Playwright told it to (``Browser.setDownloadBehavior``; Playwright
itself would name them by GUID): a folder of the test's own.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from playwright.sync_api import Playwright

from tests.e2e.browser import E2EBrowser, launched, wait_until
from tests.e2e.test_panels_at_work import write_config
from tests.e2e.tool_client import ToolClient, index_of

pytestmark = pytest.mark.browser

BLOB_TEXT = "id,total\n1,9.50\n2,12.00\n"
EXPORT_PAGE = f"""<!doctype html><title>Export</title><h1>Reports</h1>
<button id="csv">Export CSV</button>
<form method="post" action="/export"><input name="month" value="2026-11" aria-label="Month">
<button>Download report</button></form>
<script>
document.getElementById('csv').onclick = () => {{
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([{BLOB_TEXT!r}], {{ type: 'text/csv' }}));
  a.download = 'orders.csv';
  document.body.append(a); a.click(); a.remove();
}};
</script>"""


def report_bytes(month: str) -> bytes:
    return f"%PDF-1.4 report for {month}\n".encode() + bytes(range(256))


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = EXPORT_PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        body = report_bytes(form.get("month", ["?"])[0])
        self.send_response(200)
        self.send_header("Content-Type", "application/pdf")
        self.send_header("Content-Disposition", 'attachment; filename="report.pdf"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class World:
    browser: E2EBrowser
    url: str
    downloads: Path
    files: Path


@pytest.fixture(scope="module")
def world(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("downloads")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    write_config(
        root / "home",
        "http://127.0.0.1:9/v1",
        '[daemon]\nallow_local_clients = true\n[tools]\napproval_mode = "never"\n'
        '[mcp]\nhost_tools = ["wait_for_download", "read_file", "list_files"]\n',
    )
    downloads = root / "browser-downloads"
    downloads.mkdir()
    try:
        with launched(playwright, name="downloads", root=root) as browser:
            page = browser.context.new_page()
            cdp = browser.context.new_cdp_session(page)
            cdp.send(
                "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
            )
            browser.wait_state("ready", timeout=20)
            yield World(
                browser,
                f"http://127.0.0.1:{server.server_address[1]}/export.html",
                downloads,
                root / "home" / "data" / "files",
            )
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def tool_client(world: World, protocol: int) -> Iterator[ToolClient]:
    browser = world.browser
    browser.worker.evaluate("(n) => globalThis.browyTest.useProtocol(n)", protocol)
    wait_until(
        lambda: (
            browser.state().get("state") == "ready"
            and browser.state().get("detail", "").endswith(f"protocol {protocol}")
        ),
        timeout=20,
        what=f"the extension ready on protocol {protocol}",
    )
    client = ToolClient(browser.home, name=f"e2e-downloads-v{protocol}")
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close()


def saved_path(text: str) -> str:
    """The sandbox path a result says a download was saved as."""
    marker = " as downloads/"
    assert marker in text, text
    return "downloads/" + text.split(marker, 1)[1].split(maxsplit=1)[0]


def test_a_blob_download_and_a_form_post_download_are_saved_in_the_files_folder(
    world: World,
) -> None:
    with tool_client(world, 2) as client:
        client.ok("new_tab", {"url": world.url})
        snap = client.ok("inspect_page")

        # A blob: link the page's script makes and clicks: the click's result names it, and
        # saves it once Chrome has written it (else wait_for_download waits and saves it).
        clicked = client.call("click_index", {"index": index_of(snap, "Export CSV")})
        assert clicked.ok and "started a download" in clicked.text, clicked
        assert "navigat" not in clicked.text and clicked.seconds < 3, clicked  # no page change
        blob_rel = saved_from(client, clicked.text)
        assert blob_rel.startswith("downloads/orders"), blob_rel
        assert (world.files / blob_rel).read_text(encoding="utf-8") == BLOB_TEXT
        assert (world.downloads / "orders.csv").read_text(encoding="utf-8") == BLOB_TEXT

        # A form POST answered with an attachment: no URL can fetch it again. Its submission
        # is a navigation until the answer turns out to be a file: the click says so at once.
        clicked = client.call("click_index", {"index": index_of(snap, "Download report")})
        assert clicked.ok and "it started a download; the page stays" in clicked.text, clicked
        assert "old indices are stale" not in clicked.text and clicked.seconds < 4, clicked
        report_rel = saved_from(client, clicked.text)
        assert report_rel.startswith("downloads/report"), report_rel
        assert (world.files / report_rel).read_bytes() == report_bytes("2026-11")

        # Asked for by its number, a saved download gives the same copy; a second export of
        # the same name is saved beside it, never over it.
        number = int(clicked.text.split("\n- download ", 1)[1].split(":", 1)[0])
        again = client.ok("wait_for_download", {"download_id": number, "timeout_s": 5})
        assert saved_path(again) == report_rel and "application/pdf" in again, again
        clicked = client.call("click_index", {"index": index_of(snap, "Download report")})
        assert clicked.ok, clicked
        second = saved_from(client, clicked.text)  # the same snapshot's numbers still hold
        assert second != report_rel and second.startswith("downloads/report"), second
        assert (world.files / second).read_bytes() == report_bytes("2026-11")
        assert (world.files / report_rel).read_bytes() == report_bytes("2026-11")


def saved_from(client: ToolClient, clicked: str) -> str:
    """Where a click's download was saved: said by the click, or by wait_for_download."""
    if "saved in the files folder as" in clicked:
        return saved_path(clicked)
    waited = client.ok("wait_for_download", {"timeout_s": 15})
    return saved_path(waited)


def test_a_v1_connection_reports_no_downloads(world: World) -> None:
    with tool_client(world, 1) as client:
        client.ok("new_tab", {"url": world.url})
        snap = client.ok("inspect_page")
        clicked = client.ok("click_index", {"index": index_of(snap, "Export CSV")})
        assert "download" not in clicked.lower(), clicked
        refused = client.call("wait_for_download", {"timeout_s": 1})
        assert (refused.outcome, refused.code) == ("error", "NO_CAPABILITY"), refused
        assert "download_file" in refused.text
