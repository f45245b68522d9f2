"""Browser tools over the pinned tab's ``CdpSession`` (``ctx.cdp``) and ``tab.*`` (``ctx.tabs``).

Tools registered by :func:`register_browser_tools` (names from protocol.md section 3b):

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

from actors.tools.actions import register_action_tools
from actors.tools.devtools import register_devtools_tools
from actors.tools.files import register_file_tools
from actors.tools.keys import key_events
from actors.tools.navigation import register_navigation_tools
from actors.tools.reading import register_reading_tools
from actors.tools.registry import Registry
from actors.tools.shared import JS_RESULT_LIMIT, check_url

__all__ = [
    "JS_RESULT_LIMIT",
    "check_url",
    "default_registry",
    "key_events",
    "register_browser_tools",
]


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
