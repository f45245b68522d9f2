"""Page snapshot and index actions over a :class:`~actors.tools.cdp.CdpSession`.

``inspect_page`` runs ``snapshot.js`` in an isolated world of the tab's main frame
(``Page.createIsolatedWorld``; architecture.md section 5) and returns a compact numbered list of
the visible interactive elements. The indices it prints feed the index actions (``click_index``,
``type_index``, ...), which act like a user: scroll into view, real mouse and keyboard input through
``Input.dispatchMouseEvent`` / ``Input.insertText`` / ``Input.dispatchKeyEvent``, at coordinates in
CSS pixels of the top-level viewport (also for elements in same-origin iframes).

Document identity (protocol.md section 5, "Element references"): each isolated world holds a
random document token; a new document means a new world, hence a new token. An index used with
another token, or whose element is gone, raises ``CdpError(STALE_REF)`` rather than acting on the
wrong element. So does an index whose element now shows another role or name than the line it was
last listed with (a virtualised list that recycled the row element after the snapshot the model is
using): "element [n] now shows X, was Y". The newest snapshot that lists an index decides what it
stands for, so a number from the snapshot just taken acts on the row that snapshot showed, even on
a node the list reused. Controls whose text is their value (fields, comboboxes, popup buttons
showing their choice) are keyed by role only, value and state changes never count, and the
``now:`` line after an action re-baselines the index (a button whose text toggles when clicked).
Chromium returns the same world for the same ``worldName`` within one document, so a new
``PageTools`` (say, after an actor restart) finds the indices of an earlier one. ``PageTools``
caches the world's execution context id; the module-level functions keep one ``PageTools`` per
``CdpSession`` object.

Snapshot format: three ``#`` header lines (page title and URL; ready state, scroll position,
viewport, pages above/below and ``doc=<token>``; the control count by kind, new ones and scope),
then one line per control, ``[n] role "name" value="..." states -> href`` (``*[n]`` when first
seen), grouped by ``-- above/in/below viewport --``, then ``#`` notes (paging, truncation, controls
not listed). States: checked, mixed, expanded, collapsed, selected, disabled, readonly, required,
secret, focused, offscreen, and ``inert`` for a control behind an open modal (a ``showModal()``
dialog, an ``inert`` ancestor, a visible full-viewport ``aria-modal`` overlay): with
``scope="viewport"`` those are left out and a ``#`` line after the header says how many; with
``scope="all"`` they are listed marked ``inert``.

Clicks are verified: ``resolve(..., arm=True)`` arms a one-time capturing click listener in the
isolated world, and after the mouse events one more evaluation reads back whether the trusted click
event's ``composedPath()`` contained the element. A control that moved between ``resolve`` and the
input (the race cannot be closed) gives ``ok=False`` and the note "the click landed on <what>
instead", never a silent click on something else. An element that must
first be scrolled into view is looked at again two frames later (after the page's scroll handlers
ran): if it went away or now shows another row, STALE_REF rather than a click.

Reads send with ``page_changing=False``; anything that changes the page sends with
``page_changing=True`` so that no transport ever replays it.

Layout: the result types and the injected script are in :mod:`actors.tools.page_types`; the
isolated world, snapshot, resolution, input primitives and reporting in
:mod:`actors.tools.page_world` (:class:`~actors.tools.page_world.PageWorld`); this module adds the
index actions (:class:`PageTools`) and the module-level functions.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Concatenate, ParamSpec

from actors.tools.cdp import CdpError, CdpSession, ErrorCode
from actors.tools.combobox import choose_option
from actors.tools.drag import drag_index, drop_files, drop_on_text
from actors.tools.field_check import remember_field, typed_check
from actors.tools.frames import slot_of
from actors.tools.page_types import (
    ActionResult,
    ElementNotVisible,
    ElementPoint,
    Scope,
    Snapshot,
)
from actors.tools.page_world import PageWorld

__all__ = [
    "ActionResult",
    "ElementNotVisible",
    "ElementPoint",
    "PageTools",
    "Scope",
    "Snapshot",
    "check_index",
    "clear_index",
    "click_index",
    "focus_index",
    "hover_index",
    "inspect_page",
    "page_tools",
    "resolve",
    "select_index",
    "type_index",
]


_P = ParamSpec("_P")


def _framed(
    action: Callable[Concatenate[PageTools, int, str, _P], Awaitable[ActionResult]],
) -> Callable[Concatenate[PageTools, int, str, _P], Awaitable[ActionResult]]:
    """An index action that works in the frame its element is in (``PageTools._in_frame``)."""

    async def run(
        self: PageTools, index: int, doc_token: str, /, *args: _P.args, **kwargs: _P.kwargs
    ) -> ActionResult:
        async with self._in_frame(index, doc_token) as token:
            return await action(self, index, token, *args, **kwargs)

    run.__doc__ = action.__doc__
    return run


class PageTools(PageWorld):
    """Snapshot and index actions for one tab. Not safe for concurrent use by several tasks."""

    # --- index actions ---------------------------------------------------------------------------

    @_framed
    async def click_index(self, index: int, doc_token: str) -> ActionResult:
        """Click element ``index`` with real mouse events at its centre.

        ``ok=False`` with "the click landed on ... instead" when the click event did not reach it.
        """
        before = await self._before(index, doc_token)
        try:
            p = await self.resolve(index, doc_token, arm=True)
        except ElementNotVisible as exc:
            return self._failed("click", index, before, exc.message)
        landed, note = await self._click_at(p)
        return await self._report("click", index, doc_token, before, note, ok=landed)

    @_framed
    async def hover_index(self, index: int, doc_token: str) -> ActionResult:
        """Move the mouse over element ``index``."""
        before = await self._before(index, doc_token)
        try:
            p = await self.resolve(index, doc_token)
        except ElementNotVisible as exc:
            return self._failed("hover", index, before, exc.message)
        await self._mouse("mouseMoved", p.x, p.y)
        return await self._report("hover", index, doc_token, before)

    @_framed
    async def focus_index(self, index: int, doc_token: str) -> ActionResult:
        """Scroll element ``index`` into view and focus it (no click)."""
        before = await self._before(index, doc_token)
        await self._call(f"__browy.resolve({int(index)}, {json.dumps(doc_token)})")
        ok = await self._call(
            f"__browy.focus({int(index)}, {json.dumps(doc_token)})", page_changing=True
        )
        if not ok:
            return self._failed("focus", index, before, "the element did not take focus")
        return await self._report("focus", index, doc_token, before)

    async def _focus_by_click(self, index: int, doc_token: str) -> str:
        p = await self.resolve(index, doc_token, arm=True)
        landed, note = await self._click_at(p)
        if not (await self._info(index, doc_token, after=True))["focused"]:
            await self._call(
                f"__browy.focus({int(index)}, {json.dumps(doc_token)})", page_changing=True
            )
            if not landed:
                note += "; the field was then focused directly"
        return note

    @_framed
    async def type_index(
        self, index: int, doc_token: str, text: str, *, clear: bool = True, submit: bool = False
    ) -> ActionResult:
        """Focus ``index`` by clicking, optionally clear it, type ``text``, optionally press Enter.

        The field is read back (:mod:`actors.tools.field_check`): ``ok=False`` when it does not
        hold what was typed, and then Enter is not pressed. The typed text is never echoed in the
        result (it may be a secret); the element's value in ``element`` is masked for password
        and card fields.
        """
        before = await self._before(index, doc_token)
        if not before["editable"]:
            return self._failed("type", index, before, "the element is not a text field")
        try:
            note = await self._focus_by_click(index, doc_token)
        except ElementNotVisible as exc:
            return self._failed("type", index, before, exc.message)
        if clear:
            await self._select_all_and_delete()
        await remember_field(self, index, doc_token)
        if text:
            await self.cdp.send("Input.insertText", {"text": text}, page_changing=True)
        took, check = await typed_check(self, index, doc_token, text, clear=clear)
        submit = submit and took  # Enter on a field that did not take the text would send it
        if submit:
            await self._key("Enter", "Enter", 13, text="\r")
        typed = f"typed {len(text)} characters" + (" and pressed Enter" if submit else "")
        notes = ", ".join(filter(None, [typed, note, check]))
        return await self._report("type", index, doc_token, before, notes, ok=took)

    @_framed
    async def clear_index(self, index: int, doc_token: str) -> ActionResult:
        """Empty the text field ``index`` as a user would (select all, delete)."""
        before = await self._before(index, doc_token)
        if not before["editable"]:
            return self._failed("clear", index, before, "the element is not a text field")
        try:
            note = await self._focus_by_click(index, doc_token)
        except ElementNotVisible as exc:
            return self._failed("clear", index, before, exc.message)
        await self._select_all_and_delete()
        return await self._report("clear", index, doc_token, before, note)

    @_framed
    async def select_index(self, index: int, doc_token: str, value_or_label: str) -> ActionResult:
        """Choose an option of the native ``<select>`` ``index`` by value or (partial) label; of
        an ARIA combobox by label, opening it like a user (:mod:`actors.tools.combobox`)."""
        before = await self._before(index, doc_token)
        if before["tag"] != "SELECT":
            return await choose_option(self, index, doc_token, value_or_label, before)
        await self._call(f"__browy.resolve({int(index)}, {json.dumps(doc_token)})")
        res = await self._call(
            f"__browy.selectOption({int(index)}, {json.dumps(doc_token)}, "
            f"{json.dumps(value_or_label)})",
            page_changing=True,
        )
        if not res["ok"]:
            why = res.get("reason") or "no option matches " + json.dumps(value_or_label)
            opts = ", ".join(json.dumps(o) for o in res["options"])
            return self._failed("select", index, before, f"{why}; options: {opts}")
        return await self._report(
            "select", index, doc_token, before, f"selected {json.dumps(res['label'])}"
        )

    @_framed
    async def check_index(self, index: int, doc_token: str, checked: bool = True) -> ActionResult:
        """Make checkbox/radio/switch ``index`` checked (or unchecked) by clicking it if needed."""
        before = await self._before(index, doc_token)
        if bool(before["checked"]) == checked:
            return ActionResult(
                action="check", index=index, ok=True, url_before=before["url"],
                url_after=before["url"], title=before["title"], navigated=False,
                same_document=False, element=before["line"],
                note=f"already {'checked' if checked else 'unchecked'}",
            )  # fmt: skip
        try:
            p = await self.resolve(index, doc_token, arm=True)
        except ElementNotVisible as exc:
            return self._failed("check", index, before, exc.message)
        landed, note = await self._click_at(p)
        result = await self._report("check", index, doc_token, before, note, ok=landed)
        if result.navigated and not result.same_document:
            return result
        now = bool((await self._info(index, doc_token, after=True))["checked"])
        if now != checked:
            return ActionResult(
                action="check", index=index, ok=False, url_before=result.url_before,
                url_after=result.url_after, title=result.title, navigated=result.navigated,
                same_document=result.same_document, element=result.element,
                note="; ".join(filter(None, ["clicked, but the state did not change", note])),
            )  # fmt: skip
        return result

    async def drag_index(self, source: int, target: int, doc_token: str) -> ActionResult:
        """Drag element ``source`` onto element ``target`` (:mod:`actors.tools.drag`), both in
        the top document or both in one frame."""
        if slot_of(source) != slot_of(target):
            raise CdpError(ErrorCode.INTERNAL, "drag_index: both elements must be in one frame")
        async with self._in_frame(source, doc_token) as token:
            return await drag_index(self, source, target, token)

    async def drop_files(self, index: int, files: list[str], doc_token: str) -> ActionResult:
        """Drop sandbox ``files`` on element ``index`` (:func:`actors.tools.drag.drop_files`)."""
        async with self._in_frame(index, doc_token) as token:
            return await drop_files(self, index, files, token)

    async def drop_on_text(self, text: str, files: list[str]) -> tuple[bool, str]:
        """Drop sandbox ``files`` on the element showing ``text`` (top document)."""
        return await drop_on_text(self, text, files)

    @contextlib.asynccontextmanager
    async def _in_frame(self, index: int, doc_token: str) -> AsyncIterator[str]:
        """Work in the world of the frame ``index`` belongs to (actors.tools.frames) while the
        block runs; yields the token to check its numbers against. The top document must still be
        the snapshot's (``doc_token``) and the frame still in it, else STALE_REF."""
        slot = slot_of(index)
        if slot == 0 or self._active is not None:
            yield doc_token
            return
        await self._call(f"__browy.frameParent({slot}, {json.dumps(doc_token)})")  # same top doc
        assert self._context_id is not None
        await self.frames.box(slot, doc_token, self._context_id)  # every frame on the way is there
        world = await self.frames.world(slot, self._context_id)
        if isinstance(world, str):
            raise CdpError(ErrorCode.INTERNAL, f"element [{index}] cannot be reached: {world}")
        token = self.frame_tokens.get(slot)
        if token is None:
            raise CdpError(ErrorCode.STALE_REF, f"no snapshot of frame {slot} yet: inspect_page")
        self._active = (world, doc_token)
        try:
            yield token
        finally:
            self._active = None

    # --- scrolling a list (list_find.js) -------------------------------------------------------

    async def find_start(self, index: int, doc_token: str) -> dict[str, int]:
        """Start a search in the list of element ``index`` (0: the page's scroller): its ``id``
        and where it is scrolled to now (``top``)."""
        res: dict[str, int] = await self._call(
            f"__browyFind.start({int(index)}, {json.dumps(doc_token)})"
        )
        return res

    async def find_step(self, state: dict[str, Any]) -> dict[str, Any]:
        """One slice of ``find_by_scrolling`` (see :mod:`actors.tools.list_tools`)."""
        res: dict[str, Any] = await self._call(f"__browyFind.step({json.dumps(state)})")
        return res


