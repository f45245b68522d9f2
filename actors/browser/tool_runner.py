"""The turn's hands: the pinned tab, the page context block, and the tool runner.

- :class:`TurnBrowser` pins the (connection, tab) a turn works on at its start — the session's
  inspected tab, else the active tab (of the panel's window in v2) — and keeps it unless the model
  switches tabs (protocol.md section 3b). It remembers the document token of the last snapshot of
  each tab, so ``click_index`` and friends act on the document the model saw, or fail with
  ``STALE_REF`` (protocol.md section 5).
- The index tools (``inspect_page``, ``click_index``, ``type_index``, ...) are registered here in
  the shared :class:`actors.tools.registry.Registry`; the other browser, file and note tools come
  from :mod:`actors.tools.catalog` and :mod:`actors.tools.files`.
- :class:`ToolRunner` builds each call's :class:`ToolContext` (policy from the session's toggles
  and the host's own config; the per-tab lock that keeps page-changing tools of two turns from
  interleaving on one tab) and turns the registry's outcome into what the turn reports.

Page text reaches the model wrapped in ``<untrusted_page_content>`` markers: it is data, never
instructions (architecture.md section 5).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from actors.browser.cdp_proxy import CdpProxy, ProxyTabs, TabCdpSession
from actors.tools.catalog import default_registry
from actors.tools.files import FileSandbox
from actors.tools.inspect_more import register_more_tools
from actors.tools.ledger import CallLedger
from actors.tools.page import PageTools, Snapshot
from actors.tools.registry import (
    ApprovalMode,
    ApprovalRequestInfo,
    Registry,
    ToolArgs,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolPolicy,
)
from messages.errors import BrowyError, ErrorCode

__all__ = [
    "AskUserArgs",
    "ToolResultView",
    "ToolRunner",
    "TurnBrowser",
    "mask_secret_args",
    "register_page_tools",
    "untrusted",
]

log = logging.getLogger(__name__)


_LINE = re.compile(r"^\*?\[(\d+)\] (\S+)(.*)$")
#: Names of fields whose values are secrets when the page does not say so itself.
SECRET_NAME = re.compile(r"pass|pwd|card.?num|cc.?num|cvc|cvv|csc|secret|token|otp|pin\b", re.I)
MASK = "••••"


def _secret_lines(text: str) -> set[int]:
    """Indices of secret fields in a snapshot (role ``password``, or the ``secret`` state)."""
    found: set[int] = set()
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and (m.group(2) == "password" or " secret" in m.group(3)):
            found.add(int(m.group(1)))
    return found


def mask_secret_args(
    name: str, args: dict[str, Any], browser: TurnBrowser | None
) -> dict[str, Any]:
    """*args* as the panel, the journal and the log may see them: text typed into a secret
    field is masked (protocol.md section 5 — it is typed into the page, never echoed back).
    The live model call keeps the real arguments."""
    if name in ("type_index", "fill_input") and isinstance(
        args.get("text", args.get("value")), str
    ):
        key = "text" if "text" in args else "value"
        index = args.get("index")
        secret = (
            browser is not None and isinstance(index, int) and browser.is_secret(index)
        ) or bool(SECRET_NAME.search(str(args.get("selector", ""))))
        if secret:
            return {**args, key: MASK}
    if name == "fill_form" and isinstance(args.get("fields"), dict):
        fields = {k: (MASK if SECRET_NAME.search(str(k)) else v) for k, v in args["fields"].items()}
        return {**args, "fields": fields}
    return args


def untrusted(text: str) -> str:
    """Mark page-derived text as data for the model (it must not follow instructions in it)."""
    return f"<untrusted_page_content>\n{text}\n</untrusted_page_content>"


@dataclass(slots=True)
class TurnBrowser:
    """The tab a turn drives, through its connection's :class:`CdpProxy`."""

    proxy: CdpProxy
    session_id: str
    owner_id: str
    tab_id: int | None
    window_id: int | None
    allow_file: bool = False
    tabs: ProxyTabs = field(init=False)
    _pages: dict[int, PageTools] = field(default_factory=dict)
    tokens: dict[int, str] = field(default_factory=dict)
    #: Per tab: indices of secret fields (password, card number, CVC) of the current document.
    secret_indices: dict[int, set[int]] = field(default_factory=dict)
    note: str | None = None

    def __post_init__(self) -> None:
        self.tabs = ProxyTabs(self.proxy, self.session_id, self.owner_id, window_id=self.window_id)

    @classmethod
    async def pin(
        cls,
        *,
        proxy: CdpProxy,
        session_id: str,
        owner_id: str,
        inspected_tab_id: int | None,
        window_id: int | None,
        allow_file: bool = False,
    ) -> TurnBrowser:
        browser = cls(
            proxy=proxy,
            session_id=session_id,
            owner_id=owner_id,
            tab_id=inspected_tab_id,
            window_id=window_id,
            allow_file=allow_file,
        )
        if browser.tab_id is None:
            try:
                active = await browser.tabs.active()
            except BrowyError as exc:
                browser.note = f"could not find the active tab: {exc.wire_message}"
                active = None
            if active is not None and isinstance(active.get("tabId"), int):
                browser.tab_id = int(active["tabId"])
        return browser

    def session(self) -> TabCdpSession:
        if self.tab_id is None:
            raise ToolError("no tab is open for this session", code=ErrorCode.NO_CAPABILITY)
        return self.tabs.session(self.tab_id)

    def page(self) -> PageTools:
        session = self.session()
        assert self.tab_id is not None
        page = self._pages.get(self.tab_id)
        if page is None:
            # One PageTools per tab keeps its isolated-world context id cached across calls.
            page = PageTools(session, allow_file=self.allow_file)
            self._pages[self.tab_id] = page
        return page

    def switch(self, tab_id: int) -> None:
        self.tab_id = tab_id

    def token(self) -> str:
        if self.tab_id is None or self.tab_id not in self.tokens:
            raise ToolError(
                "call inspect_page first: element numbers come from a snapshot",
                code=ErrorCode.STALE_REF,
            )
        return self.tokens[self.tab_id]

    async def snapshot(self, **kwargs: Any) -> Snapshot:
        snap = await self.page().inspect_page(**kwargs)
        assert self.tab_id is not None
        if self.tokens.get(self.tab_id) != snap.doc_token:
            self.secret_indices[self.tab_id] = set()
        self.tokens[self.tab_id] = snap.doc_token
        self.secret_indices.setdefault(self.tab_id, set()).update(_secret_lines(snap.text))
        return snap

    def is_secret(self, index: int) -> bool:
        """Is element [index] of the current document a secret field (as last seen)?"""
        return self.tab_id is not None and index in self.secret_indices.get(self.tab_id, set())

    async def origin(self) -> str:
        """The pinned tab's origin (for approvals and per-site permissions); "" if unknown."""
        try:
            result = await self.session().send(
                "Runtime.evaluate", {"expression": "location.origin", "returnByValue": True}
            )
        except BrowyError:
            return ""
        value = result.get("result", {}).get("value")
        return value if isinstance(value, str) and value != "null" else ""

    async def context_block(self) -> str:
        """The browser context sent with the user's words: the tab and a fresh snapshot."""
        if self.tab_id is None:
            return "Browser: no tab is available." + (f" ({self.note})" if self.note else "")
        try:
            snap = await self.snapshot()
        except BrowyError as exc:
            if exc.code is ErrorCode.NOT_ALLOWED_URL:
                return (
                    "Browser: the active tab shows a browser page that Browy may not read or "
                    "drive. Open or switch to a web page (navigate / new_tab / switch_tab)."
                )
            return f"Browser: the active tab could not be read ({exc.wire_message})."
        return "Browser: the user's active tab. Snapshot:\n" + untrusted(snap.text)


