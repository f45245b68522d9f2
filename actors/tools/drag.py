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
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from actors.tools.page_types import ActionResult, ElementNotVisible, ElementPoint
from actors.tools.page_world import PageWorld

__all__ = ["drag_index"]

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