# --- module-level convenience: one PageTools per CdpSession object ---------------------------

_TOOLS: weakref.WeakKeyDictionary[Any, PageTools] = weakref.WeakKeyDictionary()


def page_tools(cdp: CdpSession) -> PageTools:
    """The :class:`PageTools` kept for ``cdp`` (created on first use)."""
    tools = _TOOLS.get(cdp)
    if tools is None:
        tools = _TOOLS[cdp] = PageTools(cdp)
    return tools


async def inspect_page(
    cdp: CdpSession,
    *,
    scope: Scope = "viewport",
    text_filter: str | None = None,
    offset: int = 0,
    limit: int | None = None,
    max_chars: int = 12_000,
) -> Snapshot:
    """:meth:`PageTools.inspect_page` on the tools kept for ``cdp``."""
    return await page_tools(cdp).inspect_page(
        scope=scope, text_filter=text_filter, offset=offset, limit=limit, max_chars=max_chars
    )


async def resolve(cdp: CdpSession, index: int, doc_token: str) -> ElementPoint:
    """:meth:`PageTools.resolve` on the tools kept for ``cdp``."""
    return await page_tools(cdp).resolve(index, doc_token)


async def click_index(cdp: CdpSession, index: int, doc_token: str) -> ActionResult:
    """:meth:`PageTools.click_index` on the tools kept for ``cdp``."""
    return await page_tools(cdp).click_index(index, doc_token)


