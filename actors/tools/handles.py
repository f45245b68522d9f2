"""Element handles for the tools that need a DOM object of an indexed element.

``snapshot.js`` keeps index -> element in the isolated world ``browy`` and hands out no handles.
Its ``focus(idx, token)`` calls ``el.focus()``; for the length of one evaluation we replace
``focus`` on that world's own prototypes (an isolated world has its own JS wrappers, so the page
never sees it) and catch the element as ``this``. The remote object gives the backend node id
(``DOM.describeNode``) for ``DOM.setFileInputFiles`` and a main-world object (``DOM.resolveNode``)
for ``DOMDebugger.getEventListeners``. Handles are released with their object group.

The index tools find the turn's browser in ``ctx.state["browser"]``
(:class:`actors.browser.tool_runner.TurnBrowser`, seen here through the small
:class:`IndexBrowser` protocol so this module does not import its caller), and its document token:
an index of another document gives ``STALE_REF`` (protocol.md section 5).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Protocol

from actors.tools.cdp import CdpError, CdpSession
from actors.tools.frames import slot_of
from actors.tools.page import ActionResult, PageTools
from actors.tools.page_types import _WORLD_NAME
from actors.tools.shared import untrusted
from actors.tools.tool_def import ToolContext, ToolError, ToolOutput
from messages.errors import ErrorCode

__all__ = [
    "GROUP",
    "IndexBrowser",
    "action_output",
    "element_handle",
    "element_object",
    "index_browser",
    "release_handles",
    "selector_object",
]

GROUP = "browy-tools"


class IndexBrowser(Protocol):
    """What the index tools need of the turn's browser (``TurnBrowser`` has it)."""

    tab_id: int | None
    tokens: dict[int, str]

    def page(self) -> PageTools: ...
    def token(self) -> str: ...


def action_output(browser: IndexBrowser, result: ActionResult) -> ToolOutput:
    """What an index action tells the model: its report, as an error when it did not do what
    was asked. A new document drops the tab's snapshot token: its element numbers are new (an
    SPA route change keeps the document, and the numbers of elements that survive it)."""
    text = result.to_text()
    if result.navigated and not result.same_document and browser.tab_id is not None:
        browser.tokens.pop(browser.tab_id, None)
    if not result.ok:
        raise ToolError(text, code=ErrorCode.INTERNAL)
    return ToolOutput(content=untrusted(text), summary=text.splitlines()[0][:200])


def index_browser(ctx: ToolContext) -> IndexBrowser:
    browser = ctx.state.get("browser")
    if browser is None or not callable(getattr(browser, "token", None)):
        raise ToolError("this session may not drive tabs", code=ErrorCode.NO_CAPABILITY)
    result: IndexBrowser = browser
    return result


_JS_CATCH = """
((idx, tok) => {
  if (typeof __browy === 'undefined') throw new Error('STALE_REF: the page changed');
  __browy.info(idx, tok);
  let el = null;
  const protos = [HTMLElement.prototype, SVGElement.prototype];
  const saved = protos.map((p) => p.focus);
  for (const p of protos) p.focus = function () { el = this; };
  try { __browy.focus(idx, tok); } finally { protos.forEach((p, i) => { p.focus = saved[i]; }); }
  if (!el) throw new Error('NO_HANDLE: element [' + idx + '] is in a frame');
  if (el.tagName === 'LABEL' && el.control) el = el.control;
  return el;
})(%d, %s)
"""


async def element_object(
    cdp: CdpSession, index: int, token: str, *, context_id: int | None = None
) -> str:
    """A remote object id (isolated world, group ``browy-tools``) of element ``index``: of the
    top document, or of the frame whose world is ``context_id`` (reached through ``cdp``)."""
    if context_id is None:
        tree = await cdp.send("Page.getFrameTree")
        frame_id = tree["frameTree"]["frame"]["id"]
        # Same name, same document -> the same world as inspect_page's (see actors.tools.page).
        world = await cdp.send(
            "Page.createIsolatedWorld", {"frameId": frame_id, "worldName": _WORLD_NAME}
        )
        context_id = int(world["executionContextId"])
    res = await cdp.send(
        "Runtime.evaluate",
        {
            "expression": _JS_CATCH % (int(index), json.dumps(token)),
            "contextId": context_id,
            "objectGroup": GROUP,
        },
    )
    details = res.get("exceptionDetails")
    if details:
        text = str((details.get("exception") or {}).get("description") or details.get("text"))
        if "STALE_REF" in text:
            raise CdpError(ErrorCode.STALE_REF, text.splitlines()[0])
        raise ToolError(text.splitlines()[0][:300])
    return str(res["result"]["objectId"])


async def selector_object(cdp: CdpSession, selector: str, timeout: float) -> str:
    """A remote object id (main world, group ``browy-tools``) of the first match of ``selector``;
    ToolError when nothing matches."""
    res = await cdp.send(
        "Runtime.evaluate",
        {"expression": f"document.querySelector({json.dumps(selector)})", "objectGroup": GROUP},
        timeout=timeout,
    )
    found = res.get("result", {}).get("objectId")
    if res.get("exceptionDetails") or not found:
        raise ToolError(f"no element matches {selector!r}")
    return str(found)


async def release_handles(cdp: CdpSession) -> None:
    with contextlib.suppress(CdpError):  # the document went away, and its objects with it
        await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": GROUP})


@contextlib.asynccontextmanager
async def element_handle(
    page: PageTools, index: int, token: str
) -> AsyncIterator[tuple[CdpSession, str]]:
    """The session that reaches element ``index`` (the tab's, or a cross-origin frame's: a child
    session for another site) and a handle of the element in it, released after the block."""
    if slot_of(index) == 0:
        cdp: CdpSession = page.cdp
        try:
            yield cdp, await element_object(cdp, index, token)
        finally:
            await release_handles(cdp)
        return
    async with page._in_frame(index, token) as frame_token:
        assert page._active is not None
        fw = page._active[0]
        try:
            obj = await element_object(fw.session, index, frame_token, context_id=fw.context_id)
            yield fw.session, obj
        finally:
            await release_handles(fw.session)
