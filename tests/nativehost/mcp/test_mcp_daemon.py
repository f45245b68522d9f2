"""``browy mcp``'s server against the real daemon (in this loop, over its real link), with the
SDK's own in-memory client: consent asked once in the browser's panel and remembered, calls as
journaled turns, cancellation, a daemon restart mid-call, and bad input as clear tool errors.

The relay is played by a :class:`LinkPeer` answering browser requests like the extension (a
fake tab); the end-to-end module (tests/e2e/test_mcp_e2e.py) runs the same over real Chromium.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from nativehost.config import load_config
from nativehost.mcp.server import BrowyMcp
from tests.helpers.daemon_harness import DaemonHarness, FakeTab, LinkPeer

pytestmark = pytest.mark.timeout(60)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


@contextlib.asynccontextmanager
async def _client(
    home: Path,
    name: str = "test-agent",
    naming: Any = "browy",
    browser: str | None = None,
    elicit: Any = None,
) -> AsyncIterator[Client]:
    mcp = BrowyMcp(home, version="test", naming=naming, browser=browser)
    try:
        async with Client(
            mcp.server,
            client_info=types.Implementation(name=name, version="1"),
            mode="legacy",
            elicitation_callback=elicit,
        ) as client:
            yield client
    finally:
        await mcp.close()


async def _browser(
    harness: DaemonHarness, tab: Any = None, capabilities: tuple[str, ...] = ()
) -> LinkPeer:
    """A v2 browser connection with its side panel open (``sp-1``)."""
    peer = await harness.peer(tab or FakeTab())
    await peer.hello(protocol=2, capabilities=capabilities)
    await peer.start("sp-1", tabs=True)
    return peer


NEVER_ASK = '[tools]\napproval_mode = "never"\n'
LOCAL_OK = "allow_local_clients = true\n" + NEVER_ASK  # (after the harness's [daemon] table)


async def _answer_consent(
    peer: LinkPeer, decision: str, tool: str = "mcp_client"
) -> dict[str, Any]:
    ask, _ = await peer.until("approval.request", session_id="sp-1", tool=tool)
    await peer.send(
        {"type": "approval.response", "sessionId": "sp-1",
         "approvalId": ask["approvalId"], "decision": decision}
    )  # fmt: skip
    return ask


async def test_consent_is_asked_once_in_the_panel_and_always_is_remembered(
    tmp_path: Path,
) -> None:
    async with DaemonHarness(tmp_path / "home", {"steps": []}) as harness:
        peer = await _browser(harness)
        async with _client(harness.home, "claude-code") as client:
            tools = await client.list_tools()  # listing asks nobody
            assert "navigate" in {t.name for t in tools.tools}
            call = asyncio.ensure_future(
                client.call_tool("new_tab", {"url": "https://example.test/a"})
            )
            ask = await _answer_consent(peer, "allow_site")
            assert ask["args"] == {"client": "claude-code"} and ask["risk"] == "high"
            # Opening a tab is guarded (approval_mode page-changing): asked in the browser's
            # panel too, like a panel turn's.
            guarded = await _answer_consent(peer, "allow", tool="new_tab")
            assert guarded["args"]["url"] == "https://example.test/a"
            result = await asyncio.wait_for(call, 15)
            assert not result.is_error, _text(result)
            assert "example.test/a" in _text(result)
        config = load_config(harness.home, env={})
        assert config.mcp.allowed_clients == ("claude-code",)
        # The same client again: not asked who it is, only about the guarded action.
        async with _client(harness.home, "claude-code") as client:
            call = asyncio.ensure_future(
                client.call_tool("new_tab", {"url": "https://example.test/b"})
            )
            await _answer_consent(peer, "allow", tool="new_tab")
            result = await asyncio.wait_for(call, 15)
            assert not result.is_error, _text(result)
        consents = [m for m in peer.log if m.get("tool") == "mcp_client"]
        assert consents == [ask]


async def test_a_denied_client_gets_a_clear_refusal_and_drives_nothing(tmp_path: Path) -> None:
    async with DaemonHarness(tmp_path / "home", {"steps": []}, config=NEVER_ASK) as harness:
        peer = await _browser(harness)
        async with _client(harness.home, "sneaky") as client:
            call = asyncio.ensure_future(
                client.call_tool("new_tab", {"url": "https://example.test/x"})
            )
            await _answer_consent(peer, "deny")
            result = await asyncio.wait_for(call, 15)
        assert result.is_error
        assert _text(result).startswith("error APPROVAL_DENIED") and "sneaky" in _text(result)
        assert not [c for c in peer.browser_calls if c.get("type") == "tab.new"]


async def test_without_a_panel_or_a_browser_the_client_is_told_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("actors.agent.sessions.BROWSER_WAIT_S", 0.3)
    async with (
        DaemonHarness(tmp_path / "home", {"steps": []}) as harness,
        _client(harness.home) as client,
    ):
        result = await client.call_tool("list_tabs", {})
        assert result.is_error and "NO_CAPABILITY" in _text(result)
        assert "open the Browy side panel" in _text(result)
        # A browser without a v2 panel: nobody to ask.
        peer = await harness.peer(FakeTab())
        await peer.hello(protocol=2)
        result = await client.call_tool("list_tabs", {})
        assert result.is_error and "APPROVAL_DENIED" in _text(result)
        assert "Open the Browy side panel" in _text(result)


async def test_a_call_waits_for_a_browser_that_is_connecting(tmp_path: Path) -> None:
    async with (
        DaemonHarness(tmp_path / "home", {"steps": []}, config=LOCAL_OK) as harness,
        _client(harness.home) as client,
    ):
        call = asyncio.ensure_future(
            client.call_tool("new_tab", {"url": "https://example.test/late"})
        )
        await asyncio.sleep(0.5)  # the call is waiting for a browser; one connects now
        assert not call.done()
        await _browser(harness)
        result = await asyncio.wait_for(call, 10)
        assert not result.is_error, _text(result)


async def test_allow_local_clients_lets_every_client_in_and_calls_are_journaled(
    tmp_path: Path,
) -> None:
    async with DaemonHarness(tmp_path / "home", {"steps": []}, config=LOCAL_OK) as harness:
        peer = await _browser(harness)
        async with _client(harness.home, "codex") as client:
            opened = await client.call_tool("new_tab", {"url": "https://example.test/i"})
            assert not opened.is_error, _text(opened)
            result = await client.call_tool("navigate", {"url": "https://example.test/j"})
            assert not result.is_error, _text(result)
            bad = await client.call_tool("navigate", {"url": 42})
            assert bad.is_error and _text(bad).startswith("error INVALID_MESSAGE")
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("format_disk", {})
            assert unknown.value.code == types.INVALID_PARAMS
            huge = await client.call_tool("navigate", {"url": "https://e.test/" + "a" * 300_000})
            assert huge.is_error and "MESSAGE_TOO_LARGE" in _text(huge)
        assert not [m for m in peer.log if m.get("tool") == "mcp_client"]
        assert harness.server is not None
        chats = harness.server.agent.store.list_chats("mcp")
        assert chats, "the client's calls are journaled"
        rows = harness.server.agent.store.chat("mcp", chats[0].id).turn_rows()
        tools = [r for _, turn in rows for r in turn if r.get("role") == "tool"]
        assert [t["name"] for t in tools] == ["new_tab", "navigate"]
        assert all(t["ok"] for t in tools)


async def test_cancelling_a_call_cancels_the_browser_call_and_the_next_call_works(
    tmp_path: Path,
) -> None:
    tab = FakeTab()
    hold = {"on": True}

    def browser(msg: dict[str, Any]) -> Any:
        if hold["on"] and msg.get("method") == "Page.navigate":
            return None  # the page never answers
        return tab(msg)

    async with DaemonHarness(tmp_path / "home", {"steps": []}, config=LOCAL_OK) as harness:
        peer = await _browser(harness, browser)
        async with _client(harness.home) as client:
            assert not (await client.call_tool("new_tab", {})).is_error
            with anyio.move_on_after(1.0) as scope:
                await client.call_tool("navigate", {"url": "https://example.test/slow"})
            assert scope.cancelled_caught
            await peer.until("cdp.cancel", timeout=5.0)  # the browser call is cancelled
            hold["on"] = False
            result = await client.call_tool("navigate", {"url": "https://example.test/ok"})
            assert not result.is_error, _text(result)
        sent = [c for c in peer.browser_calls if c.get("method") == "Page.navigate"]
        assert [c["params"]["url"] for c in sent] == [
            "https://example.test/slow",
            "https://example.test/ok",
        ]  # the cancelled navigation was not sent again


async def test_a_daemon_restart_mid_call_ends_it_unknown_and_the_next_call_reconnects(
    tmp_path: Path,
) -> None:
    tab = FakeTab()
    hold = {"on": True}
    reached = asyncio.Event()

    def browser(msg: dict[str, Any]) -> Any:
        if msg.get("method") == "Page.navigate" and hold["on"]:
            reached.set()
            return None
        return tab(msg)

    async with DaemonHarness(tmp_path / "home", {"steps": []}, config=LOCAL_OK) as harness:
        await _browser(harness, browser)
        async with _client(harness.home) as client:
            assert not (await client.call_tool("new_tab", {})).is_error
            call = asyncio.ensure_future(
                client.call_tool("navigate", {"url": "https://example.test/cut"})
            )
            await asyncio.wait_for(reached.wait(), 10)
            await harness.stop_daemon()
            result = await asyncio.wait_for(call, 5)  # at once, not after a reconnect
            assert result.is_error
            assert _text(result).startswith("outcome unknown: the action was sent")
            assert "CONNECTION_LOST" in _text(result)
            await harness.start_daemon()
            hold["on"] = False
            for old in harness.peers:
                await old.close()
            harness.peers.clear()
            await _browser(harness, browser)
            again = await client.call_tool("navigate", {"url": "https://example.test/next"})
            assert not again.is_error, _text(again)


async def _listing(peer: LinkPeer, want: Any) -> list[dict[str, Any]]:
    """The panel's next ``clients.list`` whose clients satisfy *want*."""
    while True:
        listed, _ = await peer.until("clients.list", session_id="sp-1")
        if want(listed["clients"]):
            return list(listed["clients"])


