"""The CDPProxy actor and its pure correlator, against a fake extension that collects what the
host sends. Calls go through :class:`actors.browser.tabs.BrowserCalls`, as the tools make them."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from actors.browser.call_table import CallState, CallTable
from actors.browser.cdp_proxy import CDPProxy
from actors.browser.proxy_messages import Answered, ConnectionLost, EventArrived, Subscriptions
from actors.browser.tabs import BrowserCalls, TabCdpSession
from actors.link.link_writer import ConnectionInfo
from actors.runtime.live_ref import LiveRef
from actors.tools.cdp import BrowserCallError, outcome_of
from messages.errors import ErrorCode
from messages.wire_browser import CdpCancel, CdpSend, ControlRelease, TabClose, TabNew
from messages.wire_inbound import CdpEvent, ToolResult
from supervisors.policy import RestartIntensity
from supervisors.supervisor import ChildSpec, Supervisor


class FakeExtension:
    """A LinkWriter stand-in: collects host -> extension models."""

    def __init__(self, protocol: int = 2, *, connected: bool = True) -> None:
        self.info = ConnectionInfo(link_id=1, role="relay", origin="o", protocol=protocol)
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


class Rig:
    """One link's CDPProxy under a supervisor (as in the daemon), reached by ``calls``."""

    def __init__(self, ext: FakeExtension) -> None:
        self.ext = ext
        self.subs = Subscriptions()
        self.made: list[CDPProxy] = []  # each incarnation, oldest first
        self.sup = Supervisor(
            "link-1",
            [ChildSpec("cdp-proxy-1", start=self._make)],
            intensity=RestartIntensity(10, 1.0),
        )
        self.proxy: LiveRef[Any] = LiveRef("cdp-proxy-1").bind(self.sup)
        self.calls = BrowserCalls(self.proxy)

    def _make(self) -> CDPProxy:
        proxy = CDPProxy(info=self.ext.info, writer=self.ext, subscriptions=self.subs)  # type: ignore[arg-type]
        self.made.append(proxy)
        return proxy

    async def answer(self, call: Any, **kw: Any) -> None:
        await self.proxy.tell(Answered(result=answer(call, **kw)))

    async def event(self, event: CdpEvent) -> None:
        await self.proxy.ask(EventArrived(event=event), timeout=2)

    def pending(self) -> int:
        return self.made[-1].pending


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    made = Rig(FakeExtension(2))
    await made.sup.start()
    yield made
    await made.sup.stop()


async def start(protocol: int = 2, *, connected: bool = True) -> Rig:
    made = Rig(FakeExtension(protocol, connected=connected))
    await made.sup.start()
    return made


def answer(
    call: Any, *, ok: bool = True, result: Any = None, error: str | None = None
) -> ToolResult:
    return ToolResult(
        session_id=call.session_id, call_id=call.call_id, ok=ok, result=result, error=error
    )


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


# --- the actor ------------------------------------------------------------------------------


async def test_cdp_returns_the_raw_cdp_result_and_v2_carries_the_owner(rig: Rig) -> None:
    task = asyncio.create_task(
        rig.calls.cdp(
            "s",
            7,
            "Runtime.evaluate",
            {"expression": "1"},
            page_changing=False,
            timeout=2,
            owner_id="turn-1",
        )
    )
    call = await rig.ext.next_call()
    assert isinstance(call, CdpSend)
    assert (call.tab_id, call.method, call.control_owner_id) == (7, "Runtime.evaluate", "turn-1")
    await rig.answer(call, result={"tabId": 7, "result": {"result": {"value": 1}}})
    assert await task == {"result": {"value": 1}}


async def test_v1_calls_carry_no_control_owner() -> None:
    rig = await start(1)
    task = asyncio.create_task(
        rig.calls.cdp("s", 7, "Page.enable", None, page_changing=False, timeout=2, owner_id="t")
    )
    call = await rig.ext.next_call()
    assert call.control_owner_id is None
    await rig.answer(call, result={"tabId": 7, "result": {}})
    assert await task == {}
    await rig.sup.stop()


