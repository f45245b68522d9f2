"""What a tool is, what it runs with, and what it returns — the vocabulary of every tool module.

- :class:`ToolDef`: a name, a description, a pydantic model of its arguments (:class:`ToolArgs`:
  unknown fields refused), whether it changes the page, whether it is host code, and
  ``run(args, ctx) -> ToolOutput``;
- :class:`ToolContext`: the pinned tab (``cdp``), the ``tab.*`` operations (``tabs``), the file
  sandbox, the session's :class:`ToolPolicy`, ``approve``, the no-replay ledger and per-session
  scratch ``state``;
- :class:`ToolPolicy`: which tools a session may use and when to ask (the rules are in
  :mod:`actors.tools.registry`);
- :class:`ToolOutput` (what a tool returns), :class:`ToolOutcome` (the end of one call, ready for
  the turn), :class:`ToolError` (a failure the model should read).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from actors.tools.cdp import CdpSession
from actors.tools.ledger import CallLedger
from messages.errors import BrowyError, ErrorCode

__all__ = [
    "HOST_CODE_TOOLS",
    "HOST_TOOLS",
    "ApprovalMode",
    "ApprovalRequestInfo",
    "ContentPart",
    "EventSource",
    "RunFn",
    "TabOps",
    "TabSession",
    "ToolArgs",
    "ToolContext",
    "ToolDef",
    "ToolError",
    "ToolOutcome",
    "ToolOutput",
    "ToolPolicy",
]


ApprovalMode = Literal["never", "page-changing", "always"]
ContentPart = dict[str, Any]

#: Tools off until switched on: a panel's ``enabledHostTools`` (protocol.md 3b) or the host's
#: ``[tools] enabled_host_tools`` (the options page, ``browy config``).
HOST_TOOLS = frozenset({"write_file", "bash", "grep", "glob", "web_fetch", "run_script"})
#: Tools that run code on the host: also need the host's own ``allow_host_code``.
HOST_CODE_TOOLS = frozenset({"run_script", "bash"})


class ToolArgs(BaseModel):
    """Base of tool argument models: unknown fields are refused, so a typo is reported."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolError(BrowyError):
    """A tool failed in a way the model should read: ``message`` is shown to it as is."""

    @property
    def wire_message(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutput:
    """What a tool returns: ``content`` for the model (text, or text/image parts), ``summary``
    (short, human-readable, for the panel) and optional structured ``data``."""

    content: str | list[ContentPart]
    summary: str
    data: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutcome:
    """The end of one tool call, ready for ``chat.tool_result`` and the model."""

    outcome: Literal["ok", "error", "unknown"]
    content_for_model: str | list[ContentPart]
    summary: str
    error_code: ErrorCode | None = None
    duration_ms: int = 0
    data: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPolicy:
    """Which tools a session may use and when to ask (see the module docstring for the rules)."""

    disabled: frozenset[str] = frozenset()
    enabled_host_tools: frozenset[str] = frozenset()
    allow_host_code: bool = False  # the host's own config, never a v1 toggle
    approval_mode: ApprovalMode = "never"
    allow_file_urls: bool = False  # protocol.md section 5, "URLs"
    #: Tools that read secrets (cookies, storage) run without asking only when the host's
    #: config says so (``[tools] secret_reads = "allow"``); else the user is asked every time.
    allow_secret_reads: bool = False

    def blocked(self, tool: ToolDef) -> str | None:
        """Why ``tool`` may not run, or None when it may."""
        if tool.name in self.disabled:
            return f"the tool {tool.name} is disabled"
        if tool.name in HOST_TOOLS and tool.name not in self.enabled_host_tools:
            return f"the host tool {tool.name} is not enabled"
        if tool.host_code and not self.allow_host_code:
            return f"{tool.name} runs code on the host, which the host's config does not allow"
        return None

    def needs_approval(self, tool: ToolDef) -> bool:
        if tool.reads_secrets:
            return not self.allow_secret_reads  # whatever the approval mode
        return self.approval_mode == "always" or (
            self.approval_mode == "page-changing" and (tool.page_changing or tool.host_code)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequestInfo:
    """What ``ctx.approve`` is asked about."""

    tool: str
    args: dict[str, Any]
    summary: str
    #: False for tools that read secrets: asked every time, never remembered for the session
    #: or the site (``allow_session`` / ``allow_site`` count as this call only).
    remember: bool = True


@runtime_checkable
class EventSource(Protocol):
    """CDP events of one tab: ``await subscribe(callback(method, params)) -> unsubscribe``."""

    async def subscribe(
        self, callback: Callable[[str, dict[str, Any]], None]
    ) -> Callable[[], None]: ...


class TabSession(CdpSession, EventSource, Protocol):
    """A ``CdpSession`` bound to one tab that also delivers that tab's events."""

    tab_id: int | None


class TabOps(Protocol):
    """``tab.*`` operations (e.g. :class:`actors.browser.cdp_proxy.ProxyTabs`). TabInfo dicts are
    ``{tabId, url, title, active, windowId?}`` (protocol.md section 2)."""

    async def new(self, url: str | None, *, active: bool = True) -> dict[str, Any]: ...
    async def list(self) -> list[dict[str, Any]]: ...
    async def active(self) -> dict[str, Any] | None: ...
    async def activate(self, tab_id: int) -> dict[str, Any]: ...
    async def close(self, tab_id: int) -> None: ...
    def session(self, tab_id: int) -> TabSession: ...


@dataclass(kw_only=True)
class ToolContext:
    """What a tool runs with. ``cdp`` is the pinned tab (a tool may re-pin it, e.g.
    ``switch_tab``); ``state`` is per-connection scratch space kept by the caller (event ring
    buffers, enabled domains); ``files`` is the sandbox (:class:`actors.tools.files.FileSandbox`).
    """

    session_id: str = ""
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    cdp: TabSession | None = None
    tabs: TabOps | None = None
    files: Any = None
    approve: Callable[[ApprovalRequestInfo], Awaitable[bool]] | None = None
    #: Tells the user (the panel's status line, an MCP client's progress) how a long call is
    #: going; None where nobody listens.
    progress: Callable[[str], Awaitable[None]] | None = None
    ledger: CallLedger = field(default_factory=CallLedger)
    state: dict[str, Any] = field(default_factory=dict)
    timeout: float = 10.0  # default deadline of one browser command

    def page(self) -> TabSession:
        """The pinned tab, or a ToolError when there is none."""
        if self.cdp is None:
            raise ToolError("no tab is attached to this session", code=ErrorCode.NO_CAPABILITY)
        return self.cdp


RunFn = Callable[[Any, ToolContext], Awaitable[ToolOutput]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDef:
    """One tool. ``run(args, ctx)`` gets ``args`` as an instance of ``params``."""

    name: str
    description: str
    params: type[BaseModel]
    run: RunFn
    page_changing: bool
    host_code: bool = False
    #: Reads secrets of the page (cookies, storage): asked about every time (ToolPolicy).
    reads_secrets: bool = False
    #: May a failed attempt be retried once on REQUEST_TIMEOUT? Default: reads only.
    retry_on_timeout: bool | None = None
    #: The tool asks ``ctx.approve`` itself, only when its arguments could change something
    #: (``handle_dialog``: accepting a confirm, not dismissing it); the registry does not ask.
    asks_itself: bool = False

    @property
    def retryable(self) -> bool:
        if self.retry_on_timeout is not None:
            return self.retry_on_timeout and not self.page_changing
        return not self.page_changing and not self.host_code
