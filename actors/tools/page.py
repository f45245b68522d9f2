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
listed with (a virtualised list that recycles row elements): "element [n] now shows X, was Y".
Controls whose text is their value (fields, comboboxes, popup buttons showing their choice) are
keyed by role only, value and state changes never count, and the ``now:`` line after an action
re-baselines the index (a button whose text toggles when clicked); an index refused once is
re-baselined by the next snapshot that lists it. Chromium returns the same world for the same
``worldName`` within one document, so a new ``PageTools`` (say, after an actor restart) finds the
indices of an earlier one. ``PageTools`` caches the world's execution context id; the module-level
functions keep one ``PageTools`` per ``CdpSession`` object.

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
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from actors.tools.cdp import CdpError, CdpSession, ErrorCode, is_context_gone
from messages.errors import BrowyError

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

Scope = Literal["viewport", "all"]

_SNAPSHOT_JS = resources.files("actors.tools").joinpath("snapshot.js").read_text("utf-8")
_WORLD_NAME = "browy"
#: How long an action waits for a navigation it started to commit and load.
_NAV_DEADLINE = 5.0
_POLL = 0.05
_ALLOWED_SCHEMES = ("http:", "https:")


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What ``inspect_page`` saw. ``text`` is what the model reads (page text is untrusted data)."""

    text: str
    doc_token: str
    count: int  # visible interactive elements on the page (all frames and shadow roots)
    listed: int  # entries in the window (scope + filter) before paging and budget
    shown: int  # entries printed in ``text``
    next_offset: int | None  # pass as ``offset`` for the next page; None when nothing is left
    truncated: bool  # the max_chars budget cut the list
    new: int  # elements marked ``*`` (first seen in this snapshot)
    inert: int  # controls behind an open modal left out (scope="viewport"; "all" lists them)
    url: str
    title: str
    ready_state: str
    elapsed_ms: float  # time spent inside the page


@dataclass(frozen=True, slots=True, kw_only=True)
class ElementPoint:
    """An element's click point in CSS px of the top-level viewport, after scrolling it in view."""

    x: float
    y: float
    covered_by: str | None  # e.g. "div#overlay" if another element is on top at every probe


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionResult:
    """What an index action did and what changed."""

    action: str
    index: int
    ok: bool
    url_before: str
    url_after: str
    title: str
    navigated: bool  # a navigation started by the action (cross- or same-document)
    same_document: bool  # the navigation kept the document (history.pushState, #hash)
    element: str | None  # the element's snapshot line after the action (secrets masked)
    note: str = ""

    def to_text(self) -> str:
        """A short report for the model."""
        parts = [f"{self.action} [{self.index}]: {'ok' if self.ok else 'failed'}"]
        if self.note:
            parts.append(self.note)
        if self.navigated and not self.same_document:
            parts.append(
                f"navigated to {self.url_after} (title {json.dumps(self.title)}); "
                "old indices are stale, call inspect_page"
            )
        elif self.url_after != self.url_before:
            parts.append(f"URL now {self.url_after}")
        if self.element:
            parts.append(f"now: {self.element}")
        return "; ".join(parts)


class ElementNotVisible(BrowyError):
    """The indexed element exists but has no visible box to act on (hidden, collapsed, 0x0)."""

    code = ErrorCode.INTERNAL
    default_wire_message = "element is not visible"

    @property
    def wire_message(self) -> str:
        return self.message


def _check_url(url: str, *, allow_file: bool) -> None:
    if url == "about:blank" or url.startswith(_ALLOWED_SCHEMES):
        return
    if allow_file and url.startswith("file:"):
        return
    raise CdpError(ErrorCode.NOT_ALLOWED_URL, f"refusing to drive {url[:100]!r}")


