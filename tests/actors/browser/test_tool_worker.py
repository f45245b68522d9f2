"""The ToolWorker actor: runs, cancels, locks and the no-replay ledger, with small tools."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

from actors.browser.tool_worker import (
    CancelTool,
    ForgetSession,
    RunTicket,
    RunTool,
    SessionScratch,
    ToolResultView,
    ToolWorker,
)
from actors.runtime.actor import spawn
from actors.tools.catalog import ToolCatalog, ToolSettings
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolArgs, ToolContext, ToolOutput, ToolPolicy


class Nothing(ToolArgs):
    pass


def catalog(gate: asyncio.Event, ran: list[str]) -> ToolCatalog:
    reg = Registry()

    @reg.register("read", "a read", Nothing, page_changing=False)
    async def read(args: Nothing, ctx: ToolContext) -> ToolOutput:
        ran.append("read")
        return ToolOutput(content="ok", summary="read")

    @reg.register("click", "a page-changing tool that waits for the gate", Nothing,
                  page_changing=True)  # fmt: skip
    async def click(args: Nothing, ctx: ToolContext) -> ToolOutput:
        ran.append("click")
        await gate.wait()
        return ToolOutput(content="clicked", summary="clicked")

    return ToolCatalog(reg, ToolSettings)


def run(name: str, call_id: str, session: str = "s") -> RunTool:
    ticket = RunTicket(asyncio.get_running_loop().create_future())
    return RunTool(
        session_id=session,
        call_id=call_id,
        name=name,
        args={},
        policy=ToolPolicy(),
        browser=None,
        lock_link=1,
        ticket=ticket,
    )


async def result(msg: RunTool) -> ToolResultView:
    async with asyncio.timeout(2):
        return await msg.ticket.reply


async def test_a_run_answers_its_reply_and_one_slow_tool_does_not_block_another(
    tmp_path: Path,
) -> None:
    gate, ran = asyncio.Event(), []
    ref = await spawn(ToolWorker(catalog=catalog(gate, ran), home=tmp_path), name="tool-worker")
    slow, quick = run("click", "c1"), run("read", "r1", session="t")
    await ref.ask(slow, timeout=1)
    await ref.ask(quick, timeout=1)
    assert (await result(quick)).outcome == "ok"  # while the click still waits
    gate.set()
    assert (await result(slow)).summary == "clicked"
    await ref.stop()


async def test_a_cancelled_page_changing_run_is_reported_unknown_and_never_run_again(
    tmp_path: Path,
) -> None:
    gate, ran = asyncio.Event(), []
    scratch = SessionScratch()
    ref = await spawn(
        ToolWorker(catalog=catalog(gate, ran), home=tmp_path, scratch=scratch), name="w"
    )
    first = run("click", "c1")
    await ref.ask(first, timeout=1)
    await asyncio.sleep(0.01)
    await ref.tell(CancelTool(session_id="s", call_id="c1"))
    view = await result(first)
    assert (view.outcome, view.summary) == (
        "unknown",
        "interrupted: outcome unknown — not repeated",
    )
    again = run("click", "c1")  # the same call id, sent again
    await ref.ask(again, timeout=1)
    assert (await result(again)).outcome == "unknown"
    assert ran == ["click"]  # never a second run
    await ref.stop()


async def test_a_stopping_worker_reports_its_runs_interrupted(tmp_path: Path) -> None:
    gate, ran = asyncio.Event(), []
    ref = await spawn(ToolWorker(catalog=catalog(gate, ran), home=tmp_path), name="w")
    click = run("click", "c1")
    await ref.ask(click, timeout=1)
    await asyncio.sleep(0.01)
    await ref.stop()
    assert (await result(click)).outcome == "unknown"


async def test_a_run_abandoned_before_the_worker_took_it_never_starts(tmp_path: Path) -> None:
    gate, ran = asyncio.Event(), []
    ref = await spawn(ToolWorker(catalog=catalog(gate, ran), home=tmp_path), name="w")
    msg = run("read", "r1")
    msg.ticket.abandoned = True  # the caller gave up (its ask timed out)
    await ref.ask(msg, timeout=1)
    assert not msg.ticket.started and ran == []
    await ref.stop()


async def test_forget_session_drops_its_ledger(tmp_path: Path) -> None:
    gate, ran = asyncio.Event(), []
    gate.set()
    scratch = SessionScratch()
    ref = await spawn(
        ToolWorker(catalog=catalog(gate, ran), home=tmp_path, scratch=scratch), name="w"
    )
    click = run("click", "c1")
    await ref.ask(click, timeout=1)
    await result(click)
    assert "s" in scratch.ledgers
    await ref.ask(ForgetSession(session_id="s"), timeout=1)
    assert "s" not in scratch.ledgers
    await ref.stop()


def test_tab_locks_are_shared_while_held_and_not_kept_after(tmp_path: Path) -> None:
    worker = ToolWorker(catalog=catalog(asyncio.Event(), []), home=tmp_path)
    lock = worker.tab_lock(1, 7)
    assert worker.tab_lock(1, 7) is lock and worker.tab_lock(1, 8) is not lock
    del lock
    gc.collect()
    # A long-running daemon opens many tabs: their locks do not pile up.
    assert len(worker._locks) == 0


async def test_two_page_changing_runs_on_one_tab_never_interleave(tmp_path: Path) -> None:
    # Two turns acting on one tab wait for each other (the per-tab lock).
    gate, ran = asyncio.Event(), []

    class Tab:
        tab_id = 7
        tabs: Any = None

        def session(self) -> Any:
            return self

        def switch(self, tab: int) -> None:
            pass

        async def watch_dialogs(self) -> bool:
            return True

    ref = await spawn(ToolWorker(catalog=catalog(gate, ran), home=tmp_path), name="w")
    a, b = run("click", "a", session="s1"), run("click", "b", session="s2")
    a = RunTool(**{**{f: getattr(a, f) for f in a.__dataclass_fields__}, "browser": Tab()})
    b = RunTool(**{**{f: getattr(b, f) for f in b.__dataclass_fields__}, "browser": Tab()})
    await ref.ask(a, timeout=1)
    await ref.ask(b, timeout=1)
    await asyncio.sleep(0.05)
    assert ran == ["click"]  # the second waits for the first's lock
    gate.set()
    assert (await result(a)).outcome == (await result(b)).outcome == "ok"
    assert ran == ["click", "click"]
    await ref.stop()


@pytest.mark.parametrize("name", ["click"])
def test_the_catalog_says_what_changes_the_page(name: str) -> None:
    assert catalog(asyncio.Event(), []).is_page_changing(name)


async def test_a_page_that_does_not_answer_is_reported_at_once_and_the_tool_not_run(
    tmp_path: Path,
) -> None:
    # Page.enable found the page blocked (a dialog nobody can answer, or a busy page).
    gate, ran = asyncio.Event(), []
    gate.set()

    class Blocked:
        tab_id = 7
        tabs: Any = None

        def session(self) -> Any:
            return self

        def switch(self, tab: int) -> None:
            pass

        async def watch_dialogs(self) -> bool:
            return False

    ref = await spawn(ToolWorker(catalog=catalog(gate, ran), home=tmp_path), name="w")
    msg = run("click", "c1")
    msg = RunTool(
        **{**{f: getattr(msg, f) for f in msg.__dataclass_fields__}, "browser": Blocked()}
    )
    await ref.ask(msg, timeout=1)
    out = await result(msg)
    assert out.outcome == "error" and "DIALOG_OPEN" in out.content_text and ran == []
    assert "the page does not answer" in out.content_text
    await ref.stop()


async def test_an_action_that_starts_a_download_says_so_and_saves_the_finished_file(
    tmp_path: Path,
) -> None:
    # The connection's download table (protocol v2, capability downloads) behind the tabs seam.
    from actors.browser.downloads import DownloadRecord, DownloadTable
    from messages.wire_inbound import DownloadDone

    table = DownloadTable()
    written = tmp_path / "Downloads" / "orders.csv"
    written.parent.mkdir()
    written.write_bytes(b"id\n1\n")

    class Tabs:
        reports_downloads = True

        async def list(self) -> list[dict[str, Any]]:
            return [{"tabId": 7, "url": "http://site/"}]

        async def download_mark(self) -> int:
            return table.mark()

        async def downloads_since(self, after: int) -> list[DownloadRecord]:
            return table.since(after)

        async def wait_download(self, *_: Any) -> DownloadRecord | None:
            return None

        async def download_saved(self, download_id: int, path: str) -> None:
            table.saved(download_id, path)

    class Tab:
        tab_id = 7
        tabs: Any = Tabs()

        def session(self) -> Any:
            return self

        def switch(self, tab: int) -> None:
            pass

        async def watch_dialogs(self) -> bool:
            return True

    reg = Registry()

    @reg.register("click_index", "a click that exports a file", Nothing, page_changing=True)
    async def click_index(args: Nothing, ctx: ToolContext) -> ToolOutput:
        table.update(
            DownloadDone(download_id=3, url="blob:http://site/1", mime="text/csv",
                         state="complete", filename=str(written), bytes=5)
        )  # fmt: skip
        return ToolOutput(content="click [4]: ok", summary="clicked")

    ref = await spawn(ToolWorker(catalog=ToolCatalog(reg, ToolSettings), home=tmp_path), name="w")
    msg = run("click_index", "c1")
    msg = RunTool(**{**{f: getattr(msg, f) for f in msg.__dataclass_fields__}, "browser": Tab()})
    await ref.ask(msg, timeout=1)
    out = await result(msg)
    assert out.outcome == "ok", out
    assert "The page started a download:" in out.content_text
    assert "download 3: orders.csv" in out.content_text
    assert "saved in the files folder as downloads/orders.csv" in out.content_text
    assert (tmp_path / "data" / "files" / "downloads" / "orders.csv").read_bytes() == b"id\n1\n"
    await ref.stop()
