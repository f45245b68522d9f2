"""``handle_dialog``: answer the JavaScript dialog that blocks a tab (:mod:`actors.tools.dialogs`).

Accepting may change something (OK on "Delete this order?", an answer typed into a prompt, leaving
a page with unsaved changes), so with ``approval_mode = "page-changing"`` the user is asked first;
dismissing a dialog, or closing an alert, is not asked about (``approval_mode = "always"`` asks
for everything). The answer is never sent twice (page-changing, protocol.md section 5).
"""

from __future__ import annotations

import json

from pydantic import Field

from actors.tools.cdp import CdpError
from actors.tools.dialogs import could_change, open_dialog
from actors.tools.registry import Registry
from actors.tools.shared import after_action
from actors.tools.tool_def import (
    ApprovalRequestInfo,
    ToolArgs,
    ToolContext,
    ToolError,
    ToolOutput,
)
from messages.errors import ErrorCode

__all__ = ["DialogArgs", "register_dialog_tools"]

HANDLE_DIALOG = (
    "Answer the JavaScript dialog (alert, confirm, prompt, or 'leave this page?') that blocks "
    "the tab. A tool result or inspect_page says when one is open, and until it is answered no "
    "other tool can act on the tab. accept=true presses OK (or Leave), accept=false presses "
    "Cancel (or Stay); text is the answer typed into a prompt."
)


class DialogArgs(ToolArgs):
    accept: bool = Field(..., description="true: OK / Leave; false: Cancel / Stay")
    text: str | None = Field(None, description="for a prompt(): the answer to type (accept=true)")


def register_dialog_tools(reg: Registry) -> None:
    """Add ``handle_dialog`` to ``reg``."""

    @reg.register("handle_dialog", HANDLE_DIALOG, DialogArgs, page_changing=True, asks_itself=True)
    async def handle_dialog(args: DialogArgs, ctx: ToolContext) -> ToolOutput:
        cdp = ctx.page()
        dialog = await open_dialog(cdp)
        what = f"the {dialog.kind} dialog" if dialog is not None else "the dialog"
        verb = "accept" if args.accept else "dismiss"
        policy = ctx.policy
        if policy.approval_mode == "always" or (
            policy.approval_mode == "page-changing" and could_change(dialog, args.accept)
        ):
            said = f" saying {json.dumps(dialog.message[:200])}" if dialog is not None else ""
            info = ApprovalRequestInfo(
                tool="handle_dialog",
                args=args.model_dump(exclude_none=True),
                summary=f"{verb} {what}{said}",
            )
            if ctx.approve is None or not await ctx.approve(info):
                raise ToolError(
                    f"the user did not allow to {verb} {what}", code=ErrorCode.APPROVAL_DENIED
                )
        params: dict[str, object] = {"accept": args.accept}
        if args.text is not None and args.accept:
            params["promptText"] = args.text
        try:
            await cdp.send(
                "Page.handleJavaScriptDialog", params, page_changing=True, timeout=ctx.timeout
            )
        except CdpError as exc:
            if "No dialog is showing" not in exc.message:
                raise
            raise ToolError(
                "no JavaScript dialog that Browy can answer is open on this tab (one that opened "
                "while Browy was not watching the tab can be answered only by the user; "
                "navigate or reload leaves it)"
            ) from exc
        # A chained dialog (an alert after the confirm) is reported by the registry: it opened
        # during this call.
        note = await after_action(ctx, dialog.url if dialog is not None else "")
        done = "accepted" if args.accept else "dismissed"
        typed = " (typed the answer)" if "promptText" in params else ""
        return ToolOutput(content=f"{done} {what}{typed}{note}", summary=f"{done} {what}")
