"""Choosing an option of an ARIA combobox by its label, in one call (``select_index`` on a
control that is not a native ``<select>``).

A custom dropdown (ARIA 1.2 ``role=combobox``, or a button with ``aria-haspopup=listbox``; not a
menu button, ``aria-haspopup=true``, whose items are commands for ``click_index``) has no
option list to set: its options are ``role=option`` elements of a ``role=listbox`` popup that
exists only once it is open — often rendered into a portal at the end of ``<body>``, made anew on
each opening, and for an editable combobox filtered by what is typed. So we do what a user does:

1. open it: an editable combobox is clicked, cleared and given the label as text (the page
   filters its list); any other is clicked. If no option shows, ArrowDown (the ARIA keyboard way
   to open one) is pressed once;
2. find the option, by exact label, then case-insensitively, then by a label containing the
   text, among the visible options of the popup the combobox names (``aria-controls``,
   ``aria-owns``), else of any visible listbox of its document; scroll it into view in its list;
3. click it with trusted mouse input, and read back: the click must reach the option and the
   combobox must then show the label (or the option be ``aria-selected``), else ``ok=False``
   saying what it shows. No match: ``ok=False`` with the labels on offer (the list left open).

The popup is waited for in the page, a few frames at a time (``__browy.settle``), for at most
``_ROUNDS`` rounds: lists that load their options from the network get that long.
"""

from __future__ import annotations

import json
from typing import Any

from actors.tools.page_types import ActionResult, ElementNotVisible
from actors.tools.page_world import PageWorld

__all__ = ["choose_option"]

#: Rounds of about 120 ms waiting for the popup's options to show (after opening, and again
#: after ArrowDown).
_ROUNDS = 12

#: In our isolated world: the popup options of combobox `idx`; `want` a label to find (with
#: `wide`: any visible listbox of the document counts). The chosen option is kept for `_READ`.
_FIND = """((idx, token, want, wide) => {
  const el = __browy.element(idx, token);
  const text = (o) => (o.getAttribute('aria-label') || o.textContent).replace(/\\s+/g, ' ').trim();
  const visible = (o) => { const r = o.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(o).visibility !== 'hidden'; };
  const role = el.getAttribute('role'), popup = el.getAttribute('aria-haspopup') || '';
  if (role !== 'combobox' && popup !== 'listbox') return { state: 'not_combobox' };
  const root = el.getRootNode();
  const ids = ['aria-controls', 'aria-owns'].map((a) => el.getAttribute(a) || '').join(' ')
    .split(/\\s+/).filter(Boolean);
  let lists = ids.map((id) => root.getElementById(id) || document.getElementById(id))
    .filter((l) => l && visible(l));
  if (!lists.length && wide) {
    lists = [...new Set([...root.querySelectorAll('[role=listbox]'),
      ...document.querySelectorAll('[role=listbox]')])].filter(visible);
  }
  const opts = lists.flatMap((l) => l.matches('[role=option]') ? [l]
    : [...l.querySelectorAll('[role=option]')]).filter(visible);
  if (!opts.length) return { state: 'closed' };
  const w = want.replace(/\\s+/g, ' ').trim(), wl = w.toLowerCase();
  const o = opts.find((o) => text(o) === w) || opts.find((o) => text(o).toLowerCase() === wl) ||
    opts.find((o) => o.getAttribute('data-value') === w) ||
    opts.find((o) => text(o).toLowerCase().includes(wl));
  if (!o) return { state: 'nomatch', options: opts.slice(0, 30).map(text) };
  if (o.getAttribute('aria-disabled') === 'true') return { state: 'disabled', label: text(o) };
  o.scrollIntoView({ block: 'nearest', behavior: 'instant' });
  const r = o.getBoundingClientRect();
  const chosen = { option: o, hit: false, label: text(o) };
  o.addEventListener('click', () => { chosen.hit = true; }, { capture: true, once: true });
  globalThis.__browyChosen = chosen;
  return { state: 'found', label: chosen.label, x: r.left + r.width / 2, y: r.top + r.height / 2 };
})"""
#: After the click: did the option get it, and what does the combobox show now?
_READ = """((idx, token) => {
  const el = __browy.element(idx, token), c = globalThis.__browyChosen;
  globalThis.__browyChosen = undefined;
  const now = (el.tagName === 'INPUT' ? el.value : el.textContent).replace(/\\s+/g, ' ').trim();
  const shows = now.toLowerCase().includes(c.label.toLowerCase()) ||
    (c.option.isConnected && c.option.getAttribute('aria-selected') === 'true');
  return { hit: c.hit, shows, now };
})"""


async def choose_option(
    page: PageWorld, index: int, doc_token: str, label: str, before: dict[str, Any]
) -> ActionResult:
    """Choose the option labelled ``label`` of the ARIA combobox ``index`` (module docstring)."""
    args = f"{int(index)}, {json.dumps(doc_token)}, {json.dumps(label)}"
    first = await page._call(f"{_FIND}({args}, false)", page_changing=True)
    if first["state"] == "not_combobox":
        return page._failed("select", index, before, "the element is not a select or combobox")
    found = first
    if first["state"] == "closed" or (before["editable"] and first["state"] != "found"):
        try:
            landed, note = await page._click_at(await page.resolve(index, doc_token, arm=True))
        except ElementNotVisible as exc:
            return page._failed("select", index, before, exc.message)
        if not landed:
            return page._failed("select", index, before, note)
        if before["editable"]:  # an editable combobox filters its list by what is typed
            await page._select_all_and_delete()
            await page.cdp.send("Input.insertText", {"text": label}, page_changing=True)
        found = await _wait_options(page, args)
        if found["state"] == "closed":
            await page._key("ArrowDown", "ArrowDown", 40)
            found = await _wait_options(page, args)
    if found["state"] != "found":
        why = {
            "closed": "no list of options opened",
            "disabled": f"option {json.dumps(found.get('label'))} is disabled",
        }.get(found["state"], f"no option matches {json.dumps(label)}")
        opts = ", ".join(json.dumps(o) for o in found.get("options", []))
        return page._failed("select", index, before, why + (f"; options: {opts}" if opts else ""))
    x, y = await page._to_top(float(found["x"]), float(found["y"]))
    await page._mouse("mouseMoved", x, y)
    await page._mouse("mousePressed", x, y, buttons=1)
    await page._mouse("mouseReleased", x, y)
    await page._call("__browy.settle(120)")
    read = await page._call(f"{_READ}({int(index)}, {json.dumps(doc_token)})")
    chosen = json.dumps(found["label"])
    if not read["hit"]:
        note = f"the click on option {chosen} did not reach it"
    elif not read["shows"]:
        note = f"clicked option {chosen}, but the combobox shows {json.dumps(read['now'])}"
    else:
        note = f"selected {chosen}"
    return await page._report(
        "select", index, doc_token, before, note, ok=bool(read["hit"] and read["shows"])
    )


async def _wait_options(page: PageWorld, args: str) -> dict[str, Any]:
    """Look for the option until the popup shows some options (bounded: ``_ROUNDS``)."""
    found: dict[str, Any] = {"state": "closed"}
    for _ in range(_ROUNDS):
        found = await page._call(f"{_FIND}({args}, true)", page_changing=True)
        if found["state"] != "closed":
            break
        await page._call("__browy.settle(120)")
    return found
