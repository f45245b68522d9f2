"""``inspect_page`` and the ``*_index`` tools: the page model as the model uses it.

``inspect_page`` lists the visible interactive elements of the pinned tab, numbered; the index
tools (``click_index``, ``type_index``, ...) act on those numbers like a user, on the document the
snapshot came from (else ``STALE_REF``). Names from protocol.md section 3b. Page text reaches the
model wrapped in ``<untrusted_page_content>`` markers (architecture.md section 5).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from actors.tools.dialogs import DialogOpen, blocked_snapshot
from actors.tools.handles import action_output
from actors.tools.pinned_tab import TurnBrowser
from actors.tools.registry import Registry
from actors.tools.shared import untrusted
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput
from messages.errors import ErrorCode

__all__ = ["IndexArgs", "InspectArgs", "browser_of", "register_page_tools"]


class InspectArgs(ToolArgs):
    scope: Literal["viewport", "all"] = Field(
        "viewport", description="viewport: what is on screen (and near it); all: the whole page"
    )
    text_filter: str | None = Field(None, description="only elements whose text contains this")
    offset: int = Field(0, ge=0, description="skip this many entries (paging)")
    limit: int | None = Field(None, ge=1, le=2000, description="at most this many entries")


class IndexArgs(ToolArgs):
    index: int = Field(..., ge=0, description="the element number from inspect_page")


class TypeArgs(IndexArgs):
    text: str = Field(..., description="what to type")
    clear: bool = Field(True, description="clear the field first")
    submit: bool = Field(False, description="press Enter afterwards")


class SelectArgs(IndexArgs):
    value: str = Field(..., description="the option's value or visible label")


class DragArgs(IndexArgs):
    to_index: int = Field(..., ge=0, description="the element number to drop it on")


class CheckArgs(IndexArgs):
    checked: bool = Field(True, description="the state to set")


def browser_of(ctx: ToolContext) -> TurnBrowser:
    """The turn's browser (the pinned tab and its snapshot tokens), or NO_CAPABILITY."""
    browser = ctx.state.get("browser")
    if not isinstance(browser, TurnBrowser):
        raise ToolError("this session may not drive tabs", code=ErrorCode.NO_CAPABILITY)
    return browser


def register_page_tools(registry: Registry) -> None:
    """Add ``inspect_page`` and the ``*_index`` tools (protocol.md section 3b names)."""

    @registry.register(
        "inspect_page",
        "List the visible interactive elements of the current tab, numbered, with role, name, "
        "value and state, plus page stats. Numbers feed click_index, type_index and the other "
        "*_index tools; they are valid until the page navigates. Controls inside shadow roots "
        "(open or closed) and frames are listed and used like any other; a cross-origin frame's "
        "controls come under a '-- frame k: <address> --' line, numbered from k*100000+1, and "
        "a frame that cannot be reached is named with what to do instead. "
        "If a JavaScript dialog (alert, confirm, prompt, leave-page) blocks the page, it shows "
        "the dialog instead: answer it with handle_dialog, then carry on. A list that re-renders "
        "(search, scroll) may reuse an element for another row: use the numbers of the newest "
        "snapshot; a row of a long list that is not rendered yet is found by find_by_scrolling.",
        InspectArgs,
        page_changing=False,
    )
    async def inspect_page(args: InspectArgs, ctx: ToolContext) -> ToolOutput:
        browser = browser_of(ctx)
        try:
            snap = await browser.snapshot(
                scope=args.scope, text_filter=args.text_filter, offset=args.offset, limit=args.limit
            )
        except DialogOpen as exc:  # the page is blocked: show the dialog instead
            text = await blocked_snapshot(browser.session(), exc.dialog)
            return ToolOutput(
                content=untrusted(text), summary=f"a {exc.dialog.kind} dialog blocks the page"
            )
        return ToolOutput(
            content=untrusted(snap.text),
            summary=f"{snap.shown} of {snap.count} elements on {snap.title or snap.url}"[:200],
        )

    def _action(name: str, description: str, params: type[IndexArgs], call: Any) -> None:
        @registry.register(name, description, params, page_changing=True)
        async def run(args: Any, ctx: ToolContext) -> ToolOutput:
            browser = browser_of(ctx)
            return action_output(browser, await call(browser.page(), args, browser.token()))

    _action(
        "click_index", "Click element [index] like a user (scrolls it into view). If the click "
        "opens a JavaScript dialog the result says so at once: answer it with handle_dialog. "
        "A popup or new tab it opens is named in the result (tab id): switch_tab to work there. "
        "If a banner or overlay covers the element the click fails naming it: close that "
        "(its Accept or Close button) and click again.",
        IndexArgs,
        lambda p, a, t: p.click_index(a.index, t),
    )  # fmt: skip
    _action(
        "type_index", "Type text into element [index] (clears it first unless clear=false). "
        "The field is read back: a date, time, month, colour or number field that does not take "
        "keys gets the value its own picker would set (give dates as YYYY-MM-DD, times as "
        "HH:MM); a field that ends up holding something else fails, saying what it holds. "
        "Rich-text editors (contenteditable, also ones that redraw as you type) take it too; "
        "format there with press_keys chords (Ctrl+A, Ctrl+B) while it has the focus.",
        TypeArgs, lambda p, a, t: p.type_index(a.index, t, a.text, clear=a.clear, submit=a.submit),
    )  # fmt: skip
    _action(
        "select_index", "Choose an option of the select element [index] by value or label "
        "(read back: fails if the page refuses the choice). One call also works for long lists "
        "and for custom dropdowns (ARIA comboboxes, typed-to-filter ones too): it opens them, "
        "finds the option by label and clicks it; no need to open or scroll them yourself.",
        SelectArgs, lambda p, a, t: p.select_index(a.index, t, a.value),
    )  # fmt: skip
    _action(
        "check_index", "Check or uncheck the checkbox [index].", CheckArgs,
        lambda p, a, t: p.check_index(a.index, t, a.checked),
    )  # fmt: skip
    _action(
        "set_radio_index", "Select the radio button [index].", IndexArgs,
        lambda p, a, t: p.check_index(a.index, t, True),
    )  # fmt: skip
    _action(
        "clear_index", "Clear the field [index].", IndexArgs,
        lambda p, a, t: p.clear_index(a.index, t),
    )  # fmt: skip
    _action(
        "drag_index", "Drag element [index] and drop it on element [to_index] with the mouse, "
        "like a user: works for HTML5 drag and drop and for pointer-driven sortable lists and "
        "boards. Scrolls the source into view; both must fit on screen together.", DragArgs,
        lambda p, a, t: p.drag_index(a.index, a.to_index, t),
    )  # fmt: skip
    _action(
        "focus_index", "Focus element [index] (then press_keys goes to it).", IndexArgs,
        lambda p, a, t: p.focus_index(a.index, t),
    )  # fmt: skip