async def test_an_error_answer_raises_with_chrome_text_and_not_allowed_url_code(rig: Rig) -> None:
    task = asyncio.create_task(
        rig.calls.cdp("s", 1, "Page.navigate", {}, page_changing=True, timeout=2, owner_id=None)
    )
    await rig.answer(await rig.ext.next_call(), ok=False, error="NOT_ALLOWED_URL: chrome://x")
    with pytest.raises(BrowserCallError) as info:
        await task
    assert info.value.code is ErrorCode.NOT_ALLOWED_URL
    assert info.value.outcome == "error"  # a definite answer came

    task = asyncio.create_task(
        rig.calls.cdp("s", 1, "DOM.x", {}, page_changing=False, timeout=2, owner_id=None)
    )
    rig.ext.sent.clear()
    await rig.answer(await rig.ext.next_call(), ok=False, error="'DOM.x' wasn't found")
    with pytest.raises(BrowserCallError) as info:
        await task
    assert info.value.code is ErrorCode.INTERNAL
    assert "wasn't found" in info.value.message


async def test_a_read_that_times_out_raises_request_timeout_with_outcome_error(rig: Rig) -> None:
    with pytest.raises(BrowserCallError) as info:
        await rig.calls.cdp(
            "s", 1, "Page.getFrameTree", None, page_changing=False, timeout=0.05, owner_id=None
        )
    assert info.value.code is ErrorCode.REQUEST_TIMEOUT
    assert info.value.outcome == "error"


async def test_a_page_changing_timeout_has_outcome_unknown_and_v2_sends_cdp_cancel(
    rig: Rig,
) -> None:
    ext = rig.ext
    with pytest.raises(BrowserCallError) as info:
        await rig.calls.cdp(
            "s", 1, "Input.dispatchKeyEvent", {}, page_changing=True, timeout=0.05, owner_id="o"
        )
    assert info.value.code is ErrorCode.REQUEST_TIMEOUT
    assert outcome_of(info.value) == "unknown"
    sent = ext.of(CdpSend)[0]
    await ext.wait_until(lambda: bool(ext.of(CdpCancel)))
    cancel = ext.of(CdpCancel)[0]
    assert (cancel.session_id, cancel.call_id) == ("s", sent.call_id)
    # A late answer is dropped without error.
    await rig.answer(sent, result={"tabId": 1, "result": {}})
    await rig.proxy.ask(ConnectionLost(), timeout=2)  # a round trip: the answer was handled
    assert rig.pending() == 0


async def test_a_v1_timeout_sends_no_cdp_cancel() -> None:
    rig = await start(1)
    with pytest.raises(BrowserCallError):
        await rig.calls.cdp("s", 1, "X", None, page_changing=False, timeout=0.02, owner_id=None)
    await asyncio.sleep(0.05)
    assert rig.ext.of(CdpCancel) == []
    await rig.sup.stop()


