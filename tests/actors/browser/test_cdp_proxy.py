"""CdpProxy and its correlator, against a fake extension peer that collects what the host sends."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from pydantic import BaseModel

from actors.browser.cdp_proxy import (
    BrowserCallError,
    CallState,
    CallTable,
    CdpProxy,
    TabCdpSession,
    outcome_of,
)
from messages.errors import ErrorCode
from messages.wire_inbound import CdpEvent, ToolResult
from messages.wire_outbound import CdpCancel, CdpSend, ControlRelease, TabClose, TabNew


class FakeExtension:
    """Collects host -> extension models; answers them through ``proxy.on_tool_result``."""

    def __init__(self, *, connected: bool = True) -> None:
        self.sent: list[BaseModel] = []
        self.connected = connected
        self.arrived = asyncio.Event()

    async def send(self, msg: BaseModel) -> bool:
        if not self.connected:
            return False
        self.sent.append(msg)
        self.arrived.set()
        return True

    async def wait_until(self, pred: Any) -> None:
        """Wait (at most 2 s) until ``pred()`` holds; re-checked each time something is sent."""
        async with asyncio.timeout(2):
            while not pred():
                self.arrived.clear()
                await self.arrived.wait()

    async def next_call(self) -> Any:
        await self.wait_until(lambda: self.sent)
        return self.sent[-1]

    def of(self, kind: type[BaseModel]) -> list[Any]:
        return [m for m in self.sent if isinstance(m, kind)]


def answer(
    call: Any, *, ok: bool = True, result: Any = None, error: str | None = None
) -> ToolResult:
    return ToolResult(
        session_id=call.session_id, call_id=call.call_id, ok=ok, result=result, error=error
    )


def make(protocol: int = 2) -> tuple[CdpProxy, FakeExtension]:
    ext = FakeExtension()
    return CdpProxy(ext.send, protocol=protocol), ext


# --- the pure correlator ---------------------------------------------------------------------


def test_a_call_settles_once_and_a_second_answer_is_dropped() -> None:
    table = CallTable()
    call = table.open(session_id="s", tab_id=1, op="X", page_changing=False, owner_id=None)
    assert table.answer(call.call_id) is call
    assert call.state is CallState.ANSWERED
    assert table.answer(call.call_id) is None
    assert table.pending == {}


def test_an_answer_for_an_unknown_call_id_is_dropped() -> None:
    assert CallTable().answer("nope") is None


def test_an_answer_after_a_timeout_is_dropped() -> None:
    table = CallTable()
    call = table.open(session_id="s", tab_id=1, op="X", page_changing=True, owner_id="o")
    assert table.finish(call.call_id, CallState.TIMED_OUT) is call
    assert table.answer(call.call_id) is None
    assert call.state is CallState.TIMED_OUT


def test_an_answer_from_another_session_does_not_settle_the_call() -> None:
    table = CallTable()
    call = table.open(session_id="s", tab_id=1, op="X", page_changing=False, owner_id=None)
    assert table.answer(call.call_id, "other") is None
    assert call.state is CallState.PENDING


def test_call_ids_are_unique() -> None:
    table = CallTable()
    ids = {
        table.open(session_id="s", tab_id=None, op="X", page_changing=False, owner_id=None).call_id
        for _ in range(100)
    }
    assert len(ids) == 100


# --- the asyncio shell -----------------------------------------------------------------------


async def test_cdp_returns_the_raw_cdp_result_and_v2_carries_the_owner() -> None:
    proxy, ext = make(2)
    task = asyncio.create_task(
        proxy.cdp(
            "s",
            7,
            "Runtime.evaluate",
            {"expression": "1"},
            page_changing=False,
            timeout=2,
            owner_id="turn-1",
        )
    )
    call = await ext.next_call()
    assert isinstance(call, CdpSend)
    assert (call.tab_id, call.method, call.control_owner_id) == (7, "Runtime.evaluate", "turn-1")
    proxy.on_tool_result(answer(call, result={"tabId": 7, "result": {"result": {"value": 1}}}))
    assert await task == {"result": {"value": 1}}


async def test_v1_calls_carry_no_control_owner() -> None:
    proxy, ext = make(1)
    task = asyncio.create_task(
        proxy.cdp("s", 7, "Page.enable", None, page_changing=False, timeout=2, owner_id="t")
    )
    call = await ext.next_call()
    assert call.control_owner_id is None
    proxy.on_tool_result(answer(call, result={"tabId": 7, "result": {}}))
    assert await task == {}


async def test_an_error_answer_raises_with_chrome_text_and_not_allowed_url_code() -> None:
    proxy, ext = make()
    task = asyncio.create_task(
        proxy.cdp("s", 1, "Page.navigate", {}, page_changing=True, timeout=2, owner_id=None)
    )
    proxy.on_tool_result(
        answer(await ext.next_call(), ok=False, error="NOT_ALLOWED_URL: chrome://x")
    )
    with pytest.raises(BrowserCallError) as info:
        await task
    assert info.value.code is ErrorCode.NOT_ALLOWED_URL
    assert info.value.outcome == "error"  # a definite answer came

    task = asyncio.create_task(
        proxy.cdp("s", 1, "DOM.x", {}, page_changing=False, timeout=2, owner_id=None)
    )
    ext.sent.clear()
    proxy.on_tool_result(answer(await ext.next_call(), ok=False, error="'DOM.x' wasn't found"))
    with pytest.raises(BrowserCallError) as info:
        await task
    assert info.value.code is ErrorCode.INTERNAL
    assert "wasn't found" in info.value.message


async def test_a_read_that_times_out_raises_request_timeout_with_outcome_error() -> None:
    proxy, _ = make()
    with pytest.raises(BrowserCallError) as info:
        await proxy.cdp(
            "s", 1, "Page.getFrameTree", None, page_changing=False, timeout=0.05, owner_id=None
        )
    assert info.value.code is ErrorCode.REQUEST_TIMEOUT
    assert info.value.outcome == "error"


async def test_a_page_changing_timeout_has_outcome_unknown_and_v2_sends_cdp_cancel() -> None:
    proxy, ext = make(2)
    with pytest.raises(BrowserCallError) as info:
        await proxy.cdp(
            "s", 1, "Input.dispatchKeyEvent", {}, page_changing=True, timeout=0.05, owner_id="o"
        )
    assert info.value.code is ErrorCode.REQUEST_TIMEOUT
    assert outcome_of(info.value) == "unknown"
    sent = ext.of(CdpSend)[0]
    await ext.wait_until(lambda: bool(ext.of(CdpCancel)))
    cancel = ext.of(CdpCancel)[0]
    assert (cancel.session_id, cancel.call_id) == ("s", sent.call_id)
    # A late answer is dropped without error.
    proxy.on_tool_result(answer(sent, result={"tabId": 1, "result": {}}))
    assert proxy.table.pending == {}


async def test_a_v1_timeout_sends_no_cdp_cancel() -> None:
    proxy, ext = make(1)
    with pytest.raises(BrowserCallError):
        await proxy.cdp("s", 1, "X", None, page_changing=False, timeout=0.02, owner_id=None)
    await asyncio.sleep(0)
    assert ext.of(CdpCancel) == []


async def test_cancelling_the_caller_sends_cdp_cancel_and_a_later_answer_is_ignored() -> None:
    proxy, ext = make(2)
    task = asyncio.create_task(
        proxy.cdp(
            "s",
            1,
            "Page.navigate",
            {"url": "https://a"},
            page_changing=True,
            timeout=5,
            owner_id="o",
        )
    )
    call = await ext.next_call()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await ext.wait_until(lambda: bool(ext.of(CdpCancel)))
    assert ext.of(CdpCancel)[0].call_id == call.call_id
    proxy.on_tool_result(answer(call, result={"tabId": 1, "result": {}}))  # dropped
    assert proxy.table.pending == {}


async def test_connection_lost_fails_every_pending_call_with_connection_lost() -> None:
    proxy, ext = make(2)
    read = asyncio.create_task(
        proxy.cdp("s", 1, "Page.getFrameTree", None, page_changing=False, timeout=5, owner_id=None)
    )
    write = asyncio.create_task(
        proxy.cdp("s", 1, "Input.insertText", {}, page_changing=True, timeout=5, owner_id=None)
    )
    await ext.wait_until(lambda: len(ext.sent) == 2)
    proxy.connection_lost()
    results = await asyncio.gather(read, write, return_exceptions=True)
    assert all(isinstance(r, BrowserCallError) for r in results)
    assert [r.code for r in results] == [ErrorCode.CONNECTION_LOST] * 2  # type: ignore[union-attr]
    assert [outcome_of(r) for r in results] == ["error", "unknown"]  # type: ignore[arg-type]
    # Later calls fail at once; nothing is sent on a dead connection.
    with pytest.raises(BrowserCallError) as info:
        await proxy.cdp("s", 1, "X", None, page_changing=False, timeout=5, owner_id=None)
    assert info.value.code is ErrorCode.CONNECTION_LOST
    assert len(ext.sent) == 2


async def test_a_send_that_cannot_be_written_fails_with_connection_lost_outcome_error() -> None:
    ext = FakeExtension(connected=False)
    proxy = CdpProxy(ext.send, protocol=2)
    with pytest.raises(BrowserCallError) as info:
        await proxy.cdp("s", 1, "X", None, page_changing=True, timeout=1, owner_id=None)
    assert info.value.code is ErrorCode.CONNECTION_LOST
    assert info.value.outcome == "error"  # never sent, so it definitely did not happen


async def test_connection_lost_during_a_send_leaves_no_unretrieved_exception() -> None:
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    sending = asyncio.Event()
    release = asyncio.Event()

    async def slow_send(_msg: BaseModel) -> bool:
        sending.set()
        await release.wait()
        return False  # the link went away while the frame was being written

    proxy = CdpProxy(slow_send, protocol=2)
    call = asyncio.create_task(proxy.tab("s", "tab.getActive", {}, timeout=5, owner_id=None))
    await sending.wait()
    proxy.connection_lost()  # fails the call's future before the send returns
    release.set()
    codes = []
    try:
        await call
    except BrowserCallError as exc:
        codes.append(exc.code)  # the traceback (and the future it holds) goes with the block
    assert codes == [ErrorCode.CONNECTION_LOST]
    del call
    gc.collect()
    await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert unhandled == []  # was: "Future exception was never retrieved" (seen in a chaos run)


async def test_v1_tab_close_becomes_cdp_send_page_close() -> None:
    proxy, ext = make(1)
    task = asyncio.create_task(proxy.tab("s", "tab.close", {"tabId": 9}, timeout=2, owner_id="o"))
    call = await ext.next_call()
    assert isinstance(call, CdpSend)
    assert (call.method, call.tab_id) == ("Page.close", 9)
    proxy.on_tool_result(answer(call, result={"tabId": 9, "result": {}}))
    assert await task is None


async def test_v2_tab_close_is_a_tab_close_message() -> None:
    proxy, ext = make(2)
    task = asyncio.create_task(proxy.tab("s", "tab.close", {"tabId": 9}, timeout=2, owner_id="o"))
    call = await ext.next_call()
    assert isinstance(call, TabClose)
    assert call.control_owner_id == "o"
    proxy.on_tool_result(answer(call))
    await task


async def test_tab_new_passes_the_url_and_returns_the_tab_info() -> None:
    proxy, ext = make(1)
    task = asyncio.create_task(
        proxy.tab(
            "s", "tab.new", {"url": "https://a.test/", "active": True}, timeout=2, owner_id=None
        )
    )
    call = await ext.next_call()
    assert isinstance(call, TabNew)
    assert call.url == "https://a.test/"
    info = {"tabId": 3, "url": "https://a.test/", "title": "", "active": True}
    proxy.on_tool_result(answer(call, result=info))
    assert await task == info


async def test_control_release_is_sent_only_in_v2() -> None:
    proxy1, ext1 = make(1)
    await proxy1.release("turn-1")
    assert ext1.sent == []
    proxy2, ext2 = make(2)
    await proxy2.release("turn-1")
    assert ext2.sent == [ControlRelease(owner_id="turn-1")]


async def test_events_reach_the_subscribers_of_their_session_and_tab() -> None:
    proxy, _ = make()
    got: list[str] = []
    unsubscribe = proxy.subscribe("s", 1, lambda ev: got.append(ev.method))
    proxy.on_cdp_event(CdpEvent(session_id="s", tab_id=1, method="A", params={}))
    proxy.on_cdp_event(CdpEvent(session_id="s", tab_id=2, method="B", params={}))
    proxy.on_cdp_event(CdpEvent(session_id="t", tab_id=1, method="C", params={}))
    unsubscribe()
    proxy.on_cdp_event(CdpEvent(session_id="s", tab_id=1, method="D", params={}))
    assert got == ["A"]


async def test_tab_cdp_session_sends_through_the_proxy_bound_to_its_tab() -> None:
    proxy, ext = make(2)
    session = TabCdpSession(proxy, "s", 4, "o")
    task = asyncio.create_task(session.send("Page.reload", {}, page_changing=True, timeout=2))
    call = await ext.next_call()
    assert (call.tab_id, call.method, call.control_owner_id) == (4, "Page.reload", "o")
    proxy.on_tool_result(answer(call, result={"tabId": 4, "result": {"ok": 1}}))
    assert await task == {"ok": 1}
    seen: list[tuple[str, dict[str, Any]]] = []
    session.subscribe(lambda m, p: seen.append((m, p)))
    proxy.on_cdp_event(CdpEvent(session_id="s", tab_id=4, method="Page.loadEventFired"))
    assert seen == [("Page.loadEventFired", {})]