# -- the index tools ---------------------------------------------------------------------------


class InspectArgs(ToolArgs):
    scope: Literal["viewport", "all"] = Field(
        "viewport", description="viewport: what is on screen (and near it); all: the whole page"
    )
    text_filter: str | None = Field(None, description="only elements whose text contains this")
    offset: int = Field(0, ge=0, description="skip this many entries (paging)")
    limit: int | None = Field(None, ge=1, le=2000, description="at most this many entries")


class IndexArgs(ToolArgs):
    index: int = Field(..., ge=0, description="the element number from inspect_page")


class TypeArgs(IndexArgs):
    text: str = Field(..., description="what to type")
    clear: bool = Field(True, description="clear the field first")
    submit: bool = Field(False, description="press Enter afterwards")


class SelectArgs(IndexArgs):
    value: str = Field(..., description="the option's value or visible label")


class CheckArgs(IndexArgs):
    checked: bool = Field(True, description="the state to set")


def _browser(ctx: ToolContext) -> TurnBrowser:
    browser = ctx.state.get("browser")
    if not isinstance(browser, TurnBrowser):
        raise ToolError("this session may not drive tabs", code=ErrorCode.NO_CAPABILITY)
    return browser


def register_page_tools(registry: Registry) -> None:
    """Add ``inspect_page`` and the ``*_index`` tools (protocol.md section 3b names)."""

    @registry.register(
        "inspect_page",
        "List the visible interactive elements of the current tab, numbered, with role, name, "
        "value and state, plus page stats. Numbers feed click_index, type_index and the other "
        "*_index tools; they are valid until the page navigates.",
        InspectArgs,
        page_changing=False,
    )
    async def inspect_page(args: InspectArgs, ctx: ToolContext) -> ToolOutput:
        snap = await _browser(ctx).snapshot(
            scope=args.scope, text_filter=args.text_filter, offset=args.offset, limit=args.limit
        )
        return ToolOutput(
            content=untrusted(snap.text),
            summary=f"{snap.shown} of {snap.count} elements on {snap.title or snap.url}"[:200],
        )

    def _action(name: str, description: str, params: type[IndexArgs], call: Any) -> None:
        @registry.register(name, description, params, page_changing=True)
        async def run(args: Any, ctx: ToolContext) -> ToolOutput:
            browser = _browser(ctx)
            result = await call(browser.page(), args, browser.token())
            text = result.to_text()
            if result.navigated and not result.same_document and browser.tab_id is not None:
                # A new document: its element numbers are new (an SPA route change keeps the
                # document, and the indices of elements that survive it keep working).
                browser.tokens.pop(browser.tab_id, None)
            if not result.ok:
                raise ToolError(text, code=ErrorCode.INTERNAL)
            return ToolOutput(content=untrusted(text), summary=text.splitlines()[0][:200])

    _action(
        "click_index", "Click element [index] like a user (scrolls it into view).", IndexArgs,
        lambda p, a, t: p.click_index(a.index, t),
    )  # fmt: skip
    _action(
        "type_index", "Type text into element [index] (clears it first unless clear=false).",
        TypeArgs, lambda p, a, t: p.type_index(a.index, t, a.text, clear=a.clear, submit=a.submit),
    )  # fmt: skip
    _action(
        "select_index", "Choose an option of the select element [index] by value or label.",
        SelectArgs, lambda p, a, t: p.select_index(a.index, t, a.value),
    )  # fmt: skip
    _action(
        "check_index", "Check or uncheck the checkbox [index].", CheckArgs,
        lambda p, a, t: p.check_index(a.index, t, a.checked),
    )  # fmt: skip
    _action(
        "set_radio_index", "Select the radio button [index].", IndexArgs,
        lambda p, a, t: p.check_index(a.index, t, True),
    )  # fmt: skip
    _action(
        "clear_index", "Clear the field [index].", IndexArgs,
        lambda p, a, t: p.clear_index(a.index, t),
    )  # fmt: skip
    _action(
        "focus_index", "Focus element [index].", IndexArgs,
        lambda p, a, t: p.focus_index(a.index, t),
    )  # fmt: skip


