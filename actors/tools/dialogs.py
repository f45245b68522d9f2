"""JavaScript dialogs (``alert``, ``confirm``, ``prompt``, ``beforeunload``): what is open, and
the error of a browser call that a dialog blocks.

A dialog stops its page: while it is open, Chrome answers no command that needs the renderer
(``Runtime.evaluate``, ``Page.getFrameTree``, ``DOM.*``, even ``Page.enable``), and an input event
that opened it is answered only once it closes. Chrome reports it with
``Page.javascriptDialogOpening{type, message, url, defaultPrompt}`` to a client that had the
``Page`` domain enabled *before* it opened — only that client can then answer it with
``Page.handleJavaScriptDialog{accept, promptText?}`` (another client is told "No dialog is
showing"); ``Page.javascriptDialogClosed`` follows. (Measured on Chromium 156.)

So the host enables ``Page`` on a tab before it acts there (:meth:`TurnBrowser.watch_dialogs`),
and the CDPProxy keeps a :class:`DialogTable` per connection fed by those events. When a dialog
opens, every call still waiting on that tab fails at once with :class:`DialogOpen` (``sent``), and
a call opened while it is open fails before it is sent (not ``sent``), except the methods in
:data:`PASS_WHILE_OPEN`. The registry turns :class:`DialogOpen` into words for the model: a
page-changing tool during which the dialog opened *did* act ("the click opened a confirm
dialog..."); any other tool is refused with ``DIALOG_OPEN`` and told how to answer it
(``handle_dialog``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from actors.tools.cdp import BrowserCallError
from messages.errors import BrowyError, ErrorCode

__all__ = [
    "PASS_WHILE_OPEN",
    "DialogOpen",
    "DialogTable",
    "OpenDialog",
    "blocked_snapshot",
    "could_change",
    "describe",
    "how_to_answer",
    "open_dialog",
]

#: Commands that still work while a dialog blocks the page (browser-side in Chrome).
PASS_WHILE_OPEN = frozenset({"Page.handleJavaScriptDialog", "Target.getTargetInfo"})

_KINDS = frozenset({"alert", "confirm", "prompt", "beforeunload"})


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenDialog:
    """A dialog open on a tab, as ``Page.javascriptDialogOpening`` told it."""

    kind: str  # alert | confirm | prompt | beforeunload
    message: str
    url: str
    default_prompt: str = ""
    #: ``time.monotonic()`` when the host learnt of it: a tool that started before it opened
    #: caused it (the registry's rule).
    opened_at: float = 0.0


class DialogTable:
    """Open dialogs by tab, fed with one connection's CDP events. Plain data, no I/O."""

    def __init__(self) -> None:
        self._open: dict[int, OpenDialog] = {}

    def on_event(
        self, tab_id: int | None, method: str, params: dict[str, Any], *, now: float | None = None
    ) -> OpenDialog | None:
        """Take one event; returns the dialog it opened, if it opened one."""
        if tab_id is None:
            return None
        if method == "Page.javascriptDialogOpening":
            kind = str(params.get("type", ""))
            dialog = OpenDialog(
                kind=kind if kind in _KINDS else "alert",
                message=str(params.get("message", "")),
                url=str(params.get("url", "")),
                default_prompt=str(params.get("defaultPrompt", "")),
                opened_at=time.monotonic() if now is None else now,
            )
            self._open[tab_id] = dialog
            return dialog
        if method in ("Page.javascriptDialogClosed", "Inspector.detached"):
            # Detached: whoever attaches next cannot answer it anyway (only the client that saw it
            # open can), so it is not ours to report any more.
            self._open.pop(tab_id, None)
        return None

    def get(self, tab_id: int | None) -> OpenDialog | None:
        return None if tab_id is None else self._open.get(tab_id)

    def clear(self, tab_id: int | None) -> None:
        """The dialog was answered (``Page.handleJavaScriptDialog`` succeeded)."""
        if tab_id is not None:
            self._open.pop(tab_id, None)


class DialogOpen(BrowserCallError):
    """A browser call that a JavaScript dialog blocks. ``sent``: the call was on its way when the
    dialog opened (an input event that opened it, a read that waited on the page); otherwise it
    was refused before it was sent."""

    def __init__(self, dialog: OpenDialog, method: str, *, sent: bool) -> None:
        super().__init__(ErrorCode.DIALOG_OPEN, f"{method}: a {dialog.kind} dialog is open")
        self.dialog = dialog
        self.sent = sent

    @property
    def wire_message(self) -> str:
        return f"a JavaScript {self.dialog.kind} dialog is open on the page"


def could_change(dialog: OpenDialog | None, accept: bool) -> bool:
    """May answering so change something? Dismissing never does, nor closing an alert; OK on a
    confirm or prompt, or leaving the page, may (the page acts on the answer)."""
    if not accept:
        return False
    return dialog is None or dialog.kind != "alert"


def describe(dialog: OpenDialog) -> str:
    """One line for the model; the message is page text, quoted."""
    text = dialog.message if len(dialog.message) <= 300 else dialog.message[:299] + "…"
    line = f"a JavaScript {dialog.kind} dialog is open, saying {json.dumps(text)}"
    if dialog.kind == "prompt" and dialog.default_prompt:
        line += f" (its answer field holds {json.dumps(dialog.default_prompt[:100])})"
    return line


def how_to_answer(dialog: OpenDialog | None) -> str:
    """How the model answers it."""
    kind = dialog.kind if dialog is not None else ""
    if kind == "alert":
        return "handle_dialog(accept=true) closes it"
    if kind == "prompt":
        return (
            'handle_dialog(accept=true, text="...") answers it, handle_dialog(accept=false) '
            "cancels it"
        )
    if kind == "beforeunload":
        return (
            "the page asks before leaving: handle_dialog(accept=true) leaves the page, "
            "handle_dialog(accept=false) stays"
        )
    return "handle_dialog(accept=true) presses OK, handle_dialog(accept=false) presses Cancel"


async def open_dialog(cdp: object) -> OpenDialog | None:
    """The dialog open on ``cdp``'s tab as the host knows it, or None (also for a session that
    cannot tell: a test double without ``open_dialog``)."""
    probe = getattr(cdp, "open_dialog", None)
    if probe is None:
        return None
    found = await probe()
    return found if isinstance(found, OpenDialog) else None


async def blocked_snapshot(cdp: Any, dialog: OpenDialog) -> str:
    """What ``inspect_page`` shows while a dialog blocks the page: the page (from the browser
    side, which still answers) and the dialog, with how to answer it."""
    title, url = "", dialog.url
    try:
        info = (await cdp.send("Target.getTargetInfo", timeout=5.0)).get("targetInfo", {})
        title, url = str(info.get("title", "")), str(info.get("url", "")) or url
    except BrowyError:
        pass
    return "\n".join(
        [
            f"# page {json.dumps(title[:80])} {url[:120]}",
            f"# the page is blocked: {describe(dialog)}",
            f"# answer it first: {how_to_answer(dialog)}. No element can be used until then; "
            "the element numbers of the last snapshot stay valid after it closes.",
        ]
    )