class PageTools:
    """Snapshot and index actions for one tab. Not safe for concurrent use by several tasks."""

    def __init__(self, cdp: CdpSession, *, allow_file: bool = False) -> None:
        self.cdp = cdp
        self.allow_file = allow_file
        self._context_id: int | None = None
        self._loader_id: str | None = None

    # --- the isolated world -------------------------------------------------------------------

    async def _create_world(self) -> int:
        tree = await self.cdp.send("Page.getFrameTree")
        frame = tree["frameTree"]["frame"]
        _check_url(frame.get("url", ""), allow_file=self.allow_file)
        res = await self.cdp.send(
            "Page.createIsolatedWorld", {"frameId": frame["id"], "worldName": _WORLD_NAME}
        )
        ctx = int(res["executionContextId"])
        await self._evaluate(ctx, _SNAPSHOT_JS)
        self._context_id = ctx
        self._loader_id = frame.get("loaderId")
        return ctx

    async def _evaluate(self, ctx: int, expression: str, *, page_changing: bool = False) -> Any:
        res = await self.cdp.send(
            "Runtime.evaluate",
            {
                "expression": expression,
                "contextId": ctx,
                "returnByValue": True,
                "awaitPromise": True,
            },
            page_changing=page_changing,
        )
        details = res.get("exceptionDetails")
        if details:
            exc = details.get("exception") or {}
            text = str(exc.get("description") or details.get("text") or "script error")
            if "STALE_REF" in text:
                raise CdpError(ErrorCode.STALE_REF, text.splitlines()[0])
            raise CdpError(ErrorCode.INTERNAL, f"in-page error: {text[:300]}")
        return res.get("result", {}).get("value")

    async def _call(self, expression: str, *, page_changing: bool = False) -> Any:
        """Evaluate in our world of the current document; STALE_REF if that document is gone."""
        # Re-attaching is safe: Chromium gives back the same named world (so the same token) for
        # the same document, and a new document has a new token, which the page side rejects.
        ctx = self._context_id if self._context_id is not None else await self._create_world()
        try:
            return await self._evaluate(ctx, expression, page_changing=page_changing)
        except CdpError as exc:
            if is_context_gone(exc):
                self._context_id = None
                raise CdpError(ErrorCode.STALE_REF, "the page changed since the snapshot") from exc
            raise

    # --- snapshot ------------------------------------------------------------------------------

    async def inspect_page(
        self,
        *,
        scope: Scope = "viewport",
        text_filter: str | None = None,
        offset: int = 0,
        limit: int | None = None,
        max_chars: int = 12_000,
    ) -> Snapshot:
        """Snapshot the visible interactive elements of the tab (see module docstring)."""
        opts = json.dumps(
            {
                "scope": scope,
                "text_filter": text_filter or "",
                "offset": offset,
                "limit": limit,
                "max_chars": max_chars,
            }
        )
        expr = f"__browy.snapshot({opts})"
        value: dict[str, Any] | None = None
        for _ in range(2):
            ctx = self._context_id if self._context_id is not None else await self._create_world()
            try:
                value = await self._evaluate(ctx, expr)
                break
            except CdpError as exc:
                if not is_context_gone(exc):
                    raise
                self._context_id = None  # a new document: make a world in it and try once more
        if value is None:
            raise CdpError(ErrorCode.STALE_REF, "the page kept changing during the snapshot")
        _check_url(value["url"], allow_file=self.allow_file)
        return Snapshot(
            text=value["text"],
            doc_token=value["token"],
            count=value["count"],
            listed=value["listed"],
            shown=value["shown"],
            next_offset=value["next_offset"],
            truncated=value["truncated"],
            new=value["new"],
            inert=value.get("inert", 0),
            url=value["url"],
            title=value["title"],
            ready_state=value["ready_state"],
            elapsed_ms=value["ms"],
        )

    # --- resolution ----------------------------------------------------------------------------

    async def resolve(self, index: int, doc_token: str, *, arm: bool = False) -> ElementPoint:
        """Scroll element ``index`` into view and return its click point (top-viewport CSS px).

        Raises ``CdpError(STALE_REF)`` when the document changed since the snapshot that gave the
        index, the element is gone or now shows another role/name; :class:`ElementNotVisible`
        when it has no visible box. ``arm``: also arm the click check read by ``_click_at``.
        """
        args = f"{int(index)}, {json.dumps(doc_token)}, {'true' if arm else 'false'}"
        # Scrolling changes the page's scroll position only; it is idempotent, so it is a read.
        res = await self._call(f"__browy.resolve({args})")
        if not res["ok"]:
            raise ElementNotVisible(f"{res['reason']}: {res['line']}")
        return ElementPoint(x=res["x"], y=res["y"], covered_by=res["covered_by"])

    async def _info(self, index: int, doc_token: str, *, after: bool = False) -> dict[str, Any]:
        """The element's facts; ``after`` an action on it: no identity check, and re-baseline."""
        info: dict[str, Any] = await self._call(
            f"__browy.info({int(index)}, {json.dumps(doc_token)}, {'true' if after else 'false'})"
        )
        return info

    # --- input primitives ------------------------------------------------------------------------

    async def _mouse(self, kind: str, x: float, y: float, *, buttons: int = 0) -> None:
        params: dict[str, Any] = {"type": kind, "x": x, "y": y, "buttons": buttons}
        if kind != "mouseMoved":
            params |= {"button": "left", "clickCount": 1}
        await self.cdp.send("Input.dispatchMouseEvent", params, page_changing=True)

    async def _click_at(self, p: ElementPoint) -> tuple[bool, str]:
        """Click at ``p`` (resolved with ``arm=True``); (landed on the element, note).

        The note names what the click hit when it missed; with no verdict (no click event reached
        our listener: the page navigated away, a frame took it) it is the covered-by note if any.
        """
        await self._mouse("mouseMoved", p.x, p.y)
        await self._mouse("mousePressed", p.x, p.y, buttons=1)
        await self._mouse("mouseReleased", p.x, p.y)
        rec = await self._clicked()
        covered = f"the click landed on {p.covered_by}, which covers the element"
        if rec is None or rec.get("hit") is None:
            return True, covered if p.covered_by else ""
        if rec["hit"]:
            return True, ""
        return False, covered if p.covered_by else f"the click landed on {rec['what']} instead"

    async def _clicked(self) -> dict[str, Any] | None:
        """Read back (and disarm) the click check; None when our world is gone (navigation)."""
        ctx = self._context_id
        if ctx is None:
            return None
        try:
            rec: dict[str, Any] | None = await self._evaluate(ctx, "__browy.clicked()")
        except CdpError as exc:
            if is_context_gone(exc):
                return None  # leave the context id: _report sees the same and waits for the load
            raise
        return rec

    async def _key(self, key: str, code: str, vk: int, **extra: Any) -> None:
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}
        down = {"type": "keyDown" if "text" in extra else "rawKeyDown", **base, **extra}
        await self.cdp.send("Input.dispatchKeyEvent", down, page_changing=True)
        up = {"type": "keyUp", **base, "modifiers": extra.get("modifiers", 0)}
        await self.cdp.send("Input.dispatchKeyEvent", up, page_changing=True)

    async def _select_all_and_delete(self) -> None:
        # Ctrl+A with the explicit editing command (the `commands` option of dispatchKeyEvent
        # runs it unless the page cancels the key event), then Backspace.
        await self._key("a", "KeyA", 65, modifiers=2, commands=["selectAll"])
        await self._key("Backspace", "Backspace", 8)

    # --- reporting -------------------------------------------------------------------------------

    async def _main_world_page(self) -> tuple[str, str, str]:
        res = await self.cdp.send(
            "Runtime.evaluate",
            {
                "expression": "[location.href, document.title, document.readyState]",
                "returnByValue": True,
            },
        )
        href, title, ready = res.get("result", {}).get("value") or ["", "", "loading"]
        return str(href), str(title), str(ready)

    async def _wait_new_document(self) -> tuple[str, str, bool]:
        """After a cross-document navigation started: wait (bounded) for it to commit and load."""
        deadline = time.monotonic() + _NAV_DEADLINE
        old_loader = self._loader_id
        self._context_id = None
        committed = False
        href, title = "", ""
        while time.monotonic() < deadline:
            if not committed:
                tree = await self.cdp.send("Page.getFrameTree")
                committed = tree["frameTree"]["frame"].get("loaderId") != old_loader
            if committed:
                try:
                    href, title, ready = await self._main_world_page()
                except CdpError as exc:
                    if not is_context_gone(exc):
                        raise
                    ready = "loading"
                if ready != "loading":
                    return href, title, True
            await asyncio.sleep(_POLL)  # polling with a deadline: no event subscription yet
        if not href:
            href, title, _ = await self._main_world_page()
        return href, title, committed

    async def _report(
        self,
        action: str,
        index: int,
        doc_token: str,
        before: dict[str, Any],
        note: str = "",
        *,
        ok: bool = True,
    ) -> ActionResult:
        nav0 = int(before["nav"])
        try:
            st = await self._call("__browy.settle(120)")
        except CdpError as exc:
            if exc.code is not ErrorCode.STALE_REF:
                raise
            st = None  # our world died: the document was replaced
        if st is not None and int(st["nav"]) == nav0:
            line = await self._line_after(index, doc_token)
            return ActionResult(
                action=action, index=index, ok=ok, url_before=before["url"],
                url_after=st["url"], title=st["title"], navigated=False, same_document=False,
                element=line, note=note,
            )  # fmt: skip
        if st is not None and st["same_document"]:
            line = await self._line_after(index, doc_token)
            return ActionResult(
                action=action, index=index, ok=ok, url_before=before["url"],
                url_after=st["url"], title=st["title"], navigated=True, same_document=True,
                element=line, note=note,
            )  # fmt: skip
        href, title, committed = await self._wait_new_document()
        if not committed:
            note = (note + "; " if note else "") + "a navigation started but has not loaded yet"
        return ActionResult(
            action=action, index=index, ok=ok, url_before=before["url"], url_after=href,
            title=title, navigated=True, same_document=False, element=None, note=note,
        )  # fmt: skip

    async def _line_after(self, index: int, doc_token: str) -> str | None:
        try:
            return str((await self._info(index, doc_token, after=True))["line"])
        except CdpError as exc:
            if exc.code is ErrorCode.STALE_REF:
                return None  # the action removed the element (a "delete" button, a closed menu)
            raise

    def _failed(self, action: str, index: int, before: dict[str, Any], note: str) -> ActionResult:
        return ActionResult(
            action=action, index=index, ok=False, url_before=before["url"],
            url_after=before["url"], title=before["title"], navigated=False,
            same_document=False, element=before["line"], note=note,
        )  # fmt: skip

    async def _before(self, index: int, doc_token: str) -> dict[str, Any]:
        info = await self._info(index, doc_token)
        _check_url(info["url"], allow_file=self.allow_file)
        return info

    # --- index actions ---------------------------------------------------------------------------

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

    async def hover_index(self, index: int, doc_token: str) -> ActionResult:
        """Move the mouse over element ``index``."""
        before = await self._before(index, doc_token)
        try:
            p = await self.resolve(index, doc_token)
        except ElementNotVisible as exc:
            return self._failed("hover", index, before, exc.message)
        await self._mouse("mouseMoved", p.x, p.y)
        return await self._report("hover", index, doc_token, before)

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

    async def type_index(
        self, index: int, doc_token: str, text: str, *, clear: bool = True, submit: bool = False
    ) -> ActionResult:
        """Focus ``index`` by clicking, optionally clear it, type ``text``, optionally press Enter.

        The typed text is never echoed in the result (it may be a secret); the element's value in
        ``element`` is masked for password and card fields.
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
        if text:
            await self.cdp.send("Input.insertText", {"text": text}, page_changing=True)
        if submit:
            await self._key("Enter", "Enter", 13, text="\r")
        typed = f"typed {len(text)} characters" + (" and pressed Enter" if submit else "")
        return await self._report(
            "type", index, doc_token, before, ", ".join(filter(None, [typed, note]))
        )

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

    async def select_index(self, index: int, doc_token: str, value_or_label: str) -> ActionResult:
        """Choose an option of the native ``<select>`` ``index`` by value or (partial) label."""
        before = await self._before(index, doc_token)
        if before["tag"] != "SELECT":
            return self._failed("select", index, before, "the element is not a native <select>")
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
