"""Typing that checks what it did: the host side of ``field_check.js`` for ``type_index``.

After the keys went in, the field is read back in the page: the same text, or the same letters
and digits as a mask shows them, is done; a date, time, month, week, colour, range or number field
that did not take the keys gets the value its own picker would set (with ``input`` and
``change``); anything else is reported as not done with what the field holds now — never "ok"
for an effect that did not happen. A secret field's value is never read out of the page.
"""

from __future__ import annotations

import json

from actors.tools.cdp import CdpError, ErrorCode
from actors.tools.page_world import PageWorld

__all__ = ["remember_field", "typed_check"]


async def remember_field(page: PageWorld, index: int, doc_token: str) -> None:
    """Keep the field's value (in the page) to compare with after typing."""
    await page._call(f"__browyField.remember({int(index)}, {json.dumps(doc_token)})")


async def typed_check(
    page: PageWorld, index: int, doc_token: str, text: str, *, clear: bool
) -> tuple[bool, str]:
    """Did the field take ``text``? (done, a note for the model; "" when it holds just that)."""
    args = f"{int(index)}, {json.dumps(doc_token)}, {json.dumps(text)}, {json.dumps(clear)}"
    # It may set the value the way the field's picker would: a change to the page.
    try:
        res = await page._call(f"__browyField.typed({args})", page_changing=True)
    except CdpError as exc:
        if exc.code is not ErrorCode.STALE_REF:
            raise
        # An editor that rebuilds its DOM on each key, or typing that navigated: the element
        # is gone, and what it took cannot be read back.
        return True, "the field was replaced while typing; not read back"
    shows = res.get("shows")
    held = f" (it shows {json.dumps(shows)})" if shows not in (None, "") else ""
    if res.get("fixed"):
        return True, (
            "the field did not take typed keys, so its value was set as its picker would set "
            f"it, with input and change events{held}"
        )
    if res.get("done"):
        return True, f"the field formats it as {json.dumps(shows)}" if held else ""
    holds = f"it holds {json.dumps(shows)}" if shows is not None else "its value is not shown"
    return False, f"not done: {res.get('why', 'the field did not take it')}; {holds}"
