"""Host tools switched on by the host's own settings (``[tools] enabled_host_tools``: the options
page or ``browy config``), each off by default, whatever the panel's toggles say."""

from __future__ import annotations

from pathlib import Path

import pytest

from nativehost.config import load_config, set_config_value
from nativehost.config_schema import ConfigError
from tests.helpers.daemon_harness import DaemonHarness


def offered(h: DaemonHarness) -> set[str]:
    return {t["function"]["name"] for t in h.model.requests[-1].get("tools", [])}


async def test_no_host_tool_is_offered_until_one_is_switched_on(tmp_path: Path) -> None:
    async with DaemonHarness(tmp_path, [{"text": "a"}, {"text": "b"}]) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "hi"})
        await peer.turn_end("sp-1")
        tools = offered(h)
        assert not tools & {"write_file", "bash", "grep", "glob", "web_fetch", "run_script"}
        assert "note_set" in tools
        # The options page switches two on: the next turn is offered them, and no others.
        await peer.send(
            {"type": "config.set", "values": {"tools.enabled_host_tools": ["grep", "web_fetch"]}}
        )
        result, _ = await peer.until("config.result")
        assert result["values"]["tools.enabled_host_tools"] == ["grep", "web_fetch"]
        field = result["schema"]["properties"]["tools"]["properties"]["enabled_host_tools"]
        assert field["items"]["enum"] == [
            "write_file", "grep", "glob", "web_fetch", "bash", "run_script"]  # fmt: skip
        assert "anything your account can" in field["items"]["descriptions"]["bash"]
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "again"})
        await peer.turn_end("sp-1")
        tools = offered(h)
        assert {"grep", "web_fetch"} <= tools
        assert not tools & {"write_file", "bash", "glob", "run_script"}


def test_browy_config_switches_host_tools_on_and_refuses_unknown_ones(tmp_path: Path) -> None:
    set_config_value(tmp_path, "tools.enabled_host_tools", "grep,glob")
    assert load_config(tmp_path, env={}).tools.enabled_host_tools == ("grep", "glob")
    with pytest.raises(ConfigError, match="enabled_host_tools"):
        set_config_value(tmp_path, "tools.enabled_host_tools", "grep,rm_rf")


def test_host_code_tools_need_host_code_allowed_as_well(tmp_path: Path) -> None:
    from actors.tools.catalog import ToolCatalog, ToolSettings, build_registry

    on = frozenset({"bash", "run_script", "grep"})
    registry = build_registry(tmp_path)
    without = ToolCatalog(registry, lambda: ToolSettings(enabled_host_tools=on))
    names = {d["function"]["name"] for d in without.definitions(
        without.policy(frozenset(), frozenset(), 2), browser=False, protocol=2)}  # fmt: skip
    assert "grep" in names and not names & {"bash", "run_script"}
    allowed = ToolCatalog(
        registry, lambda: ToolSettings(enabled_host_tools=on, allow_host_code=True)
    )
    names = {d["function"]["name"] for d in allowed.definitions(
        allowed.policy(frozenset(), frozenset(), 2), browser=False, protocol=2)}  # fmt: skip
    assert {"bash", "run_script", "grep"} <= names
