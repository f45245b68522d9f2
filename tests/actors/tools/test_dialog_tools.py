"""How the tools speak of JavaScript dialogs: a tool that opened one did act; a tool a dialog blocks
is refused with how to answer it; ``handle_dialog`` asks before an answer that could change
something, and only then."""

from __future__ import annotations

import time
from typing import Any

from actors.tools.dialog_tools import register_dialog_tools
from actors.tools.dialogs import DialogOpen, OpenDialog
from actors.tools.registry import Registry
from actors.tools.tool_def import ApprovalRequestInfo, ToolArgs, ToolContext, ToolOutput, ToolPolicy
from messages.errors import ErrorCode


class NoArgs(ToolArgs):
    pass


def dialog(kind: str = "confirm", *, at: float | None = None) -> OpenDialog:
    return OpenDialog(
        kind=kind,
        message="Delete order #12?",
        url="https://shop.test/o/12",
        opened_at=time.monotonic() if at is None else at,
    )


def raising(exc: Exception, *, page_changing: bool) -> Registry:
    reg = Registry()

    async def run(args: NoArgs, ctx: ToolContext) -> ToolOutput:
        raise exc

    reg.register("act", "act", NoArgs, page_changing=page_changing)(run)
    return reg


async def test_a_page_changing_tool_that_opened_a_dialog_did_act_and_says_so() -> None:
    reg = Registry()

    async def click(args: NoArgs, ctx: ToolContext) -> ToolOutput:
        raise DialogOpen(dialog(), "Input.dispatchMouseEvent", sent=True)  # opened just now

    reg.register("click", "click", NoArgs, page_changing=True)(click)
    ctx = ToolContext()
    out = await reg.run("click", {}, ctx, call_id="c1")
    assert out.outcome == "ok", out
    text = str(out.content_for_model)
    assert "opened a dialog" in text and '"Delete order #12?"' in text
    assert "handle_dialog(accept=true) presses OK" in text
    assert ctx.ledger.get("c1") is not None and ctx.ledger.get("c1").state == "ok"  # type: ignore[union-attr]


async def test_a_tool_blocked_by_a_dialog_already_open_is_refused_and_told_how() -> None:
    old = dialog("prompt", at=time.monotonic() - 60)
    for changing in (True, False):
        reg = raising(DialogOpen(old, "Runtime.evaluate", sent=False), page_changing=changing)
        out = await reg.run("act", {}, ToolContext(), call_id=f"x{changing}")
        assert (out.outcome, out.error_code) == ("error", ErrorCode.DIALOG_OPEN)
        assert 'handle_dialog(accept=true, text="...")' in str(out.content_for_model)


class DialogTab:
    """A tab with an open dialog: records what is sent."""

    tab_id = 3

    def __init__(self, open_: OpenDialog | None) -> None:
        self.open_ = open_
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def open_dialog(self) -> OpenDialog | None:
        return self.open_

    async def send(self, method: str, params: Any = None, **_: Any) -> dict[str, Any]:
        self.sent.append((method, params or {}))
        if method == "Page.handleJavaScriptDialog":
            self.open_ = None
            return {}
        if method == "Runtime.evaluate":
            value = None if "Promise" in params["expression"] else ["u", "t", "complete"]
            return {"result": {"value": value}}
        return {}

    async def subscribe(self, callback: Any) -> Any:
        return lambda: None


async def answer(
    open_: OpenDialog | None, args: dict[str, Any], mode: str, allow: bool = True
) -> tuple[Any, DialogTab, list[ApprovalRequestInfo]]:
    reg = Registry()
    register_dialog_tools(reg)
    tab = DialogTab(open_)
    asked: list[ApprovalRequestInfo] = []

    async def approve(info: ApprovalRequestInfo) -> bool:
        asked.append(info)
        return allow

    ctx = ToolContext(policy=ToolPolicy(approval_mode=mode), cdp=tab, approve=approve)  # type: ignore[arg-type]
    return await reg.run("handle_dialog", args, ctx), tab, asked


async def test_accepting_a_confirm_asks_first_and_dismissing_does_not() -> None:
    out, tab, asked = await answer(dialog(), {"accept": True}, "page-changing")
    assert out.outcome == "ok" and len(asked) == 1
    assert "accept the confirm dialog" in asked[0].summary and "Delete order" in asked[0].summary
    assert tab.sent[0] == ("Page.handleJavaScriptDialog", {"accept": True})
    out, tab, asked = await answer(dialog(), {"accept": False}, "page-changing")
    assert out.outcome == "ok" and asked == []
    assert "dismissed the confirm dialog" in str(out.content_for_model)
    out, _, asked = await answer(dialog("alert"), {"accept": True}, "page-changing")
    assert out.outcome == "ok" and asked == []  # closing an alert changes nothing


async def test_a_denied_answer_is_not_sent_and_a_prompt_gets_its_text() -> None:
    out, tab, _ = await answer(dialog(), {"accept": True}, "page-changing", allow=False)
    assert (out.outcome, out.error_code) == ("error", ErrorCode.APPROVAL_DENIED)
    assert tab.sent == []
    out, tab, asked = await answer(dialog("prompt"), {"accept": True, "text": "Ada"}, "never")
    assert out.outcome == "ok" and asked == []
    assert tab.sent[0] == ("Page.handleJavaScriptDialog", {"accept": True, "promptText": "Ada"})
