"""Tabs an action opened: popups and links opened in a new tab, said in the action's result.

An action that can open a tab (a click, a key press, a form submission, a script) looks at the
browser's tabs before and after it: the tabs that appeared meanwhile are the ones it opened.
The result says so and which — the model (or an MCP client, whose own tabs they become) then
switches to one, or not; nothing follows a popup on its own. (Chrome's ``openerTabId`` cannot
be used: for a click dispatched on a background tab it names the active tab instead.)
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

__all__ = ["ADDRESS_WAIT_S", "OPENING_TOOLS", "note_of", "opened_since", "tab_ids"]

#: How long a new tab's address is waited for before the note names the tab without it.
ADDRESS_WAIT_S = 1.0

#: The tools whose action may open a tab.
OPENING_TOOLS = frozenset(
    {
        "click_index", "click_element", "press_key", "press_keys", "submit_form",
        "type_index", "fill_input", "select_index", "check_index", "evaluate_js",
    }
)  # fmt: skip


async def tab_ids(tabs: Any) -> set[int] | None:
    """The ids of the browser's tabs now, or None when they cannot be listed."""
    try:
        listed = await tabs.list()
    except Exception:  # a browser that cannot say: no note, the action stands
        return None
    return {t["tabId"] for t in listed if isinstance(t.get("tabId"), int)}


async def opened_since(tabs: Any, before: set[int] | None) -> list[tuple[int, str]]:
    """(id, url) of the tabs that are there now and were not *before*. A tab that shows no
    address yet (just opened, its first page on its way) is asked about again for up to
    :data:`ADDRESS_WAIT_S`: the model needs the address to tell the tab from another."""
    if before is None:
        return []
    deadline = time.monotonic() + ADDRESS_WAIT_S
    while True:
        try:
            listed = await tabs.list()
        except Exception:
            return []
        opened = [
            (int(t["tabId"]), str(t.get("url") or ""))
            for t in listed
            if isinstance(t.get("tabId"), int) and t["tabId"] not in before
        ]
        if all(url for _, url in opened) or time.monotonic() >= deadline:
            return opened
        await asyncio.sleep(0.1)


def note_of(opened: list[tuple[int, str]]) -> str:
    """What the tool's result says of the tabs its action opened."""
    listed = "; ".join(f"tab {tab} {url}".rstrip() for tab, url in opened)
    return (
        f"This action opened a new tab ({listed}). You are still on the tab you were on: "
        "call switch_tab with its id to work there."
    )