async def test_a_client_works_in_its_own_tabs_and_asks_for_the_users(tmp_path: Path) -> None:
    tab = FakeTab()
    async with (
        DaemonHarness(tmp_path / "home", {"steps": []}, config=LOCAL_OK) as harness,
        _client(harness.home, "agent-x") as client,
    ):
        peer = await _browser(harness, tab, capabilities=("clients", "tab.groups"))
        # No tab of its own yet: the user's active tab is not taken.
        first = await client.call_tool("navigate", {"url": "https://example.test/n"})
        assert first.is_error and "NO_CAPABILITY" in _text(first) and "new_tab" in _text(first)
        assert not [c for c in peer.browser_calls if c.get("type") == "tab.getActive"]
        # A tab of its own, in the background, in a group named after it.
        assert not (await client.call_tool("new_tab", {"url": "https://example.test/o"})).is_error
        assert tab.opened[-1]["group"] == "agent-x" and tab.opened[-1]["active"] is False
        (listed,) = await _listing(peer, lambda c: c and c[0]["tabs"])
        assert listed["name"] == "agent-x" and listed["tabs"] == [7]
        assert not (await client.call_tool("navigate", {"url": "https://e.test/"})).is_error
        # Another tab of the user's: asked in the panel first.
        call = asyncio.ensure_future(client.call_tool("switch_tab", {"tab_id": 99}))
        ask = await _answer_consent(peer, "deny", tool="mcp_tab")
        assert ask["args"] == {"client": "agent-x", "tabId": 99}
        refused = await asyncio.wait_for(call, 10)
        assert refused.is_error and "APPROVAL_DENIED" in _text(refused)


