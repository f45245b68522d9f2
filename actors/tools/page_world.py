"""The isolated world behind :class:`~actors.tools.page.PageTools`, and what it reads and sends.

:class:`PageWorld` runs ``snapshot.js`` in an isolated world of the tab's main frame, takes the
snapshot, resolves indices to click points, holds the input primitives (mouse, keyboard, the
verified click) and reports what an action changed (a settle, a same-document or a new-document
navigation). :class:`~actors.tools.page.PageTools` builds the index actions on it. The rules
(document identity, stale references, verified clicks) are in :mod:`actors.tools.page`'s docstring.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from actors.tools.cdp import CdpError, CdpSession, ErrorCode, is_context_gone
from actors.tools.closed_roots import adopt_closed_roots
from actors.tools.download_tools import download_mark_of
from actors.tools.frame_blocks import FrameBlocks, frame_blocks
from actors.tools.frames import Frames, FrameWorld
from actors.tools.page_types import (
    _SNAPSHOT_JS,
    _WORLD_NAME,
    ActionResult,
    ElementNotVisible,
    ElementPoint,
    Scope,
    Snapshot,
    _check_url,
)

__all__ = ["PageWorld"]

#: How long an action waits for a navigation it started to commit and load.
_NAV_DEADLINE = 5.0
_POLL = 0.05


class PageWorld:
    """The isolated world of one tab: snapshot, resolution, input primitives and reporting.

    :class:`~actors.tools.page.PageTools` adds the index actions. Not safe for concurrent use.
    """

    def __init__(
        self,
        cdp: CdpSession,
        *,
        allow_file: bool = False,
        frame_tokens: dict[int, str] | None = None,
    ) -> None:
        self.cdp = cdp
        self.allow_file = allow_file
        self._context_id: int | None = None
        self._loader_id: str | None = None
        #: The cross-origin frames (actors.tools.frames) and the document token of each slot's
        #: last snapshot (kept by the caller across tool calls, like the top document's token).
        self.frames = Frames(cdp)
        self.frame_tokens: dict[int, str] = {} if frame_tokens is None else frame_tokens
        #: While an action works on an element of a frame: that frame's world, and the top
        #: document's token (see PageTools._in_frame).
        self._active: tuple[FrameWorld, str] | None = None

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
        if frame.get("loaderId") != self._loader_id:
            self.frames.forget()  # another top document: its frame slots are other frames
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

    async def _call(
        self, expression: str, *, page_changing: bool = False, top: bool = False
    ) -> Any:
        """Evaluate in our world of the current document — of the frame an action works in,
        unless ``top`` — STALE_REF if that document is gone."""
        if self._active is not None and not top:
            return await self.frames.evaluate(
                self._active[0], expression, page_changing=page_changing
            )
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
        opts = {
            "scope": scope,
            "text_filter": text_filter or "",
            "offset": offset,
            "limit": limit,
            "max_chars": max_chars,
        }
        expr = f"__browy.snapshot({json.dumps(opts)})"
        redo = f"__browy.snapshot({json.dumps(opts | {'redo': True})})"
        value: dict[str, Any] | None = None
        for _ in range(2):
            ctx = self._context_id if self._context_id is not None else await self._create_world()
            try:
                value = await self._evaluate(ctx, expr)
                # Closed shadow roots (actors.tools.closed_roots): adopt those of the hosts it
                # found and look again; a root inside an adopted one is found the next round.
                for _round in range(3):
                    if not value["closed_hosts"] or not await adopt_closed_roots(self.cdp, ctx):
                        break
                    value = await self._evaluate(ctx, redo)
                break
            except CdpError as exc:
                if not is_context_gone(exc):
                    raise
                self._context_id = None  # a new document: make a world in it and try once more
        if value is None:
            raise CdpError(ErrorCode.STALE_REF, "the page kept changing during the snapshot")
        _check_url(value["url"], allow_file=self.allow_file)
        extra = FrameBlocks()
        if value["frames"] and self._context_id is not None:
            extra = await frame_blocks(
                self.frames, self._context_id, value["frames"], opts, self.frame_tokens
            )
        return Snapshot(
            text="\n".join([value["text"], *extra.lines]),
            doc_token=value["token"],
            count=value["count"] + extra.count,
            listed=value["listed"] + extra.listed,
            shown=value["shown"] + extra.shown,
            next_offset=value["next_offset"],
            truncated=value["truncated"],
            new=value["new"] + extra.new,
            inert=value.get("inert", 0),
            url=value["url"],
            title=value["title"],
            ready_state=value["ready_state"],
            elapsed_ms=value["ms"] + extra.ms,
        )

    # --- resolution ----------------------------------------------------------------------------

    async def resolve(
        self, index: int, doc_token: str, *, arm: bool = False, scroll: bool = True
    ) -> ElementPoint:
        """Scroll element ``index`` into view and return its click point (top-viewport CSS px).

        Raises ``CdpError(STALE_REF)`` when the document changed since the snapshot that gave the
        index, the element is gone or now shows another role/name; :class:`ElementNotVisible`
        when it has no visible box. ``arm``: also arm the click check read by ``_click_at``;
        ``scroll=False``: where it is now, even off screen.
        """
        flags = f"{'true' if arm else 'false'}, {'true' if scroll else 'false'}"
        args = f"{int(index)}, {json.dumps(doc_token)}, {flags}"
        # Scrolling changes the page's scroll position only; it is idempotent, so it is a read.
        res = await self._call(f"__browy.resolve({args})")
        if not res["ok"]:
            raise ElementNotVisible(f"{res['reason']}: {res['line']}")
        x, y = await self._to_top(float(res["x"]), float(res["y"]))
        return ElementPoint(x=x, y=y, covered_by=res["covered_by"])

    async def _to_top(self, x: float, y: float) -> tuple[float, float]:
        """Pixels of the frame an action works in -> top-viewport pixels (after its scroll)."""
        if self._active is None:
            return x, y
        fw, top_token = self._active
        if self._context_id is None:  # the top document went away during the action
            raise CdpError(ErrorCode.STALE_REF, "the page changed since the snapshot")
        box = await self.frames.box(fw.slot, top_token, self._context_id)
        return x + float(box["x"]), y + float(box["y"])

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
        elif buttons:
            params["button"] = "left"  # a move with the button held: what starts a drag
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
        missed = rec.get("why") or f"the click landed on {rec['what']} instead"
        return False, covered if p.covered_by and not rec.get("why") else missed

    async def _clicked(self) -> dict[str, Any] | None:
        """Read back (and disarm) the click check; None when our world is gone (navigation)."""
        if self._active is not None:
            try:
                rec_in_frame: dict[str, Any] | None = await self._call("__browy.clicked()")
            except CdpError as exc:
                if exc.code is ErrorCode.STALE_REF:
                    return None  # the frame navigated
                raise
            return rec_in_frame
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

    async def _wait_new_document(
        self, downloads: int | None = None
    ) -> tuple[str, str, bool | None]:
        """After a cross-document navigation started: wait (bounded) for it to commit and load.
        ``committed`` None: it became a download (a form POST answered with a file: a download
        newer than the mark ``downloads`` read before the action); the document stays."""
        deadline = time.monotonic() + _NAV_DEADLINE
        old_loader, old_context = self._loader_id, self._context_id
        self._context_id = None
        committed = False
        href, title = "", ""
        while time.monotonic() < deadline:
            if not committed:
                tree = await self.cdp.send("Page.getFrameTree")
                committed = tree["frameTree"]["frame"].get("loaderId") != old_loader
            if (
                not committed
                and downloads is not None
                and await download_mark_of(self.cdp) > downloads
            ):
                self._context_id = old_context  # the same document, the same world
                return "", "", None
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
        href, title, committed = await self._wait_new_document(before.get("downloads"))
        if committed is None:  # a download, not a new page: the element numbers stay valid
            note = (note + "; " if note else "") + "it started a download; the page stays"
            return ActionResult(
                action=action, index=index, ok=ok, url_before=before["url"],
                url_after=before["url"], title=before["title"], navigated=False,
                same_document=False, element=await self._line_after(index, doc_token), note=note,
            )  # fmt: skip
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
        if (mark := await download_mark_of(self.cdp)) >= 0:
            info["downloads"] = mark  # to tell a navigation that turns into a download
        return info
