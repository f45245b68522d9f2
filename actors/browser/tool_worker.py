"""ToolWorker: the actor that runs tool calls — nothing else runs tools.

One per daemon (architecture.md section 2). It owns:

- **the runs**: each :class:`RunTool` starts a task the worker owns (a temporary child: one slow
  tool never blocks another, and the worker's mailbox stays free); the caller gets the
  :class:`ToolResultView` on the reply future it handed in, and may :class:`CancelTool`;
- **the per-tab locks**: page-changing tools of two turns never interleave on one tab (keyed by
  the browser connection and tab; weak values, so a closed tab's lock goes with its last user);
- **the no-replay ledger** (:class:`~actors.tools.ledger.CallLedger`, one per session): a
  page-changing call is recorded *sent* before it runs and *done* after; an interrupted one is
  reported ``unknown`` and never run again (protocol.md section 5, "No replay");
- **per-session scratch state** of the tools (console and network buffers), dropped with
  :class:`ForgetSession` when the panel closes.

Restarts (state rebuilt): a stopping or crashed worker cancels the runs it owns; each one's reply
says ``unknown`` if it was page-changing (it may have acted), else ``error`` — never a hang, never
a second run. The ledgers and scratch state are handed in at construction and outlive an
incarnation, so a call id that was sent is still known after a restart. The per-tab locks are the
incarnation's own: its runs ended with it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from actors.browser.action_downloads import DOWNLOADING_TOOLS, before_action, note_after_action
from actors.browser.opened_tabs import OPENING_TOOLS, note_of, opened_since, tab_ids
from actors.runtime.actor import Actor
from actors.runtime.ref import Overflow
from actors.tools.catalog import ToolCatalog
from actors.tools.files import FileSandbox
from actors.tools.ledger import CallLedger
from actors.tools.pinned_tab import TurnBrowser
from actors.tools.tool_def import ApprovalRequestInfo, ToolContext, ToolPolicy
from actors.tools.user_tools import AskFn

__all__ = [
    "CancelTool",
    "ForgetSession",
    "RunTicket",
    "RunTool",
    "SessionScratch",
    "ToolResultView",
    "ToolWorker",
    "WorkerMsg",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultView:
    """What the turn reports and journals of one tool call."""

    outcome: Literal["ok", "error", "unknown"]
    summary: str
    content_for_model: str | list[dict[str, Any]]
    duration_ms: int = 0
    #: Tabs this action opened (popups, links opened in a new tab).
    opened_tabs: tuple[int, ...] = ()

    @property
    def content_text(self) -> str:
        if isinstance(self.content_for_model, str):
            return self.content_for_model
        return "\n".join(
            str(p.get("text", "")) for p in self.content_for_model if p.get("type") == "text"
        )


class RunTicket:
    """The caller's handle on one run: its reply, and the rule that decides "not run".

    The caller marks it ``abandoned`` before it reads ``started``; the worker sets ``started``
    when it starts the run and never starts an abandoned one. Both run on the event loop, so a
    caller that gave up knows for sure whether the tool ran.
    """

    __slots__ = ("abandoned", "reply", "started")

    def __init__(self, reply: asyncio.Future[ToolResultView]) -> None:
        self.reply = reply
        self.started = False
        self.abandoned = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RunTool:
    """Run one tool call (answered once it started); the result goes to ``ticket.reply``.
    ``lock_link`` names the browser connection whose tab locks a page-changing call takes."""

    session_id: str
    call_id: str
    name: str
    args: dict[str, Any]
    policy: ToolPolicy
    browser: TurnBrowser | None
    lock_link: int
    ticket: RunTicket
    approve: Callable[[ApprovalRequestInfo], Awaitable[bool]] | None = None
    ask_user: AskFn | None = None
    progress: Callable[[str], Awaitable[None]] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelTool:
    """Stop the run of ``call_id`` (its turn was cancelled); its reply says what is known."""

    session_id: str
    call_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetSession:
    """The session ended: drop its scratch state and its ledger."""

    session_id: str


WorkerMsg = RunTool | CancelTool | ForgetSession


@dataclass(slots=True)
class SessionScratch:
    """What outlives a ToolWorker incarnation: per-session ledgers and tool state. Plain data."""

    ledgers: dict[str, CallLedger] = field(default_factory=dict)
    states: dict[str, dict[str, Any]] = field(default_factory=dict)

    def ledger(self, session_id: str) -> CallLedger:
        ledger = self.ledgers.get(session_id)
        if ledger is None:
            ledger = self.ledgers[session_id] = CallLedger()
        return ledger

    def forget(self, session_id: str) -> None:
        self.ledgers.pop(session_id, None)
        self.states.pop(session_id, None)


def interrupted(name: str, page_changing: bool, started: float) -> ToolResultView:
    """The report of a run that was stopped before it finished."""
    if page_changing:
        summary = "interrupted: outcome unknown — not repeated"
        text = f"{name} was interrupted inside the host; whether it took effect is unknown."
    else:
        summary = "interrupted"
        text = f"{name} was interrupted inside the host before it finished."
    return ToolResultView(
        outcome="unknown" if page_changing else "error",
        summary=summary,
        content_for_model=f"error INTERNAL: {text} It is not repeated.",
        duration_ms=int((time.monotonic() - started) * 1000),
    )


#: Tools that still help when the page does not answer (they do not need its renderer).
_UNBLOCKING = frozenset(
    {"navigate", "new_tab", "switch_tab", "list_tabs", "close_tab", "handle_dialog"}
)


def _unresponsive(name: str) -> ToolResultView:
    """The pinned page did not answer at all: not run, rather than waited out to its deadline."""
    text = (
        f"error DIALOG_OPEN: {name} was not run: the page does not answer. A JavaScript dialog "
        "that opened while Browy was not attached to the tab may be blocking it (only the user "
        "can answer that one; handle_dialog can try, navigate or reload leaves the page), or "
        "the page is busy: try again in a moment."
    )
    return ToolResultView(
        outcome="error", summary="the page does not answer", content_for_model=text
    )


class ToolWorker(Actor[WorkerMsg]):
    """Runs tool calls (see the module docstring)."""

    mailbox_size = 1024
    overflow = Overflow.WAIT

    def __init__(
        self, *, catalog: ToolCatalog, home: Path, scratch: SessionScratch | None = None
    ) -> None:
        self.catalog = catalog
        self._sandbox = FileSandbox(home)
        self._scratch = scratch if scratch is not None else SessionScratch()
        self._runs: dict[tuple[str, str], asyncio.Task[ToolResultView]] = {}
        self._locks: weakref.WeakValueDictionary[tuple[int, int], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    @property
    def running(self) -> int:
        return len(self._runs)

    def tab_lock(self, link_id: int, tab_id: int) -> asyncio.Lock:
        """The lock that serializes page actions on one tab (held by the run using it)."""
        lock = self._locks.get((link_id, tab_id))
        if lock is None:
            lock = self._locks[(link_id, tab_id)] = asyncio.Lock()
        return lock

    async def handle(self, msg: WorkerMsg) -> Any:
        if isinstance(msg, RunTool):
            self._start(msg)
        elif isinstance(msg, CancelTool):
            task = self._runs.get((msg.session_id, msg.call_id))
            if task is not None:
                task.cancel()
        else:
            self._scratch.forget(msg.session_id)
        return None

    def _start(self, msg: RunTool) -> None:
        ticket = msg.ticket
        if ticket.abandoned:
            return  # the caller gave up before it started: it reports "not run"
        ticket.started = True
        reply = ticket.reply
        key = (msg.session_id, msg.call_id)
        started = time.monotonic()
        changing = self.catalog.is_page_changing(msg.name) or self.catalog.is_host_code(msg.name)
        task = asyncio.get_running_loop().create_task(
            self._run(msg), name=f"tool:{msg.name}:{msg.call_id}"
        )
        self._runs[key] = task

        def settled(done: asyncio.Task[ToolResultView]) -> None:
            if self._runs.get(key) is done:
                del self._runs[key]
            if reply.done():
                return
            if done.cancelled():
                reply.set_result(interrupted(msg.name, changing, started))
            elif (exc := done.exception()) is not None:
                log.error("tool %s failed inside the worker", msg.name, exc_info=exc)
                reply.set_result(interrupted(msg.name, changing, started))
            else:
                reply.set_result(done.result())

        task.add_done_callback(settled)

    async def _run(self, msg: RunTool) -> ToolResultView:
        browser = msg.browser
        state = self._scratch.states.setdefault(msg.session_id, {})
        state["browser"] = browser
        state["ask_user"] = msg.ask_user
        ctx = ToolContext(
            session_id=msg.session_id,
            policy=msg.policy,
            cdp=browser.session() if browser is not None and browser.tab_id is not None else None,
            tabs=browser.tabs if browser is not None else None,
            files=self._sandbox,
            approve=msg.approve,
            progress=msg.progress,
            ledger=self._scratch.ledger(msg.session_id),
            state=state,
        )
        registry = self.catalog.registry
        if browser is not None and self.catalog.needs_browser(msg.name):
            # Before it acts: a dialog it causes is then reported (actors.tools.dialogs).
            answers = await browser.watch_dialogs()
            if not answers and msg.name not in _UNBLOCKING:
                return _unresponsive(msg.name)
        tool = registry.get(msg.name)
        lock: asyncio.Lock | None = None
        if tool is not None and tool.page_changing and browser and browser.tab_id is not None:
            lock = self.tab_lock(msg.lock_link, browser.tab_id)
        # An action that may open a tab (a popup): the tabs before it, to say which it opened.
        watch = browser is not None and browser.tab_id is not None and msg.name in OPENING_TOOLS
        before = await tab_ids(browser.tabs) if watch and browser is not None else None
        # ... and where its downloads stood, to say which it started (a blob: link, a form POST).
        downloads = (
            browser is not None
            and msg.name in DOWNLOADING_TOOLS
            and await before_action(browser.tabs, state)
        )
        if lock is None:
            outcome = await registry.run(msg.name, msg.args, ctx, call_id=msg.call_id)
        else:
            async with lock:
                outcome = await registry.run(msg.name, msg.args, ctx, call_id=msg.call_id)
        opened = await opened_since(browser.tabs, before) if browser is not None else []
        if browser is not None and ctx.cdp is not None:
            new_tab = getattr(ctx.cdp, "tab_id", None)
            if isinstance(new_tab, int) and new_tab != browser.tab_id:
                browser.switch(new_tab)  # the model switched tabs (switch_tab / new_tab)
        content = outcome.content_for_model
        notes = [note_of(opened)] if opened else []  # a popup, a new tab: said, not followed
        if downloads and browser is not None:
            notes.append(await note_after_action(browser.tabs, state, self._sandbox))
        if note := "\n\n".join(n for n in notes if n):
            content = (
                [*content, {"type": "text", "text": note}]
                if isinstance(content, list)
                else f"{content}\n\n{note}"
            )
        return ToolResultView(
            outcome=outcome.outcome,
            summary=outcome.summary,
            content_for_model=content,
            duration_ms=outcome.duration_ms,
            opened_tabs=tuple(tab for tab, _ in opened),
        )

    def _cancel_all(self) -> None:
        for task in list(self._runs.values()):
            task.cancel()

    async def on_stop(self) -> None:
        self._cancel_all()

    async def on_failure(self, exc: BaseException) -> None:
        log.error("the tool worker crashed; its running tools are reported interrupted")
        self._cancel_all()