async def test_the_panel_stops_a_client_and_hands_it_a_tab(tmp_path: Path) -> None:
    tab = FakeTab()
    hold = {"on": True}

    def browser(msg: dict[str, Any]) -> Any:
        if hold["on"] and msg.get("method") == "Page.navigate":
            return None
        return tab(msg)

    async with (
        DaemonHarness(tmp_path / "home", {"steps": []}, config=NEVER_ASK) as harness,
        _client(harness.home, "agent-y") as client,
    ):
        peer = await _browser(harness, browser, capabilities=("clients",))
        call = asyncio.ensure_future(client.call_tool("new_tab", {}))
        await _answer_consent(peer, "allow_session")
        assert not (await asyncio.wait_for(call, 10)).is_error
        (listed,) = await _listing(peer, lambda c: c and c[0]["tabs"])
        client_id = listed["clientId"]
        slow = asyncio.ensure_future(
            client.call_tool("navigate", {"url": "https://example.test/held"})
        )
        while not [c for c in peer.browser_calls if c.get("method") == "Page.navigate"]:
            await asyncio.sleep(0.02)
        await peer.send({"type": "client.stop", "sessionId": "sp-1", "clientId": client_id})
        stopped = await asyncio.wait_for(slow, 10)
        assert stopped.is_error and "unknown" in _text(stopped).lower()
        hold["on"] = False
        # Stopped: it must be allowed again.
        again = asyncio.ensure_future(client.call_tool("list_tabs", {}))
        await _answer_consent(peer, "allow")
        assert not (await asyncio.wait_for(again, 10)).is_error
        # Handed a tab by the user: it works there.
        (listed,) = await _listing(peer, lambda c: len(c) == 1 and not c[0]["tabs"])
        await peer.send(
            {"type": "client.hand_tab", "sessionId": "sp-1",
             "clientId": listed["clientId"], "tabId": 7}
        )  # fmt: skip
        await _listing(peer, lambda c: c and c[0]["tabs"] == [7])
        assert not (await client.call_tool("navigate", {"url": "https://e.test/h"})).is_error
        navs = [
            c["params"]["url"] for c in peer.browser_calls if c.get("method") == "Page.navigate"
        ]
        assert navs == ["https://example.test/held", "https://e.test/h"]  # never sent again
        # Taken back: the client works there no more.
        await peer.send(
            {"type": "client.take_tab", "sessionId": "sp-1",
             "clientId": listed["clientId"], "tabId": 7}
        )  # fmt: skip
        await _listing(peer, lambda c: c and c[0]["tabs"] == [])
        after = await client.call_tool("navigate", {"url": "https://e.test/after"})
        assert after.is_error and "no tab yet" in _text(after)


