"""Drag and drop, element to element, with trusted input (``drag_index``).

Two kinds of drag live on the web, and one gesture serves both:

- **HTML5 drag and drop** (``draggable``, ``dragstart``/``dragover``/``drop``): once the mouse
  moves with its button down, the browser starts a drag of its own — in a headed browser an OS
  drag loop that synthetic mouse events cannot steer. With ``Input.setInterceptDrags`` Chrome
  reports the drag instead (``Input.dragIntercepted{data}``) and we finish it with
  ``Input.dispatchDragEvent`` ``dragEnter``/``dragOver``/``drop`` at the target, as Puppeteer does.
- **Pointer-event drags** (sortable lists, kanban boards, sliders): the page follows
  ``pointerdown``/``pointermove``/``pointerup`` itself. No drag is intercepted; the moves go on to
  the target (in steps, past the libraries' activation distance, with a last small move over the
  target) and the button is released there.

Every event is a real ``Input.*`` event at coordinates of the top-level viewport (trusted). Both
elements are resolved like a click's (scrolled into view, STALE_REF rules); the target must be on
screen once the source is. ``Input.dragIntercepted`` reaches the host as a ``cdp.event``: our
extension forwards the ``Input`` domain's events while interception is on.

**Dropping files** (``drop_files``, drop zones): files from the sandbox are dragged in from
outside the page, as from a file manager: ``Input.dispatchDragEvent`` ``dragEnter``/``dragOver``
with the files' paths, then — only if the page accepted the drag over the element (its
``dragover`` handler called ``preventDefault``, or the element is a file input) — ``drop``; else
``dragCancel``, so a page that takes no files never gets one (nor does the browser open it). A
listener of our isolated world reads back whether the drop arrived and the page took it. A drop
zone the snapshot does not list (a bare ``<div>`` with no control) is found by its visible text.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

from actors.tools.cdp import CdpError, ErrorCode
from actors.tools.page_types import ActionResult, ElementNotVisible, ElementPoint
from actors.tools.page_world import PageWorld

__all__ = ["drag_index", "drop_files", "drop_on_text"]

#: Moves from the source to the target (the libraries' activation distances are 3-10 px).
_STEPS = 12
#: Pause between two moves, as a hand's: some libraries read moves per animation frame.
_PACE_S = 0.016


async def drag_index(page: PageWorld, source: int, target: int, doc_token: str) -> ActionResult:
    """Drag element ``source`` onto element ``target`` (see the module docstring)."""
    before = await page._before(source, doc_token)
    try:
        to = await page.resolve(target, doc_token)
        src = await page.resolve(source, doc_token)
        to = await page.resolve(target, doc_token, scroll=False)
    except ElementNotVisible as exc:
        return page._failed("drag", source, before, exc.message)
    intercepted: list[dict[str, Any]] = []

    def on_event(method: str, params: dict[str, Any]) -> None:
        if method == "Input.dragIntercepted":
            intercepted.append(params.get("data") or {})

    unsubscribe = page.cdp.subscribe(on_event)  # type: ignore[attr-defined]
    if inspect.isawaitable(unsubscribe):
        unsubscribe = await unsubscribe
    send = page.cdp.send
    await send("Input.setInterceptDrags", {"enabled": True}, page_changing=True)
    try:
        kind = await _gesture(page, src, to, intercepted)
    finally:
        unsubscribe()
        await send("Input.setInterceptDrags", {"enabled": False}, page_changing=True)
    note = f"dragged [{source}] onto [{target}] ({kind})"
    result = await page._report("drag", source, doc_token, before, note)
    target_line = await page._line_after(target, doc_token)
    if target_line and not (result.navigated and not result.same_document):
        note += f"; target now: {target_line}"
        return ActionResult(
            action=result.action, index=result.index, ok=result.ok,
            url_before=result.url_before, url_after=result.url_after, title=result.title,
            navigated=result.navigated, same_document=result.same_document,
            element=result.element, note=note,
        )  # fmt: skip
    return result


async def _gesture(
    page: PageWorld, src: ElementPoint, to: ElementPoint, intercepted: list[dict[str, Any]]
) -> str:
    """Press on ``src``, move to ``to``, and drop there; which kind of drag it was."""
    await page._mouse("mouseMoved", src.x, src.y)
    await page._mouse("mousePressed", src.x, src.y, buttons=1)
    for i in range(1, _STEPS + 1):
        x = src.x + (to.x - src.x) * i / _STEPS
        y = src.y + (to.y - src.y) * i / _STEPS
        await page._mouse("mouseMoved", x, y, buttons=1)
        if intercepted:
            break
        await asyncio.sleep(_PACE_S)  # pacing the input, not waiting for a condition
    if intercepted:
        data = intercepted[0]
        for kind in ("dragEnter", "dragOver", "drop"):
            await page.cdp.send(
                "Input.dispatchDragEvent",
                {"type": kind, "x": to.x, "y": to.y, "data": data},
                page_changing=True,
            )
        await page._mouse("mouseReleased", to.x, to.y)
        return "an HTML5 drag"
    await page._mouse("mouseMoved", to.x + 1, to.y + 1, buttons=1)  # hover the target once more
    await asyncio.sleep(_PACE_S)
    await page._mouse("mouseMoved", to.x, to.y, buttons=1)
    await page._mouse("mouseReleased", to.x, to.y)
    return "a pointer drag"


_DROP_ARM = """(() => {
  const r = globalThis.__browyDrop || (globalThis.__browyDrop = {});
  if (!r.armed) {
    r.armed = true;
    addEventListener('dragover', (e) => { r.over = e; }, true);
    addEventListener('drop', (e) => {
      r.drop = e;
      r.files = e.dataTransfer ? e.dataTransfer.files.length : 0;
    }, true);
  }
  r.over = null; r.drop = null; r.files = 0;
  return true;
})()"""

_DROP_READ = """(() => {
  const r = globalThis.__browyDrop || {};
  const t = r.over && r.over.target;
  const input = !!(t && t.tagName === 'INPUT' && t.type === 'file');
  return { accepted: !!(r.over && (r.over.defaultPrevented || input)), dropped: !!r.drop,
    taken: !!(r.drop && (r.drop.defaultPrevented || input)), files: r.files || 0 };
})()"""


async def drop_files(page: PageWorld, index: int, files: list[str], doc_token: str) -> ActionResult:
    """Drop ``files`` (absolute paths in the sandbox) on element ``index`` (module docstring)."""
    before = await page._before(index, doc_token)
    try:
        at = await page.resolve(index, doc_token)
    except ElementNotVisible as exc:
        return page._failed("drop", index, before, exc.message)
    ok, note = await _drop_at(page, at.x, at.y, files)
    if not ok and at.covered_by:
        note += f"; {at.covered_by} covers it"
    if not ok and "refused" in note:
        return page._failed("drop", index, before, note)
    return await page._report("drop", index, doc_token, before, note, ok=ok)


async def drop_on_text(page: PageWorld, text: str, files: list[str]) -> tuple[bool, str]:
    """Drop ``files`` on the smallest visible element of the top document showing ``text`` (a
    drop zone the snapshot does not list: it has no control); (done, a report)."""
    at = await page._call(_FIND_TEXT % json.dumps(text), top=True)
    if not at:
        return False, f"no visible element shows {json.dumps(text)}"
    url = at["url"]
    ok, note = await _drop_at(page, float(at["x"]), float(at["y"]), files, top=True)
    try:
        now = await page._call("location.href", top=True)
    except CdpError as exc:
        if exc.code is not ErrorCode.STALE_REF:
            raise
        now = None
    if now != url:
        note += "; the page navigated: call inspect_page"
    return ok, f"drop on {at['what']}: {'ok' if ok else 'failed'}; {note}"


_FIND_TEXT = """((want) => {
  const w = want.toLowerCase();
  let best = null, area = Infinity;
  for (const el of document.body ? document.body.querySelectorAll('*') : []) {
    const label = ((el.getAttribute('aria-label') || '') + ' ' + el.textContent).toLowerCase();
    if (!label.includes(w)) continue;
    const r = el.getBoundingClientRect();
    const a = r.width * r.height;
    if (a > 0 && a < area) { best = el; area = a; }
  }
  if (!best) return null;
  best.scrollIntoView({ block: 'center', inline: 'center' });
  const r = best.getBoundingClientRect();
  const what = '<' + best.localName + '> ' + JSON.stringify(best.textContent.trim().slice(0, 60));
  return { x: r.left + r.width / 2, y: r.top + r.height / 2, url: location.href, what };
})(%s)"""


async def _drop_at(
    page: PageWorld, x: float, y: float, files: list[str], *, top: bool = False
) -> tuple[bool, str]:
    """Drag ``files`` in over (x, y) and drop them if the page accepts; (done, note)."""
    await page._call(_DROP_ARM, top=top)
    data = {"items": [], "files": files, "dragOperationsMask": 1}  # 1: copy

    async def drag(kind: str) -> None:
        params = {"type": kind, "x": x, "y": y, "data": data}
        await page.cdp.send("Input.dispatchDragEvent", params, page_changing=True)

    await drag("dragEnter")
    await drag("dragOver")
    rec = await page._call(_DROP_READ, top=top)
    if not rec["accepted"]:
        await drag("dragCancel")
        return False, "the element does not take dropped files (the page refused the drag over it)"
    await drag("drop")
    try:
        rec = await page._call(_DROP_READ, top=top)
    except CdpError as exc:
        if exc.code is not ErrorCode.STALE_REF:
            raise
        return True, f"dropped {len(files)} file(s); the page went on to another document"
    if not rec["dropped"]:
        return False, "the drop did not reach the page"
    if not rec["taken"]:
        return False, f"dropped {rec['files']} file(s), but the page did not handle the drop"
    return True, f"dropped {rec['files']} file(s); the page took them"
