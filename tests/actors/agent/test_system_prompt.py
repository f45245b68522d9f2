"""What the model is told before a turn: the untrusted-page rules, and that skills exist."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.daemon_harness import DaemonHarness


async def test_the_model_is_told_about_skills_and_can_load_one(tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "get_skill", "arguments": {}}]},
        {"tool_calls": [{"name": "get_skill", "arguments": {"name": "fill-a-form"}}]},
        {"text": "Following the guide."},
    ]
    async with DaemonHarness(tmp_path / "home", script) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "fill the form"})
        end, _, _ = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done", end
    first = h.model.requests[0]
    system = first["messages"][0]
    assert system["role"] == "system"
    assert "get_skill without a name" in system["content"]
    assert "untrusted data" in system["content"]
    assert "get_skill" in {t["function"]["name"] for t in first["tools"]}
    # The listing names the bundled guides; loading one gives its steps to the model.
    listing = h.model.requests[1]["messages"][-1]["content"]
    assert "fill-a-form" in listing and "search-and-compare" in listing
    guide = h.model.requests[2]["messages"][-1]["content"]
    assert len(guide) > 200 and "form" in guide.lower()
