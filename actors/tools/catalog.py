"""Every tool in one registry, and what a session may use of it.

The browser tools run over the pinned tab's ``CdpSession`` (``ctx.cdp``) and ``tab.*``
(``ctx.tabs``).

Browser tools registered by :func:`register_browser_tools` (names from protocol.md section 3b):

- navigation and tabs: ``navigate`` (goto/back/forward/reload, waits for load), ``new_tab``,
  ``list_tabs``, ``switch_tab``, ``close_tab``;
- waiting and moving: ``wait_for`` (selector, text, URL substring, network idle -> WAIT_TIMEOUT),
  ``scroll``, ``press_keys``, ``press_key``;
- selector actions and queries: ``hover``, ``click_element``, ``fill_input``, ``select_option``,
  ``query_dom``, ``find_visible_text``;
- reading: ``get_page_info``, ``extract_text``, ``get_page_html``, ``evaluate_js``,
  ``get_console_logs``, ``get_network_requests``, ``get_cookies``, ``get_storage``;
- writing and output: ``set_cookie``, ``set_viewport``, ``screenshot``, ``pdf_export``.

Page-changing tools (input, navigation, tab open/close, cookie writes, page scripts) are marked so:
the registry never retries them (protocol.md section 5, "No replay"). Only ``http:``/``https:``
(and ``file:`` when the policy allows) URLs are opened; others get NOT_ALLOWED_URL (section 5,
"URLs"). Page text is data, not instructions: text read from pages is wrapped in
``<untrusted_page_content>`` (architecture.md section 5).

Console and network capture: ``Runtime``/``Network`` are enabled per tab on first use of the tools
that need them, and their events (through the tab's ``subscribe``) fill bounded ring buffers kept in
``ctx.state``; the v1 extension forwards every event of attached tabs, so nothing is enabled before
it is needed (protocol.md section 2, ``cdp.event``).

Where they live: :mod:`actors.tools.navigation` (navigation, tabs, waiting, scrolling),
:mod:`actors.tools.actions` (keys and selector actions), :mod:`actors.tools.reading` (queries and
reading), :mod:`actors.tools.devtools` (console, network, cookies, storage, viewport, screenshot,
PDF); what they share is in :mod:`actors.tools.shared` and :mod:`actors.tools.keys`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.tools.actions import register_action_tools
from actors.tools.devtools import register_devtools_tools
from actors.tools.dialog_tools import register_dialog_tools
from actors.tools.files import register_file_tools
from actors.tools.index_tools import register_page_tools
from actors.tools.inspect_more import register_more_tools
from actors.tools.list_tools import register_list_tools
from actors.tools.navigation import register_navigation_tools
from actors.tools.reading import register_reading_tools
from actors.tools.registry import Registry
from actors.tools.tool_def import ApprovalMode, ToolPolicy
from actors.tools.user_tools import SKILLS_DIR, V2_ONLY_TOOLS, register_user_tools
from messages.wire_clients import ToolSpec

__all__ = [
    "HOST_SIDE_TOOLS",
    "ToolCatalog",
    "ToolHints",
    "ToolSettings",
    "build_registry",
    "default_registry",
    "register_browser_tools",
]

#: Tools that need no browser: a session without a tab still gets them.
HOST_SIDE_TOOLS = frozenset(
    {
        "save_file", "read_file", "list_files", "delete_file", "note_set", "note_get",
        "note_list", "note_delete", "write_file", "grep", "glob", "web_fetch", "bash",
        "run_script", "await_user", "ask_user", "get_skill",
    }
)  # fmt: skip


#: Browser tools that read or write the host's files: for MCP clients, host tools too.
BROWSER_FILE_TOOLS = frozenset(
    {
        "pdf_export",
        "download_file",
        "wait_for_download",
        "upload_file",
        "upload_index",
        "drop_files",
    }
)


def register_browser_tools(reg: Registry) -> None:
    """Add the browser tools to ``reg``."""
    # The registration order is the order the tools are offered to the model in: keep it.
    register_navigation_tools(reg)
    register_action_tools(reg)
    register_reading_tools(reg)
    register_devtools_tools(reg)


def default_registry() -> Registry:
    """A registry with the browser tools and the file tools."""
    reg = Registry()
    register_browser_tools(reg)
    register_file_tools(reg)
    return reg


def build_registry(home: Path) -> Registry:
    """Every tool: the page snapshot and index tools, the browser tools, files and notes, and
    ask_user / get_skill (skills from the package and from ``BROWY_HOME/skills``)."""
    registry = default_registry()
    register_page_tools(registry)
    register_dialog_tools(registry)
    register_list_tools(registry)
    register_user_tools(registry, lambda: [home / "skills", SKILLS_DIR])
    register_more_tools(registry)
    return registry


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSettings:
    """The host's own tool settings (``[tools]`` in config.toml); they may change at run time."""

    allow_host_code: bool = False
    approval_mode: ApprovalMode = "never"
    v1_approval_mode: ApprovalMode = "never"
    disabled_tools: frozenset[str] = frozenset()
    #: Host tools the host's config switches on for every session (``[tools] enabled_host_tools``).
    enabled_host_tools: frozenset[str] = frozenset()
    #: Cookie and storage reads: ``"ask"`` every time (a v1 panel cannot answer: refused), or
    #: ``"allow"`` without asking.
    secret_reads: str = "ask"