# -- talking to the user, and skills -------------------------------------------------------------


class AskOptionArgs(ToolArgs):
    label: str
    value: str


class AskUserArgs(ToolArgs):
    kind: Literal["input", "confirm", "choose"] = Field(
        "input", description="input: free text; confirm: yes/no; choose: one of the options"
    )
    prompt: str = Field(..., description="the question, in plain words")
    options: list[AskOptionArgs] | None = Field(None, description="for kind=choose")
    default_value: str | None = None


class SkillArgs(ToolArgs):
    name: str | None = Field(None, description="the skill to load; omit to list the skills")


#: Asks the user through the panel; returns (value, cancelled). Set per call by the runner.
AskFn = Callable[[AskUserArgs], Awaitable[tuple[Any, bool]]]

V2_ONLY_TOOLS = frozenset({"ask_user"})


def register_user_tools(registry: Registry, skills_dirs: Callable[[], list[Path]]) -> None:
    """``ask_user`` (v2: ``user.ask`` / ``user.answer``) and ``get_skill``."""

    @registry.register(
        "ask_user",
        "Ask the user a question in the panel and wait for the answer (free text, yes/no, or a "
        "choice among options). Use it when the task is ambiguous or needs their decision.",
        AskUserArgs,
        page_changing=False,
    )
    async def ask_user(args: AskUserArgs, ctx: ToolContext) -> ToolOutput:
        ask = ctx.state.get("ask_user")
        if ask is None:
            raise ToolError("this panel cannot answer questions", code=ErrorCode.NO_CAPABILITY)
        value, cancelled = await ask(args)
        if cancelled:
            return ToolOutput(content="The user dismissed the question.", summary="dismissed")
        return ToolOutput(content=f"The user answered: {value!r}", summary=str(value)[:200])

    @registry.register(
        "get_skill",
        "Load a step-by-step guide for a common multi-step task (omit name to list them).",
        SkillArgs,
        page_changing=False,
    )
    async def get_skill(args: SkillArgs, ctx: ToolContext) -> ToolOutput:
        found: dict[str, Path] = {}
        for directory in skills_dirs():
            if directory.is_dir():
                for path in sorted(directory.glob("*.md")):
                    found.setdefault(path.stem, path)
        if args.name is None:
            listing = "\n".join(
                f"- {name}: {_first_line(path)}" for name, path in sorted(found.items())
            )
            return ToolOutput(
                content=listing or "No skills installed.", summary=f"{len(found)} skills"
            )
        chosen = found.get(args.name)
        if chosen is None:
            raise ToolError(
                f"no skill named {args.name!r}; known: {', '.join(sorted(found)) or 'none'}",
                code=ErrorCode.INTERNAL,
            )
        return ToolOutput(content=chosen.read_text("utf-8")[:20_000], summary=f"skill {args.name}")


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8") as fh:
        return fh.readline().strip().lstrip("# ")[:120]


