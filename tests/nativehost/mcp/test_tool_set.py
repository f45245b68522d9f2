"""The tools as an MCP client sees them: schemas from the registry, truthful annotations, calls
checked before they are sent, Playwright MCP's names, and tool content as MCP content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import types

from actors.tools.catalog import HOST_SIDE_TOOLS, ToolCatalog, ToolSettings, build_registry
from actors.tools.tool_def import ToolPolicy
from nativehost.mcp.playwright_names import ALIASES, SLEEP, BadArguments, translate
from nativehost.mcp.tool_set import MAX_ARGS_BYTES, ToolError, ToolSet, UnknownTool, mcp_content


def _specs(tmp_path: Path, host_tools: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The specs the daemon sends (``tools.list.result``), from the real registry."""
    catalog = ToolCatalog(build_registry(tmp_path), ToolSettings)
    policy = ToolPolicy(approval_mode="page-changing")
    return [
        s.model_dump(by_alias=True, exclude_none=True)
        for s in catalog.client_specs(policy, host_tools)
    ]


@pytest.fixture
def specs(tmp_path: Path) -> list[dict[str, Any]]:
    return _specs(tmp_path)


def test_every_schema_is_valid_and_the_browser_tools_are_there(specs: list[dict[str, Any]]) -> None:
    tools = ToolSet(specs).tools()
    names = {t.name for t in tools}
    for t in tools:
        jsonschema.Draft202012Validator.check_schema(t.input_schema)
    assert {"navigate", "inspect_page", "click_index", "type_index", "screenshot"} <= names
    assert {"list_tabs", "new_tab", "wait_for", "get_console_logs", "get_network_requests"} <= names


def test_host_code_file_tools_and_panel_questions_are_not_offered_unless_configured(
    tmp_path: Path,
) -> None:
    names = {t.name for t in ToolSet(_specs(tmp_path)).tools()}
    assert not names & HOST_SIDE_TOOLS
    file_tools = {"pdf_export", "download_file", "wait_for_download", "upload_file", "drop_files"}
    assert not names & (file_tools | {"upload_index"})
    configured = _specs(tmp_path, frozenset({"note_set", "pdf_export"}))
    opted = {t.name for t in ToolSet(configured).tools()}
    assert {"note_set", "pdf_export"} <= opted
    assert "ask_user" not in opted and "save_file" not in opted


def test_annotations_say_what_each_tool_does(specs: list[dict[str, Any]]) -> None:
    by = {t.name: t.annotations for t in ToolSet(specs).tools()}
    for name in ("inspect_page", "screenshot", "list_tabs", "get_console_logs", "extract_text"):
        assert by[name] is not None and by[name].read_only_hint is True, name
        assert by[name].destructive_hint is False, name
    for name in ("click_index", "type_index", "submit_form", "evaluate_js"):
        assert by[name] is not None and by[name].read_only_hint is False, name
        assert by[name].destructive_hint is True, name
    # Navigating changes the page but destroys nothing.
    nav = by["navigate"]
    assert nav is not None and nav.read_only_hint is False and nav.destructive_hint is False
    assert nav.open_world_hint is True


def test_a_call_is_checked_against_its_schema_before_it_is_sent(
    specs: list[dict[str, Any]],
) -> None:
    tools = ToolSet(specs)
    assert tools.resolve("click_index", {"index": 3}) == ("click_index", {"index": 3})
    with pytest.raises(ToolError) as bad:
        tools.resolve("click_index", {"index": "three"})
    assert bad.value.code == "INVALID_MESSAGE" and "index" in str(bad.value)
    with pytest.raises(ToolError) as extra:
        tools.resolve("navigate", {"url": "https://a.example", "bogus": 1})
    assert extra.value.code == "INVALID_MESSAGE" and "bogus" in str(extra.value)
    with pytest.raises(UnknownTool):
        tools.resolve("rm_rf", {})
    with pytest.raises(ToolError) as huge:
        tools.resolve("type_index", {"index": 1, "text": "x" * (MAX_ARGS_BYTES + 1)})
    assert huge.value.code == "MESSAGE_TOO_LARGE"


def test_a_clients_new_tab_opens_in_the_background_unless_it_asks(
    specs: list[dict[str, Any]],
) -> None:
    tools = ToolSet(specs)
    assert tools.resolve("new_tab", {"url": "https://a.example"})[1]["active"] is False
    assert tools.resolve("new_tab", {"active": True})[1]["active"] is True


def test_playwright_names_translate_to_browy_calls(specs: list[dict[str, Any]]) -> None:
    tools = ToolSet(specs, "playwright")
    names = set(tools.names())
    assert {"browser_navigate", "browser_snapshot", "browser_click", "browser_type"} <= names
    assert {"browser_tabs", "browser_take_screenshot", "browser_wait_for"} <= names
    assert "navigate" in names  # Browy's own names stay
    assert tools.resolve("browser_click", {"element": "Buy button", "ref": "e7"}) == (
        "click_index",
        {"index": 7},
    )
    assert tools.resolve("browser_type", {"ref": "[2]", "text": "hi", "submit": True}) == (
        "type_index",
        {"index": 2, "text": "hi", "submit": True},
    )
    assert tools.resolve("browser_navigate", {"url": "https://a.example"}) == (
        "navigate",
        {"url": "https://a.example"},
    )
    assert tools.resolve("browser_tabs", {"action": "new"}) == ("new_tab", {"active": False})
    assert tools.resolve("browser_wait_for", {"time": 1.5}) == (SLEEP, {"seconds": 1.5})
    with pytest.raises(ToolError) as bad:
        tools.resolve("browser_click", {"element": "x", "ref": "the blue one"})
    assert bad.value.code == "INVALID_MESSAGE" and "ref" in str(bad.value)


def test_every_alias_names_a_real_browy_tool_with_arguments_it_accepts(tmp_path: Path) -> None:
    registry = build_registry(tmp_path)
    samples: dict[str, dict[str, Any]] = {
        "browser_navigate": {"url": "https://a.example"},
        "browser_click": {"ref": "1"},
        "browser_type": {"ref": "1", "text": "x"},
        "browser_select_option": {"ref": "1", "values": ["a"]},
        "browser_hover": {"ref": "1"},
        "browser_press_key": {"key": "Enter"},
        "browser_wait_for": {"text": "Done"},
        "browser_resize": {"width": 800, "height": 600},
        "browser_evaluate": {"function": "() => 1"},
        "browser_handle_dialog": {"accept": True, "promptText": "Ada"},
        "browser_drag": {"startRef": "e3", "endRef": "7"},
    }
    for alias in ALIASES.values():
        tool = registry.get(alias.tool)
        assert tool is not None, alias.name
        name, args = translate(alias.name, samples.get(alias.name, {"action": "list"}))
        target = registry.get(name)
        assert target is not None, (alias.name, name)
        target.params.model_validate(args)  # the Browy tool takes what the alias makes
    with pytest.raises(BadArguments):
        translate("browser_wait_for", {"time": 600})


def test_tool_content_becomes_mcp_text_and_images() -> None:
    assert mcp_content("hello") == [types.TextContent(text="hello")]
    parts = [
        {"type": "text", "text": "the page"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://not.inline/x.png"}},
    ]
    out = mcp_content(parts)
    assert out[0] == types.TextContent(text="the page")
    assert isinstance(out[1], types.ImageContent)
    assert out[1].mime_type == "image/png" and out[1].data == "iVBORw0KGgo="
    assert isinstance(out[2], types.TextContent) and "not.inline" in out[2].text