async def test_a_client_pinned_to_a_browser_drives_that_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("actors.agent.sessions.BROWSER_WAIT_S", 0.3)
    async with DaemonHarness(tmp_path / "home", {"steps": []}, config=LOCAL_OK) as harness:
        chrome_tab, edge_tab = FakeTab(), FakeTab()
        chrome = await harness.peer(chrome_tab)
        await chrome.hello(protocol=2, install_id="profile-chrome", browser="chrome")
        edge = await harness.peer(edge_tab)
        await edge.hello(protocol=2, install_id="profile-edge", browser="edge")
        await chrome.start("sp-c", tabs=True)  # chrome is the most recently active
        async with _client(harness.home, "pinned", browser="edge") as client:
            assert not (await client.call_tool("new_tab", {"url": "https://e.test/"})).is_error
        assert edge_tab.opened and not chrome_tab.opened
        async with _client(harness.home, "nowhere", browser="brave") as client:
            result = await client.call_tool("new_tab", {})
        assert result.is_error and "brave is not connected" in _text(result)
        assert "chrome" in _text(result) and "edge" in _text(result)


async def test_a_client_the_config_names_is_asked_too_and_others_never_are(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "allow"})

    config = 'allow_local_clients = true\n[mcp]\nelicit_clients = ["asker"]\n'
    async with DaemonHarness(tmp_path / "home", {"steps": []}, config=config) as harness:
        peer = await _browser(harness)
        # Named in [mcp] elicit_clients: its own user answers (the panel's card goes unanswered).
        async with _client(harness.home, "asker", elicit=elicit) as client:
            result = await asyncio.wait_for(client.call_tool("new_tab", {}), 15)
        assert not result.is_error, _text(result)
        assert len(asked) == 1 and "new_tab" in asked[0]
        await peer.until("approval.request", session_id="sp-1", tool="new_tab")  # the panel's
        # Not named: never asked, however it answers; the panel decides.
        async with _client(harness.home, "self-approver", elicit=elicit) as client:
            call = asyncio.ensure_future(client.call_tool("new_tab", {}))
            await _answer_consent(peer, "deny", tool="new_tab")
            denied = await asyncio.wait_for(call, 15)
        assert denied.is_error and len(asked) == 1
