"""Saving the downloads a page started: the guarded copy into the files sandbox, the
``wait_for_download`` tool and the note an action's result gets — with a fake browser
connection (a real :class:`DownloadTable` behind the tools' ``DownloadSource`` seam)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from actors.browser.action_downloads import before_action, note_after_action
from actors.browser.downloads import DownloadRecord, DownloadTable
from actors.tools.download_copy import copy_download, safe_name
from actors.tools.download_tools import FROM_KEY, register_download_tools
from actors.tools.files import FileSandbox
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolContext, ToolError
from messages.wire_inbound import DownloadDone, DownloadStarted


class FakeSource:
    """The tools' DownloadSource: a browser connection's download table, fed by the test."""

    def __init__(self, *, reports: bool = True) -> None:
        self.reports_downloads = reports
        self.table = DownloadTable()

    def start(self, download_id: int, url: str = "blob:http://site/x") -> None:
        self.table.update(DownloadStarted(download_id=download_id, url=url, mime="text/csv"))

    def finish(
        self, download_id: int, path: Path | str, size: int, state: str = "complete"
    ) -> None:
        self.table.update(
            DownloadDone.model_validate(
                {
                    "downloadId": download_id,
                    "url": "http://site/export",
                    "state": state,
                    "filename": str(path),
                    "bytes": size,
                }
            )
        )

    async def download_mark(self) -> int | None:
        return self.table.mark()

    async def downloads_since(self, after: int) -> list[DownloadRecord]:
        return self.table.since(after)

    async def wait_download(
        self, download_id: int | None, after: int, timeout: float
    ) -> DownloadRecord | None:
        future: asyncio.Future[DownloadRecord | None] = asyncio.get_running_loop().create_future()

        def settle(record: DownloadRecord | None) -> None:
            if not future.done():
                future.set_result(record)

        self.table.wait(download_id, after, settle)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return None
        finally:
            self.table.forget_waiter(settle)

    async def download_saved(self, download_id: int, path: str) -> None:
        self.table.saved(download_id, path)


@pytest.fixture
def box(tmp_path: Path) -> FileSandbox:
    return FileSandbox(tmp_path / "home", max_file_bytes=1000)


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    folder = tmp_path / "Downloads"
    folder.mkdir()
    return folder


def fetched(downloads: Path, name: str, data: bytes) -> Path:
    path = downloads / name
    path.write_bytes(data)
    return path


# --- the guarded copy -----------------------------------------------------------------------


def test_a_download_is_copied_into_the_downloads_folder_and_never_over_another(
    box: FileSandbox, downloads: Path
) -> None:
    src = fetched(downloads, "report.pdf", b"%PDF one")
    first = copy_download(box, str(src), expected_bytes=8, name="report.pdf")
    assert box.relative(first) == "downloads/report.pdf" and first.read_bytes() == b"%PDF one"
    src.write_bytes(b"%PDF two")
    second = copy_download(box, str(src), expected_bytes=8, name="report (1).pdf")
    assert box.relative(second) == "downloads/report-2.pdf"
    assert (first.read_bytes(), second.read_bytes()) == (b"%PDF one", b"%PDF two")
    assert oct(first.stat().st_mode & 0o777) == "0o600"
    assert not [p for p in first.parent.iterdir() if p.name.startswith(".tmp-")]


def test_a_wanted_name_stays_inside_the_sandbox(box: FileSandbox, downloads: Path) -> None:
    src = fetched(downloads, "a.csv", b"x,y\n")
    saved = copy_download(box, str(src), expected_bytes=4, name="a.csv", wanted="reports/m.csv")
    assert box.relative(saved) == "reports/m.csv"
    with pytest.raises(ToolError, match=r"'\.\.'"):
        copy_download(box, str(src), expected_bytes=4, name="a.csv", wanted="../out/m.csv")


def test_a_symlink_where_the_download_should_be_is_not_followed(
    box: FileSandbox, downloads: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy")
    (downloads / "report.pdf").symlink_to(secret)
    with pytest.raises(ToolError, match="cannot be read safely"):
        copy_download(box, str(downloads / "report.pdf"), expected_bytes=0, name="report.pdf")
    assert not (box.root / "downloads").exists() or not any((box.root / "downloads").iterdir())


def test_only_a_regular_file_of_the_reported_size_under_the_cap_is_copied(
    box: FileSandbox, downloads: Path
) -> None:
    os.mkfifo(downloads / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        copy_download(box, str(downloads / "pipe"), expected_bytes=0, name="pipe")
    src = fetched(downloads, "a.bin", b"12345")
    with pytest.raises(ToolError, match="browser reported 9"):
        copy_download(box, str(src), expected_bytes=9, name="a.bin")
    big = fetched(downloads, "big.bin", b"x" * 1001)
    with pytest.raises(ToolError, match="over the files folder's limit"):
        copy_download(box, str(big), expected_bytes=1001, name="big.bin")
    with pytest.raises(ToolError, match="did not say where"):
        copy_download(box, "report.pdf", expected_bytes=0, name="report.pdf")
    with pytest.raises(ToolError, match="gone"):
        copy_download(box, str(downloads / "nope"), expected_bytes=0, name="nope")


@pytest.mark.parametrize(
    ("name", "safe"),
    [("report (1).pdf", "report.pdf"), ("Q3 report.pdf", "Q3_report.pdf"),
     ("../../etc/passwd", "passwd"), ("..\\..\\boot.ini", "boot.ini"), (".bashrc", "bashrc"),
     ("", "download"), ("...", "download")],
)  # fmt: skip
def test_a_file_name_becomes_one_plain_component(name: str, safe: str) -> None:
    assert safe_name(name) == safe
    assert len(safe_name("x" * 500 + ".csv")) <= 120 and safe_name("x" * 500 + ".csv").endswith(
        ".csv"
    )


# --- wait_for_download ----------------------------------------------------------------------


def run_tool(
    args: dict[str, Any], source: Any, box: FileSandbox, state: dict[str, Any] | None = None
) -> Any:
    reg = Registry()
    register_download_tools(reg)
    ctx = ToolContext(session_id="s", tabs=source, files=box, state=state or {})
    return reg.run("wait_for_download", args, ctx, call_id="c1")


async def test_wait_for_download_waits_for_the_download_and_saves_it(
    box: FileSandbox, downloads: Path
) -> None:
    source = FakeSource()
    state = {FROM_KEY: 0}
    source.start(1)
    src = fetched(downloads, "orders.csv", b"id\n1\n")
    waiting = asyncio.create_task(run_tool({"timeout_s": 5}, source, box, state))
    await asyncio.sleep(0.01)
    source.finish(1, src, 5)
    outcome = await waiting
    assert outcome.outcome == "ok", outcome
    assert "as downloads/orders.csv" in outcome.content_for_model
    assert (box.root / "downloads" / "orders.csv").read_bytes() == b"id\n1\n"
    # Asked again by its number: the same copy, not a second one.
    again = await run_tool({"download_id": 1}, source, box, state)
    assert "as downloads/orders.csv" in again.content_for_model
    assert sorted(p.name for p in (box.root / "downloads").iterdir()) == ["orders.csv"]


async def test_wait_for_download_ends_at_its_deadline_naming_what_still_runs(
    box: FileSandbox,
) -> None:
    source = FakeSource()
    source.start(4)
    outcome = await run_tool({"timeout_s": 0.5}, source, box, {FROM_KEY: 0})
    assert (outcome.outcome, outcome.error_code.value) == ("error", "WAIT_TIMEOUT")
    assert (
        "download 4" in outcome.content_for_model
        and "still downloading" in outcome.content_for_model
    )


async def test_a_failed_download_is_reported_not_saved(box: FileSandbox) -> None:
    source = FakeSource()
    source.start(2)
    source.finish(2, "", 0, state="interrupted")
    outcome = await run_tool({"download_id": 2}, source, box, {FROM_KEY: 0})
    assert outcome.outcome == "error" and "failed" in outcome.content_for_model


async def test_only_downloads_started_after_the_sessions_first_action_are_reachable(
    box: FileSandbox, downloads: Path
) -> None:
    source = FakeSource()
    source.start(1)  # the user's own, before the agent acted
    source.finish(1, fetched(downloads, "mine.txt", b"private"), 7)
    outcome = await run_tool({"download_id": 1}, source, box, {FROM_KEY: source.table.mark()})
    assert outcome.outcome == "error" and "not one this session's actions started" in (
        outcome.content_for_model
    )
    nothing = await run_tool({"timeout_s": 0.5}, source, box, {FROM_KEY: source.table.mark()})
    assert nothing.error_code.value == "WAIT_TIMEOUT"
    assert not (box.root / "downloads").exists()


async def test_a_connection_that_reports_no_downloads_says_to_use_download_file(
    box: FileSandbox,
) -> None:
    outcome = await run_tool({}, FakeSource(reports=False), box)
    assert (outcome.outcome, outcome.error_code.value) == ("error", "NO_CAPABILITY")
    assert "download_file" in outcome.content_for_model


# --- what an action's result says -----------------------------------------------------------


async def test_an_action_says_which_downloads_it_started_and_saves_the_finished_ones(
    box: FileSandbox, downloads: Path
) -> None:
    source = FakeSource()
    source.start(1)  # before the session's first action: not the agent's
    state: dict[str, Any] = {}
    assert await before_action(source, state)
    source.start(2)
    source.finish(2, fetched(downloads, "orders.csv", b"a,b\n"), 4)
    source.start(3, "http://site/export")
    note = await note_after_action(source, state, box)
    assert note.startswith("The page started a download:"), note
    assert (
        "download 2: orders.csv" in note
        and "saved in the files folder as downloads/orders.csv" in note
    )
    assert "download 3" in note and "wait_for_download with download_id 3" in note
    assert "download 1" not in note
    assert await note_after_action(source, state, box) == ""  # said once
    assert await before_action(source, state)
    source.finish(3, fetched(downloads, "r.pdf", b"%PDF"), 4)
    later = await note_after_action(source, state, box)  # the one that was running has ended
    assert later.startswith("Downloads:") and "download 3: r.pdf" in later, later
    assert "saved in the files folder as downloads/r.pdf" in later
    assert await note_after_action(source, state, box) == ""


async def test_an_action_on_a_connection_without_downloads_adds_nothing(box: FileSandbox) -> None:
    state: dict[str, Any] = {}
    assert not await before_action(FakeSource(reports=False), state)
    assert await note_after_action(FakeSource(reports=False), state, box) == ""
    assert state == {}


async def test_a_page_action_reads_the_download_mark_only_where_downloads_are_reported() -> None:
    from actors.tools.download_tools import download_mark_of

    source = FakeSource()
    assert await download_mark_of(source) == 0
    source.start(1)
    assert await download_mark_of(source) == source.table.mark() > 0
    assert await download_mark_of(FakeSource(reports=False)) == -1
    assert await download_mark_of(object()) == -1  # a session without the seam

    class Broken(FakeSource):
        async def download_mark(self) -> int | None:
            raise ConnectionError("gone")

    assert await download_mark_of(Broken()) == -1