async def test_cancelling_the_caller_sends_cdp_cancel_and_a_later_answer_is_ignored(
    rig: Rig,
) -> None:
    ext = rig.ext
    task = asyncio.create_task(
        rig.calls.cdp(
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
    await rig.answer(call, result={"tabId": 1, "result": {}})  # dropped
    await rig.event(CdpEvent(session_id="s", tab_id=1, method="X", params={}))
    assert rig.pending() == 0


async def test_a_call_abandoned_before_the_proxy_took_it_is_never_sent(rig: Rig) -> None:
    # The ticket rule: the caller gives up while its OpenCall still waits in the mailbox
    # (the proxy is busy writing an earlier frame).
    ext = rig.ext
    writing = asyncio.Event()
    release = asyncio.Event()
    real_send = ext.send

    async def slow_send(msg: BaseModel) -> bool:
        writing.set()
        await release.wait()
        return await real_send(msg)

    ext.send = slow_send  # type: ignore[method-assign]
    first = asyncio.create_task(
        rig.calls.cdp(
            "s", 1, "Page.getFrameTree", None, page_changing=False, timeout=5, owner_id=None
        )
    )
    await writing.wait()
    second = asyncio.create_task(
        rig.calls.cdp("s", 1, "Input.insertText", {}, page_changing=True, timeout=5, owner_id=None)
    )
    await asyncio.sleep(0.01)  # its OpenCall is queued behind the write
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    release.set()
    call = await ext.next_call()
    await rig.answer(call, result={"tabId": 1, "result": {}})
    await first
    assert [m.method for m in ext.of(CdpSend)] == ["Page.getFrameTree"]


async def test_connection_lost_fails_every_pending_call_with_connection_lost(rig: Rig) -> None:
    ext = rig.ext
    read = asyncio.create_task(
        rig.calls.cdp(
            "s", 1, "Page.getFrameTree", None, page_changing=False, timeout=5, owner_id=None
        )
    )
    write = asyncio.create_task(
        rig.calls.cdp("s", 1, "Input.insertText", {}, page_changing=True, timeout=5, owner_id=None)
    )
    await ext.wait_until(lambda: len(ext.sent) == 2)
    await rig.proxy.ask(ConnectionLost(), timeout=2)
    results = await asyncio.gather(read, write, return_exceptions=True)
    assert all(isinstance(r, BrowserCallError) for r in results)
    assert [r.code for r in results] == [ErrorCode.CONNECTION_LOST] * 2  # type: ignore[union-attr]
    assert [outcome_of(r) for r in results] == ["error", "unknown"]  # type: ignore[arg-type]
    # Later calls fail at once; nothing is sent on a dead connection.
    with pytest.raises(BrowserCallError) as info:
        await rig.calls.cdp("s", 1, "X", None, page_changing=False, timeout=5, owner_id=None)
    assert info.value.code is ErrorCode.CONNECTION_LOST
    assert len(ext.sent) == 2


async def test_a_proxy_that_stopped_fails_its_calls_and_refuses_new_ones(rig: Rig) -> None:
    write = asyncio.create_task(
        rig.calls.cdp("s", 1, "Input.insertText", {}, page_changing=True, timeout=5, owner_id=None)
    )
    await rig.ext.wait_until(lambda: len(rig.ext.sent) == 1)
    await rig.sup.stop()
    with pytest.raises(BrowserCallError) as info:
        await write
    assert info.value.code is ErrorCode.CONNECTION_LOST
    assert info.value.outcome == "unknown"  # it was sent: it may have happened
    with pytest.raises(BrowserCallError) as info:
        await rig.calls.cdp("s", 1, "X", None, page_changing=True, timeout=5, owner_id=None)
    assert info.value.outcome == "error"  # never sent


async def test_a_crashed_proxy_reports_its_write_unknown_and_its_successor_drops_the_late_answer(
    rig: Rig,
) -> None:
    write = asyncio.create_task(
        rig.calls.cdp("s", 1, "Input.insertText", {}, page_changing=True, timeout=5, owner_id=None)
    )
    call = await rig.ext.next_call()
    old = rig.sup.ref("cdp-proxy-1")
    rig.made[-1].handle = _boom  # type: ignore[method-assign]  # crash on the next message
    await old.tell("crash")
    with pytest.raises(BrowserCallError) as info:
        await write
    assert info.value.outcome == "unknown"
    await rig.sup.wait_child("cdp-proxy-1", after=old, timeout=2)
    # The old call's answer reaches the new incarnation: an unknown call id, dropped.
    rig.ext.sent.clear()
    task = asyncio.create_task(
        rig.calls.cdp(
            "s", 1, "Page.getFrameTree", None, page_changing=False, timeout=2, owner_id=None
        )
    )
    fresh = await rig.ext.next_call()
    assert fresh.call_id != call.call_id
    await rig.answer(call, result={"tabId": 1, "result": {"stale": True}})
    await rig.answer(fresh, result={"tabId": 1, "result": {"fresh": True}})
    assert await task == {"fresh": True}


async def _boom(_msg: Any) -> None:
    raise RuntimeError("injected")


async def test_a_send_that_cannot_be_written_fails_with_connection_lost_outcome_error() -> None:
    rig = await start(2, connected=False)
    with pytest.raises(BrowserCallError) as info:
        await rig.calls.cdp("s", 1, "X", None, page_changing=True, timeout=1, owner_id=None)
    assert info.value.code is ErrorCode.CONNECTION_LOST
    assert info.value.outcome == "error"  # never sent, so it definitely did not happen
    await rig.sup.stop()


async def test_connection_lost_during_a_send_leaves_no_unretrieved_exception() -> None:
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    sending = asyncio.Event()
    release = asyncio.Event()
    rig = await start(2)

    async def slow_send(_msg: BaseModel) -> bool:
        sending.set()
        await release.wait()
        return False  # the link went away while the frame was being written

    rig.ext.send = slow_send  # type: ignore[method-assign]
    call = asyncio.create_task(rig.calls.tab("s", "tab.getActive", {}, timeout=5, owner_id=None))
    await sending.wait()
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
    await rig.sup.stop()
    assert unhandled == []  # was: "Future exception was never retrieved" (seen in a chaos run)


async def test_v1_tab_close_becomes_cdp_send_page_close() -> None:
    rig = await start(1)
    task = asyncio.create_task(
        rig.calls.tab("s", "tab.close", {"tabId": 9}, timeout=2, owner_id="o")
    )
    call = await rig.ext.next_call()
    assert isinstance(call, CdpSend)
    assert (call.method, call.tab_id) == ("Page.close", 9)
    await rig.answer(call, result={"tabId": 9, "result": {}})
    assert await task == {"tabId": 9, "result": {}}
    await rig.sup.stop()


async def test_v2_tab_close_is_a_tab_close_message(rig: Rig) -> None:
    task = asyncio.create_task(
        rig.calls.tab("s", "tab.close", {"tabId": 9}, timeout=2, owner_id="o")
    )
    call = await rig.ext.next_call()
    assert isinstance(call, TabClose)
    assert call.control_owner_id == "o"
    await rig.answer(call)
    await task


async def test_tab_new_passes_the_url_and_returns_the_tab_info() -> None:
    rig = await start(1)
    task = asyncio.create_task(
        rig.calls.tab(
            "s", "tab.new", {"url": "https://a.test/", "active": True}, timeout=2, owner_id=None
        )
    )
    call = await rig.ext.next_call()
    assert isinstance(call, TabNew)
    assert call.url == "https://a.test/"
    info = {"tabId": 3, "url": "https://a.test/", "title": "", "active": True}
    await rig.answer(call, result=info)
    assert await task == info
    await rig.sup.stop()


async def test_control_release_is_sent_only_in_v2() -> None:
    rig1 = await start(1)
    await rig1.calls.release("turn-1")
    await rig1.event(CdpEvent(session_id="s", tab_id=1, method="X", params={}))
    assert rig1.ext.sent == []
    rig2 = await start(2)
    await rig2.calls.release("turn-1")
    await rig2.ext.wait_until(lambda: bool(rig2.ext.sent))
    assert rig2.ext.sent == [ControlRelease(owner_id="turn-1")]
    await rig1.sup.stop()
    await rig2.sup.stop()


async def test_events_reach_the_subscribers_of_their_session_and_tab(rig: Rig) -> None:
    got: list[str] = []
    unsubscribe = await rig.calls.subscribe("s", 1, lambda ev: got.append(ev.method))
    await rig.event(CdpEvent(session_id="s", tab_id=1, method="A", params={}))
    await rig.event(CdpEvent(session_id="s", tab_id=2, method="B", params={}))
    await rig.event(CdpEvent(session_id="t", tab_id=1, method="C", params={}))
    unsubscribe()
    await rig.event(CdpEvent(session_id="s", tab_id=1, method="D", params={}))
    assert got == ["A"]


async def test_subscriptions_survive_a_proxy_restart(rig: Rig) -> None:
    got: list[str] = []
    await rig.calls.subscribe("s", 1, lambda ev: got.append(ev.method))
    old = rig.sup.ref("cdp-proxy-1")
    await old.stop()
    await rig.sup.wait_child("cdp-proxy-1", after=old, timeout=2)
    await rig.event(CdpEvent(session_id="s", tab_id=1, method="A", params={}))
    assert got == ["A"]


async def test_tab_cdp_session_sends_through_the_proxy_bound_to_its_tab(rig: Rig) -> None:
    session = TabCdpSession(rig.calls, "s", 4, "o")
    task = asyncio.create_task(session.send("Page.reload", {}, page_changing=True, timeout=2))
    call = await rig.ext.next_call()
    assert (call.tab_id, call.method, call.control_owner_id) == (4, "Page.reload", "o")
    await rig.answer(call, result={"tabId": 4, "result": {"ok": 1}})
    assert await task == {"ok": 1}
    seen: list[tuple[str, dict[str, Any]]] = []
    await session.subscribe(lambda m, p: seen.append((m, p)))
    await rig.event(CdpEvent(session_id="s", tab_id=4, method="Page.loadEventFired"))
    assert seen == [("Page.loadEventFired", {})]
