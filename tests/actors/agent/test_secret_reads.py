"""Cookie and storage reads: asked every time, never remembered, never shown httpOnly values,
never written to the journal; a v1 panel (which cannot answer) is refused unless the config
allows them. Regressions of the security review (get_cookies needed no approval and returned
httpOnly session cookies to the model, and the journal kept them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.store.chat_store import sessions_dir
from tests.helpers.daemon_harness import DaemonHarness, FakeTab

SESSION = "s3cr3t-session-value"
THEME = "dark-theme-value"
COOKIES = [
    {"name": "sid", "value": SESSION, "domain": "example.test", "path": "/", "httpOnly": True},
    {"name": "theme", "value": THEME, "domain": "example.test", "path": "/"},
]
TWO_READS = [
    {"tool_calls": [{"name": "get_cookies", "arguments": {}}]},
    {"tool_calls": [{"name": "get_cookies", "arguments": {}}]},
    {"text": "Done."},
]


class CookieTab(FakeTab):
    """A tab whose origin is known and whose cookies can be read."""

    def __call__(self, msg: dict[str, Any]) -> tuple[bool, Any, str | None]:
        if msg["type"] == "cdp.send" and msg.get("method") == "Network.getCookies":
            return True, {"tabId": 7, "result": {"cookies": COOKIES}}, None
        if msg["type"] == "cdp.send" and "location.origin" in str(msg.get("params")):
            value = {"type": "string", "value": "https://example.test"}
            return True, {"tabId": 7, "result": {"result": value}}, None
        return super().__call__(msg)


def journal_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sessions_dir(home).rglob("*.journal"))


async def test_a_cookie_read_is_asked_every_time_even_after_allow_site(home: Path) -> None:
    config = '[tools]\napproval_mode = "never"\n'  # even when nothing else asks
    async with DaemonHarness(home, TWO_READS, config=config) as h:
        peer = await h.peer(browser=CookieTab())
        await peer.hello(2)
        await peer.start("sp-1", tabs=True)
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "read cookies"})
        for _ in range(2):  # allow_site is not remembered for a secret read: asked again
            request, _ = await peer.until("approval.request", session_id="sp-1")
            assert (request["tool"], request["origin"]) == ("get_cookies", "https://example.test")
            await peer.send(
                {"type": "approval.response", "sessionId": "sp-1",
                 "approvalId": request["approvalId"], "decision": "allow_site"}
            )  # fmt: skip
        end, _, _ = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done"
        seen_by_model = h.model.requests[1]["messages"][-1]["content"]
        assert "sid=(httpOnly: value not shown)" in seen_by_model and SESSION not in seen_by_model
        assert THEME in seen_by_model  # a script-readable value is shown, as page data
        assert "<untrusted_page_content>" in seen_by_model
        journal = journal_bytes(home)
        assert SESSION.encode() not in journal and THEME.encode() not in journal


@pytest.mark.parametrize(("setting", "allowed"), [("ask", False), ("allow", True)])
async def test_a_v1_panel_cannot_read_cookies_unless_the_config_allows_it(
    home: Path, setting: str, allowed: bool
) -> None:
    script = [TWO_READS[0], {"text": "Done."}]
    config = f'[tools]\nsecret_reads = "{setting}"\n'
    async with DaemonHarness(home, script, config=config) as h:
        peer = await h.peer(browser=CookieTab())
        await peer.hello(1)
        await peer.start("sp-1", tabs=True)
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "read cookies"})
        end, _, seen = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done"
        [result] = [m for m in seen if m["type"] == "chat.tool_result"]
        assert result["ok"] is allowed
        reads = [c for c in peer.browser_calls if c.get("method") == "Network.getCookies"]
        assert len(reads) == (1 if allowed else 0)


async def test_the_journal_is_redacted_like_the_log(home: Path) -> None:
    key = "sk-proj-" + "A1b2C3d4" * 4
    async with DaemonHarness(home, [{"text": f"Your key {key} is set."}]) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": f"use {key}"})
        await peer.turn_end("sp-1")
    assert key.encode() not in journal_bytes(home)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "browy"