async def type_index(
    cdp: CdpSession,
    index: int,
    doc_token: str,
    text: str,
    *,
    clear: bool = True,
    submit: bool = False,
) -> ActionResult:
    """:meth:`PageTools.type_index` on the tools kept for ``cdp``."""
    return await page_tools(cdp).type_index(index, doc_token, text, clear=clear, submit=submit)


async def select_index(
    cdp: CdpSession, index: int, doc_token: str, value_or_label: str
) -> ActionResult:
    """:meth:`PageTools.select_index` on the tools kept for ``cdp``."""
    return await page_tools(cdp).select_index(index, doc_token, value_or_label)


async def check_index(
    cdp: CdpSession, index: int, doc_token: str, checked: bool = True
) -> ActionResult:
    """:meth:`PageTools.check_index` on the tools kept for ``cdp``."""
    return await page_tools(cdp).check_index(index, doc_token, checked)


async def focus_index(cdp: CdpSession, index: int, doc_token: str) -> ActionResult:
    """:meth:`PageTools.focus_index` on the tools kept for ``cdp``."""
    return await page_tools(cdp).focus_index(index, doc_token)


async def hover_index(cdp: CdpSession, index: int, doc_token: str) -> ActionResult:
    """:meth:`PageTools.hover_index` on the tools kept for ``cdp``."""
    return await page_tools(cdp).hover_index(index, doc_token)


async def clear_index(cdp: CdpSession, index: int, doc_token: str) -> ActionResult:
    """:meth:`PageTools.clear_index` on the tools kept for ``cdp``."""
    return await page_tools(cdp).clear_index(index, doc_token)