#: Page-changing tools that change where the tab is, not what a page holds: not destructive.
_NOT_DESTRUCTIVE = frozenset(
    {
        "navigate", "new_tab", "switch_tab", "scroll", "hover", "hover_index", "focus_index",
        "set_viewport", "wait_for", "press_key", "screenshot", "pdf_export",
    }
)  # fmt: skip
#: Tools that change no page but write the host's files.
_WRITES_FILES = frozenset({"save_file", "delete_file", "write_file", "wait_for_download"})
#: Tools that act on the host alone (no page, no network): a closed world.
_CLOSED_WORLD = frozenset(
    {
        "save_file", "read_file", "list_files", "delete_file", "note_set", "note_get",
        "note_list", "note_delete", "write_file", "grep", "glob", "get_skill", "ask_user",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolHints:
    """What a client may assume of a tool (MCP's annotations), set truthfully per tool."""

    title: str
    read_only: bool  # changes nothing anywhere
    destructive: bool  # may do what cannot be undone (submit, delete, pay, run code)
    open_world: bool  # reaches pages and the network


#: Tool lists kept by :meth:`ToolCatalog.definitions` (one per combination of toggles in use).
_OFFERED_KEPT = 64


class ToolCatalog:
    """The registry read for a session: its policy, the tools offered to its model, and what a
    tool is. Reads only; the registry does not change once built."""

    def __init__(self, registry: Registry, settings: Callable[[], ToolSettings]) -> None:
        self.registry = registry
        self._settings = settings
        #: The model's tool list per (policy, browser, protocol): every turn of a session asks
        #: for the same one. Bounded: a session's toggles make a key, and few are in use.
        self._offered: dict[tuple[ToolPolicy, bool, int], list[dict[str, Any]]] = {}

    def policy(
        self, disabled: frozenset[str], enabled_host: frozenset[str], protocol: int
    ) -> ToolPolicy:
        """The session's toggles plus the host's own config (protocol.md section 3b)."""
        settings = self._settings()
        return ToolPolicy(
            disabled=disabled | settings.disabled_tools,
            enabled_host_tools=enabled_host | settings.enabled_host_tools,
            allow_host_code=settings.allow_host_code,
            approval_mode=settings.approval_mode if protocol >= 2 else settings.v1_approval_mode,
            allow_secret_reads=settings.secret_reads == "allow",
        )

    def definitions(
        self, policy: ToolPolicy, *, browser: bool, protocol: int
    ) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` entries offered to the model of such a session (shared, like
        the entries: callers must not modify the list)."""
        key = (policy, browser, protocol)
        offered = self._offered.get(key)
        if offered is not None:
            return offered

        def keep(name: str) -> bool:
            return (browser or name in HOST_SIDE_TOOLS) and (
                protocol >= 2 or name not in V2_ONLY_TOOLS
            )

        if len(self._offered) >= _OFFERED_KEPT:
            self._offered.clear()
        offered = self._offered[key] = self.registry.definitions(policy, keep)
        return offered

    def client_definitions(
        self, policy: ToolPolicy, *, host_tools: frozenset[str]
    ) -> list[dict[str, Any]]:
        """The tools a local client (``browy mcp``) may call: the browser's, and of the
        host-side ones only those in *host_tools* (``[mcp] host_tools``)."""

        def keep(name: str) -> bool:
            if name in ("ask_user", "await_user"):
                return False  # they ask the panel's user: a client asks its own
            host_side = name in HOST_SIDE_TOOLS or name in BROWSER_FILE_TOOLS
            return not host_side or name in host_tools

        return self.registry.definitions(policy, keep)

    def client_specs(self, policy: ToolPolicy, host_tools: frozenset[str]) -> list[ToolSpec]:
        """:meth:`client_definitions` as a client lists them: schema, title, what each does."""
        out: list[ToolSpec] = []
        for definition in self.client_definitions(policy, host_tools=host_tools):
            fn = definition["function"]
            hints = self.hints(fn["name"])
            out.append(
                ToolSpec(
                    name=fn["name"],
                    title=hints.title,
                    description=fn["description"],
                    input_schema=fn["parameters"],
                    read_only=hints.read_only,
                    destructive=hints.destructive,
                    open_world=hints.open_world,
                )
            )
        return out

    def hints(self, name: str) -> ToolHints:
        tool = self.registry.get(name)
        changing = bool(tool and (tool.page_changing or tool.host_code))
        return ToolHints(
            title=name.replace("_", " ").capitalize(),
            read_only=not changing and name not in _WRITES_FILES,
            destructive=changing and name not in _NOT_DESTRUCTIVE,
            open_world=name not in _CLOSED_WORLD,
        )

    def needs_browser(self, name: str) -> bool:
        """Is ``name`` a tool that acts on a browser tab (not offered to a session without one)?"""
        return self.registry.get(name) is not None and name not in HOST_SIDE_TOOLS

    def is_host_code(self, name: str) -> bool:
        tool = self.registry.get(name)
        return bool(tool and tool.host_code)

    def is_page_changing(self, name: str) -> bool:
        tool = self.registry.get(name)
        return bool(tool and tool.page_changing)
