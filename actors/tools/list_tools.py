"""``find_by_scrolling``: find an item a long or virtualised list has not rendered yet.

A virtualised list keeps only the rows near the viewport in the page (10,000 orders, 30 rows in
the DOM), so ``inspect_page`` cannot list or filter for a row that is not rendered. This tool
scrolls the list — the page, or the scrolling box around element [index] — a viewport at a time
in the page (``list_find.js``), from where it is down to the end and then from the top back to
where it started, until the text appears; it reports progress between slices of about 1 s and
returns only the match: the snapshot lines of the controls that show the text, with their
numbers. Nothing else of the list reaches the model's context.

Scrolling only moves the view (like ``scroll``), so it is not a page-changing call.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from pydantic import Field

from actors.tools.index_tools import browser_of
from actors.tools.registry import Registry
from actors.tools.shared import untrusted
from actors.tools.tool_def import ToolArgs, ToolContext, ToolOutput

__all__ = ["FIND_BY_SCROLLING", "FindArgs", "register_list_tools", "words"]

FIND_BY_SCROLLING = (
    "Find an item that is not on screen yet in a long or virtualised list (where only the rows "
    "near the viewport exist in the page, so inspect_page cannot see the others): scrolls the "
    "list (the page, or the scrolling box around element [index]) step by step until an element "
    "whose text contains `text` appears, reporting progress, and lists just the matching "
    "elements with their numbers, without reading the whole list. If the list has a search or "
    "filter box, typing into it is usually faster."
)

#: How long one slice of scrolling runs in the page before the host reports progress.
SLICE_MS = 1000
#: How long to wait after a scroll for a list that renders late (debounced) to change.
SETTLE_MS = 150


class FindArgs(ToolArgs):
    text: str = Field(
        ...,
        min_length=1,
        description='the words to look for (case-insensitive, whole words: "Order #12" is not '
        'found in "Order #120")',
    )
    index: int | None = Field(
        None, ge=0, description="the list, or any element in it (default: the page's scroller)"
    )
    max_seconds: float = Field(60.0, ge=1.0, le=300.0, description="give up after this long")


def words(text: str) -> re.Pattern[str]:
    """``text`` as whole words, case-insensitive (as ``list_find.js`` matches it)."""
    needle = " ".join(text.split())
    head = r"(?<!\w)" if re.match(r"\w", needle) else ""
    tail = r"(?!\w)" if re.search(r"\w$", needle) else ""
    return re.compile(head + re.escape(needle) + tail, re.IGNORECASE)


def _share(res: dict[str, Any]) -> str:
    height, view = max(1, int(res["height"])), int(res["view"])
    seen = min(100, round(100 * (int(res["top"]) + view) / height))
    return f"{seen}%" if not res.get("wrapped") else f"the end, then {seen}% from the top"


def register_list_tools(reg: Registry) -> None:
    """Add ``find_by_scrolling`` to ``reg``."""

    @reg.register(
        "find_by_scrolling", FIND_BY_SCROLLING, FindArgs, page_changing=False,
        retry_on_timeout=False,
    )  # fmt: skip
    async def find_by_scrolling(args: FindArgs, ctx: ToolContext) -> ToolOutput:
        browser = browser_of(ctx)
        page = browser.page()
        token = browser.token() if args.index is not None else ""
        index = int(args.index or 0)
        search = await page.find_start(index, token)
        state: dict[str, Any] = {
            "id": search["id"], "text": args.text, "start": search["top"],
            "wrapped": False, "probes": 0, "renders": 0, "budget_ms": SLICE_MS,
            "settle_ms": SETTLE_MS,
        }  # fmt: skip
        deadline = time.monotonic() + args.max_seconds
        scrolls = 0
        while True:
            res = await page.find_step(state)
            scrolls += int(res["steps"])
            state.update(probes=res["probes"], renders=res["renders"], wrapped=res["wrapped"])
            if res["found"]:
                break
            where = f"{scrolls} scrolls, at y={res['top']} of {res['height']}"
            if res["done"]:
                text = f"not found: scrolled through the whole list ({where}); no element shows "
                text += json.dumps(args.text)
                return ToolOutput(content=text, summary=f"{args.text!r} not found"[:200])
            if time.monotonic() >= deadline:
                text = f"not found in {args.max_seconds:g} s ({where}, {_share(res)} of the "
                text += "list searched); call again to go on from here, or use the list's search"
                return ToolOutput(content=text, summary=f"{args.text!r} not found yet"[:200])
            if ctx.progress is not None:
                await ctx.progress(
                    f"find_by_scrolling {json.dumps(args.text)[:60]}: {_share(res)} of the "
                    "list searched"
                )
        snap = await browser.snapshot(scope="viewport", text_filter=args.text)
        wanted = words(args.text)
        lines = [ln for ln in snap.text.splitlines() if wanted.search(ln)]
        found = f"found after {scrolls} scrolls (y={res['top']} of {res['height']}): "
        found += json.dumps(res["text"])
        if not any(ln.lstrip("*").startswith("[") for ln in lines):
            found += "\n(it is text, not a control: inspect_page lists the controls around it)"
        return ToolOutput(
            content=untrusted("\n".join([found, *lines])),
            summary=f"found {args.text!r} after {scrolls} scrolls"[:200],
        )
