"""The downloads a browser connection reports (protocol.md section 4, capability ``downloads``):
the pure table, the CDPProxy that keeps it, the tools' side of it (:class:`ProxyTabs`) and the
Connection that lets only a v2 browser with the capability feed it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from actors.agent.connection import SERVER_CAPABILITIES, Connection, Inbound
from actors.browser.cdp_proxy import CDPProxy
from actors.browser.downloads import DownloadRecord, DownloadTable
from actors.browser.proxy_messages import ConnectionLost, DownloadArrived, Subscriptions
from actors.browser.tabs import BrowserCalls, ProxyTabs
from actors.link.link_writer import ConnectionInfo
from actors.runtime.live_ref import LiveRef
from messages.wire_inbound import DownloadDone, DownloadStarted
from messages.wire_outbound import HelloAck
from supervisors.policy import RestartIntensity
from supervisors.supervisor import ChildSpec, Supervisor


def started(download_id: int, url: str = "blob:http://site/1") -> DownloadStarted:
    return DownloadStarted(download_id=download_id, url=url, final_url=url, mime="text/csv")


def done(
    download_id: int, state: str = "complete", *, path: str = "/dl/report.csv", size: int = 10
) -> DownloadDone:
    error = "NETWORK_FAILED" if state != "complete" else None
    return DownloadDone.model_validate(
        {"downloadId": download_id, "url": "http://site/export", "state": state,
         "filename": path, "bytes": size, "error": error}
    )  # fmt: skip


# --- the table -------------------------------------------------------------------------------


def test_a_download_is_numbered_when_it_starts_and_completed_by_its_done() -> None:
    table = DownloadTable()
    assert table.mark() == 0
    first = table.update(started(7))
    assert (first.state, first.finished) == ("in_progress", False)
    assert table.mark() == first.seq > 0
    record = table.update(done(7))
    assert (record.seq, record.state, record.filename, record.bytes) == (
        first.seq, "complete", "/dl/report.csv", 10,
    )  # fmt: skip
    assert record.mime == "text/csv"  # what only the start said is kept
    assert record.name == "report.csv"
    assert table.since(0) == [record] and table.since(record.seq) == []


def test_a_done_whose_start_was_lost_is_numbered_and_a_late_start_does_not_undo_it() -> None:
    table = DownloadTable()
    record = table.update(done(3))
    assert record.seq == table.mark() > 0 and record.state == "complete"
    assert table.update(started(3)).state == "complete"
    assert table.mark() == record.seq


def test_a_mark_kept_from_a_connection_that_went_still_sees_the_next_ones_downloads() -> None:
    old, new = DownloadTable(), DownloadTable()  # a relay reconnect: a new connection
    for n in range(1, 4):
        old.update(started(n))
    kept = old.mark()
    assert [r.download_id for r in new.since(kept)] == []
    new.update(started(1))
    assert [r.download_id for r in new.since(kept)] == [1]


def test_the_table_keeps_only_the_newest_downloads() -> None:
    table = DownloadTable(keep=3)
    for n in range(1, 6):
        table.update(started(n))
    assert [r.download_id for r in table.since(0)] == [3, 4, 5]
    assert table.get(1) is None


def test_a_waiter_for_a_download_hears_of_it_once_it_finishes() -> None:
    table = DownloadTable()
    table.update(started(1))
    got: list[DownloadRecord | None] = []
    table.wait(1, 0, got.append)
    table.update(started(2))
    table.update(done(2))
    assert got == []
    table.update(done(1, "interrupted"))
    assert [r.state if r else None for r in got] == ["interrupted"]
    assert got[0] is not None and got[0].error == "NETWORK_FAILED"


def test_a_waiter_without_a_number_takes_the_newest_unsaved_one_or_the_next_to_finish() -> None:
    table = DownloadTable()
    table.update(done(1))
    got: list[DownloadRecord | None] = []
    table.wait(None, 0, got.append)  # finished and not saved: at once
    assert [r.download_id for r in got if r] == [1]
    table.saved(1, "downloads/report.csv")
    assert table.pick(None, 0) is None
    assert table.pick(1, 0) is not None and table.get(1).saved == "downloads/report.csv"  # type: ignore[union-attr]
    got.clear()
    table.wait(None, table.mark(), got.append)  # nothing unsaved: the next one to finish
    table.update(started(2))
    assert got == []
    table.update(done(2))
    assert [r.download_id for r in got if r] == [2]


def test_a_waiter_without_a_number_follows_the_unsaved_download_already_running() -> None:
    table = DownloadTable()
    table.update(started(1))
    got: list[DownloadRecord | None] = []
    table.wait(None, 0, got.append)
    table.update(started(2))
    table.update(done(2))  # another one finishing first does not answer it
    assert got == []
    table.update(done(1))
    assert [r.download_id for r in got if r] == [1]


def test_dropped_waiters_hear_none_and_forgotten_ones_nothing() -> None:
    table = DownloadTable()
    heard: list[Any] = []
    forgotten: list[Any] = []

    def forget_me(record: DownloadRecord | None) -> None:
        forgotten.append(record)

    table.wait(9, 0, heard.append)
    table.wait(9, 0, forget_me)
    table.forget_waiter(forget_me)
    table.drop_waiters()
    assert heard == [None] and forgotten == []


def test_a_record_describes_itself_without_repeating_a_blob_url() -> None:
    table = DownloadTable()
    table.update(started(4, "blob:http://site/0f1e-long-id"))
    line = table.update(done(4, path="/dl/orders.csv", size=24)).describe()
    assert line.startswith("download 4: orders.csv (text/csv, 24 bytes, complete)"), line
    assert "0f1e" not in line and "blob: URL made by the page" in line


# --- through the CDPProxy, as the tools reach it ---------------------------------------------


class FakeWriter:
    def __init__(self, protocol: int = 2) -> None:
        self.info = ConnectionInfo(link_id=1, role="relay", origin="o", protocol=protocol)
        self.sent: list[BaseModel] = []

    async def send(self, msg: BaseModel) -> bool:
        self.sent.append(msg)
        return True


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[LiveRef[Any], ProxyTabs]]:
    writer = FakeWriter()
    subs = Subscriptions()
    sup = Supervisor(
        "link-1",
        [
            ChildSpec(
                "cdp-proxy-1",
                start=lambda: CDPProxy(info=writer.info, writer=writer, subscriptions=subs),  # type: ignore[arg-type]
            )
        ],
        intensity=RestartIntensity(10, 1.0),
    )
    await sup.start()
    ref: LiveRef[Any] = LiveRef("cdp-proxy-1").bind(sup)
    tabs = ProxyTabs(BrowserCalls(ref), "s-1", None, reports_downloads=True)
    yield ref, tabs
    await sup.stop()


async def test_the_tools_read_and_wait_for_downloads_through_the_proxy(
    proxy: tuple[LiveRef[Any], ProxyTabs],
) -> None:
    ref, tabs = proxy
    assert await tabs.download_mark() == 0
    await ref.ask(DownloadArrived(download=started(5)), timeout=2)
    mark = await tabs.download_mark()
    assert mark is not None and mark > 0
    assert [r.download_id for r in await tabs.downloads_since(0)] == [5]
    waiting = asyncio.create_task(tabs.wait_download(None, 0, timeout=5))
    await asyncio.sleep(0)
    await ref.ask(DownloadArrived(download=done(5)), timeout=2)
    record = await waiting
    assert record is not None and record.state == "complete"
    await tabs.download_saved(5, "downloads/report.csv")
    again = await tabs.wait_download(5, 0, timeout=1)
    assert again is not None and again.saved == "downloads/report.csv"


async def test_a_wait_ends_with_none_at_its_deadline_or_when_the_connection_goes(
    proxy: tuple[LiveRef[Any], ProxyTabs],
) -> None:
    ref, tabs = proxy
    assert await tabs.wait_download(None, 0, timeout=0.05) is None
    waiting = asyncio.create_task(tabs.wait_download(None, 0, timeout=5))
    await asyncio.sleep(0.01)
    await ref.ask(ConnectionLost(), timeout=2)
    assert await asyncio.wait_for(waiting, 2) is None
    assert await tabs.wait_download(None, 0, timeout=5) is None  # lost: at once


async def test_a_connection_that_reports_no_downloads_has_no_mark() -> None:
    tabs = ProxyTabs(BrowserCalls(LiveRef("nobody")), "s-1", None, reports_downloads=False)
    assert await tabs.download_mark() is None


# --- the Connection: only a v2 browser with the capability feeds the table --------------------


class FakeProxy:
    def __init__(self) -> None:
        self.told: list[Any] = []

    async def tell(self, msg: Any, **_: Any) -> None:
        self.told.append(msg)


def connection(protocol: int, capabilities: frozenset[str]) -> tuple[Connection, FakeProxy]:
    writer = FakeWriter(protocol)
    writer.info.capabilities = capabilities
    proxy = FakeProxy()
    conn = Connection(info=writer.info, writer=writer, proxy=proxy, server_version="t")  # type: ignore[arg-type]
    return conn, proxy


def frame(msg: BaseModel) -> Inbound:
    return Inbound(payload=orjson.dumps(msg.model_dump(mode="json", by_alias=True)))


async def test_a_v2_browser_with_the_capability_feeds_its_downloads_to_the_proxy() -> None:
    conn, proxy = connection(2, frozenset({"downloads"}))
    await conn.handle(frame(started(1)))
    await conn.handle(frame(done(1)))
    assert [type(m) for m in proxy.told] == [DownloadArrived, DownloadArrived]
    assert "downloads" in SERVER_CAPABILITIES


@pytest.mark.parametrize(("protocol", "caps"), [(1, frozenset()), (2, frozenset({"approvals"}))])
async def test_download_frames_of_a_v1_or_a_non_offering_browser_are_ignored(
    protocol: int, caps: frozenset[str]
) -> None:
    conn, proxy = connection(protocol, caps)
    await conn.handle(frame(done(1)))
    assert proxy.told == []


async def test_the_hello_ack_offers_downloads_only_on_v2() -> None:
    for protocol, offered in ((2, True), (1, False)):
        conn, _ = connection(1, frozenset())
        writer: Any = conn._writer
        hello = {"type": "hello", "client": "extension", "protocol": protocol,
                 "capabilities": ["downloads"]}  # fmt: skip
        await conn.handle(Inbound(payload=orjson.dumps(hello)))
        (ack,) = [m for m in writer.sent if isinstance(m, HelloAck)]
        assert ("downloads" in (ack.capabilities or [])) is offered
        assert conn.info.reports_downloads is offered