# -- the runner --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultView:
    """What the turn reports and journals of one tool call."""

    outcome: Literal["ok", "error", "unknown"]
    summary: str
    content_for_model: str | list[dict[str, Any]]
    duration_ms: int = 0

    @property
    def content_text(self) -> str:
        if isinstance(self.content_for_model, str):
            return self.content_for_model
        return "\n".join(
            str(p.get("text", "")) for p in self.content_for_model if p.get("type") == "text"
        )


SKILLS_DIR = Path(__file__).parent.parent / "skills"


def build_registry(home: Path) -> Registry:
    """Every tool: the page snapshot and index tools, the browser tools, files and notes, and
    ask_user / get_skill (skills from the package and from ``BROWY_HOME/skills``)."""
    registry = default_registry()
    register_page_tools(registry)
    register_user_tools(registry, lambda: [home / "skills", SKILLS_DIR])
    register_more_tools(registry)
    return registry


class ToolRunner:
    def __init__(
        self,
        *,
        home: Path,
        allow_host_code: bool,
        approval_mode: ApprovalMode = "never",
        v1_approval_mode: ApprovalMode = "never",
        registry: Registry | None = None,
    ):
        self.home = home
        self.allow_host_code = allow_host_code
        self.approval_mode: ApprovalMode = approval_mode
        self.v1_approval_mode: ApprovalMode = v1_approval_mode
        self.registry = registry or build_registry(home)
        self._sandbox = FileSandbox(home)
        self._states: dict[str, dict[str, Any]] = {}
        self._ledgers: dict[str, CallLedger] = {}

    def _policy(
        self, disabled: frozenset[str], enabled_host: frozenset[str], protocol: int = 2
    ) -> ToolPolicy:
        return ToolPolicy(
            disabled=disabled,
            enabled_host_tools=enabled_host,
            allow_host_code=self.allow_host_code,
            approval_mode=self.approval_mode if protocol >= 2 else self.v1_approval_mode,
        )

    def definitions(
        self,
        *,
        browser: bool,
        disabled: frozenset[str],
        enabled_host: frozenset[str],
        protocol: int = 2,
    ) -> list[dict[str, Any]]:
        def keep(name: str) -> bool:
            return (browser or not self._needs_browser(name)) and (
                protocol >= 2 or name not in V2_ONLY_TOOLS
            )

        return self.registry.definitions(self._policy(disabled, enabled_host, protocol), keep)

    def _needs_browser(self, name: str) -> bool:
        return name not in _HOST_SIDE_TOOLS and name not in ("ask_user", "get_skill")

    def forget(self, session_id: str) -> None:
        """The session ended: drop its scratch state (event buffers) and its call ledger."""
        self._states.pop(session_id, None)
        self._ledgers.pop(session_id, None)

    def is_host_code(self, name: str) -> bool:
        tool = self.registry.get(name)
        return bool(tool and tool.host_code)

    def is_page_changing(self, name: str) -> bool:
        tool = self.registry.get(name)
        return bool(tool and tool.page_changing)

    def bad_arguments(self, name: str, problem: str) -> ToolResultView:
        return ToolResultView(
            outcome="error",
            summary=f"{name}: bad arguments",
            content_for_model=f"INVALID_MESSAGE: the arguments of {name} are not a JSON object "
            f"({problem}). Call it again with valid JSON arguments.",
        )

    async def run(
        self,
        name: str,
        args: dict[str, Any],
        *,
        browser: TurnBrowser | None,
        disabled: frozenset[str],
        enabled_host: frozenset[str],
        tab_lock: Callable[[int], asyncio.Lock],
        session_id: str = "",
        protocol: int = 2,
        call_id: str | None = None,
        approve: Callable[[ApprovalRequestInfo], Awaitable[bool]] | None = None,
        ask_user: AskFn | None = None,
    ) -> ToolResultView:
        state = self._states.setdefault(session_id, {})
        state["browser"] = browser
        state["ask_user"] = ask_user
        ctx = ToolContext(
            session_id=session_id,
            policy=self._policy(disabled, enabled_host, protocol),
            cdp=browser.session() if browser is not None and browser.tab_id is not None else None,
            tabs=browser.tabs if browser is not None else None,
            files=self._files(),
            approve=approve,
            ledger=self._ledger(session_id),
            state=state,
        )
        tool = self.registry.get(name)
        lock: asyncio.Lock | None = None
        if tool is not None and tool.page_changing and browser and browser.tab_id is not None:
            lock = tab_lock(browser.tab_id)
        if lock is None:
            outcome = await self.registry.run(name, args, ctx, call_id=call_id)
        else:
            async with lock:
                outcome = await self.registry.run(name, args, ctx, call_id=call_id)
        if browser is not None and ctx.cdp is not None:
            new_tab = getattr(ctx.cdp, "tab_id", None)
            if isinstance(new_tab, int) and new_tab != browser.tab_id:
                browser.switch(new_tab)  # the model switched tabs (switch_tab / new_tab)
        return ToolResultView(
            outcome=outcome.outcome,
            summary=outcome.summary,
            content_for_model=outcome.content_for_model,
            duration_ms=outcome.duration_ms,
        )

    def _ledger(self, session_id: str) -> CallLedger:
        ledger = self._ledgers.get(session_id)
        if ledger is None:
            ledger = self._ledgers[session_id] = CallLedger()
        return ledger

    def _files(self) -> FileSandbox:
        return self._sandbox


_HOST_SIDE_TOOLS = frozenset(
    {
        "save_file", "read_file", "list_files", "delete_file", "note_set", "note_get",
        "note_list", "note_delete", "write_file", "grep", "glob", "web_fetch", "bash",
        "run_script", "await_user",
    }
)  # fmt: skip
