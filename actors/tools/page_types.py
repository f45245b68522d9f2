"""The page model's result types, its errors and what it injects (:mod:`actors.tools.page`).

:class:`Snapshot` is what ``inspect_page`` saw, :class:`ElementPoint` where an index resolved to,
:class:`ActionResult` what an index action did; :class:`ElementNotVisible` is the error of an
element with no box to act on. ``snapshot.js`` (with ``list_find.js`` and ``field_check.js``, which
run in the same world) is read here once, with the name of the isolated world it runs in, and
``_check_url`` holds the schemes the page tools agree to drive.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from actors.tools.cdp import CdpError, ErrorCode
from actors.tools.secret_rule import with_rule
from messages.errors import BrowyError

__all__ = ["ActionResult", "ElementNotVisible", "ElementPoint", "Scope", "Snapshot"]

Scope = Literal["viewport", "all"]

_SNAPSHOT_JS = (
    with_rule(resources.files("actors.tools").joinpath("snapshot.js").read_text("utf-8"))
    + ";\n"
    + resources.files("actors.tools").joinpath("list_find.js").read_text("utf-8")
    + ";\n"
    + resources.files("actors.tools").joinpath("field_check.js").read_text("utf-8")
)
_WORLD_NAME = "browy"
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
    elapsed_ms: float  # time spent inside the page (and its cross-origin frames)


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
    # "": a tab that has shown nothing yet (its first document is still on its way), as the
    # extension's own check (extension/lib/cdp.js isAllowedUrl).
    if url in ("", "about:blank") or url.startswith(_ALLOWED_SCHEMES):
        return
    if allow_file and url.startswith("file:"):
        return
    raise CdpError(ErrorCode.NOT_ALLOWED_URL, f"refusing to drive {url[:100]!r}")
