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
from actors.tools.files import register_file_tools
from actors.tools.index_tools import register_page_tools
from actors.tools.inspect_more import register_more_tools
from actors.tools.navigation import register_navigation_tools
from actors.tools.reading import register_reading_tools
from actors.tools.registry import Registry
from actors.tools.tool_def import ApprovalMode, ToolPolicy
from actors.tools.user_tools import SKILLS_DIR, V2_ONLY_TOOLS, register_user_tools

__all__ = [
    "HOST_SIDE_TOOLS",
    "ToolCatalog",
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
    #: Cookie and storage reads: ``"ask"`` every time (a v1 panel cannot answer: refused), or
    #: ``"allow"`` without asking.
    secret_reads: str = "ask"


class ToolCatalog:
    """The registry read for a session: its policy, the tools offered to its model, and what a
    tool is. Reads only; the registry does not change once built."""

    def __init__(self, registry: Registry, settings: Callable[[], ToolSettings]) -> None:
        self.registry = registry
        self._settings = settings

    def policy(
        self, disabled: frozenset[str], enabled_host: frozenset[str], protocol: int
    ) -> ToolPolicy:
        """The session's toggles plus the host's own config (protocol.md section 3b)."""
        settings = self._settings()
        return ToolPolicy(
            disabled=disabled | settings.disabled_tools,
            enabled_host_tools=enabled_host,
            allow_host_code=settings.allow_host_code,
            approval_mode=settings.approval_mode if protocol >= 2 else settings.v1_approval_mode,
            allow_secret_reads=settings.secret_reads == "allow",
        )

    def definitions(
        self, policy: ToolPolicy, *, browser: bool, protocol: int
    ) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` entries offered to the model of such a session."""

        def keep(name: str) -> bool:
            return (browser or name in HOST_SIDE_TOOLS) and (
                protocol >= 2 or name not in V2_ONLY_TOOLS
            )

        return self.registry.definitions(policy, keep)

    def needs_browser(self, name: str) -> bool:
        """Is ``name`` a tool that acts on a browser tab (not offered to a session without one)?"""
        return self.registry.get(name) is not None and name not in HOST_SIDE_TOOLS

    def is_host_code(self, name: str) -> bool:
        tool = self.registry.get(name)
        return bool(tool and tool.host_code)

    def is_page_changing(self, name: str) -> bool:
        tool = self.registry.get(name)
        return bool(tool and tool.page_changing)
