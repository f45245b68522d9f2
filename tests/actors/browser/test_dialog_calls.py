"""JavaScript dialogs at the CDPProxy: a dialog that opens ends the calls waiting on its tab at
once, later calls to that tab fail before they are sent, and answering it lets calls flow again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actors.tools.dialogs import DialogOpen, DialogTable
from messages.errors import ErrorCode
from messages.wire_browser import CdpCancel, CdpSend
from messages.wire_inbound import CdpEvent
from tests.actors.browser.test_cdp_proxy import Rig, rig, start

__all__ = ["rig"]

OPENING = {"type": "confirm", "message": "Delete order #12?", "url": "https://shop.test/o/12"}


def opening(tab: int, **params: Any) -> CdpEvent:
    return CdpEvent(
        session_id="s", tab_id=tab, method="Page.javascriptDialogOpening", params=OPENING | params
    )


def call(rig: Rig, tab: int, method: str, *, changing: bool = False) -> asyncio.Task[Any]:
    return asyncio.create_task(
        rig.calls.cdp("s", tab, method, {}, page_changing=changing, timeout=5, owner_id="t")
    )


def test_the_table_follows_opening_closing_and_detaching() -> None:
    table = DialogTable()
    opened = table.on_event(3, "Page.javascriptDialogOpening", OPENING, now=5.0)
    assert opened is not None and (opened.kind, opened.message, opened.opened_at) == (
        "confirm",
        "Delete order #12?",
        5.0,
    )
    assert table.get(3) is opened and table.get(4) is None
    assert table.on_event(3, "Page.javascriptDialogClosed", {"result": True}) is None
    assert table.get(3) is None
    table.on_event(3, "Page.javascriptDialogOpening", {"type": "weird"})
    assert (d := table.get(3)) is not None and d.kind == "alert"
    table.on_event(3, "Inspector.detached", {"reason": "target_closed"})
    assert table.get(3) is None


async def test_a_dialog_ends_the_calls_waiting_on_its_tab_at_once(rig: Rig) -> None:
    click = call(rig, 3, "Input.dispatchMouseEvent", changing=True)
    other = call(rig, 4, "Runtime.evaluate")
    await rig.ext.wait_until(lambda: len(rig.ext.of(CdpSend)) == 2)
    await rig.event(opening(3))
    with pytest.raises(DialogOpen) as info:
        await click
    assert info.value.sent and info.value.code is ErrorCode.DIALOG_OPEN
    assert info.value.dialog.message == "Delete order #12?"
    clicked = rig.ext.of(CdpSend)[0]
    await rig.ext.wait_until(lambda: rig.ext.of(CdpCancel))
    assert [c.call_id for c in rig.ext.of(CdpCancel)] == [clicked.call_id]  # v2: never late
    assert not other.done()  # another tab is not blocked
    await rig.answer(rig.ext.of(CdpSend)[1], result={"tabId": 4, "result": {}})
    assert await other == {}


async def test_while_a_dialog_is_open_calls_fail_unsent_except_answering_it(rig: Rig) -> None:
    await rig.event(opening(3, type="prompt", defaultPrompt="x"))
    with pytest.raises(DialogOpen) as info:
        await call(rig, 3, "Runtime.evaluate")
    assert not info.value.sent and info.value.dialog.kind == "prompt"
    assert rig.ext.of(CdpSend) == []  # nothing was sent to wait for its deadline
    answer = call(rig, 3, "Page.handleJavaScriptDialog", changing=True)
    sent = await rig.ext.next_call()
    assert isinstance(sent, CdpSend) and sent.method == "Page.handleJavaScriptDialog"
    await rig.answer(sent, result={"tabId": 3, "result": {}})
    assert await answer == {}
    # Answered: the next call is sent even before the Closed event arrives.
    again = call(rig, 3, "Runtime.evaluate")
    await rig.ext.wait_until(lambda: len(rig.ext.of(CdpSend)) == 2)
    nxt = rig.ext.of(CdpSend)[1]
    assert nxt.method == "Runtime.evaluate"
    await rig.answer(nxt, result={"tabId": 3, "result": {}})
    assert await again == {}


async def test_v1_gets_no_cancel_and_a_late_answer_is_dropped() -> None:
    rig = await start(1)
    try:
        click = call(rig, 3, "Input.dispatchMouseEvent", changing=True)
        sent = await rig.ext.next_call()
        await rig.event(opening(3))
        with pytest.raises(DialogOpen):
            await click
        await rig.answer(sent, result={"tabId": 3, "result": {}})  # when the dialog closed
        assert rig.ext.of(CdpCancel) == [] and rig.pending() == 0
    finally:
        await rig.sup.stop()
