"""Regenerate and edit (v2 ``chat.send{replaces}``): the chat's last turn leaves the history and
the model's context; nothing it did on a page is replayed or undone, and the panel is told
whether it changed a page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.daemon_harness import DaemonHarness, FakeTab

NEVER_ASK = '[tools]\napproval_mode = "never"\n'


async def _turn(peer: Any, text: str, turn_id: str, replaces: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "type": "chat.send",
        "sessionId": "sp-1",
        "text": text,
        "turnId": turn_id,
    }
    if replaces is not None:
        msg["replaces"] = replaces
    await peer.send(msg)
    end, _, _ = await peer.turn_end("sp-1")
    return end


async def test_an_edited_turn_replaces_the_last_and_the_model_never_sees_it(tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "navigate", "arguments": {"url": "https://example.test/a"}}]},
        {"text": "Opened a."},
        {"text": "Opened nothing this time."},
        {"text": "Third."},
    ]
    async with DaemonHarness(tmp_path / "home", script, config=NEVER_ASK) as h:
        peer = await h.peer(FakeTab())
        await peer.hello(2)
        await peer.start("sp-1", tabs=True)
        assert (await _turn(peer, "open a", "t-1"))["text"] == "Opened a."
        # Edit the message: the old turn goes; it had navigated, and the panel is told so.
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "open b instead",
                         "turnId": "t-2", "replaces": "t-1"})  # fmt: skip
        replaced, _ = await peer.until("chat.replaced", session_id="sp-1")
        assert replaced == {"type": "chat.replaced", "sessionId": "sp-1", "turnId": "t-1",
                            "pageChanged": True}  # fmt: skip
        end, _, _ = await peer.turn_end("sp-1")
        assert end["text"] == "Opened nothing this time."
        contents = [str(m.get("content")) for m in h.model.requests[-1]["messages"]]
        assert not any("open a" in c for c in contents), contents
        assert any("open b instead" in c for c in contents)
        # Only the last turn may be replaced.
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "again",
                         "turnId": "t-3", "replaces": "t-1"})  # fmt: skip
        refused, _, _ = await peer.turn_end("sp-1")
        assert refused["type"] == "chat.error" and refused["code"] == "INVALID_MESSAGE"
        # The history shows the edited turn, not the replaced one, with its turn id.
        await peer.send({"type": "chat.history", "sessionId": "sp-1", "id": "sp-1"})
        history, _ = await peer.until("chat.history.result")
        users = [r for r in history["messages"] if r["role"] == "user"]
        assert [(u["text"], u["turnId"]) for u in users] == [("open b instead", "t-2")]
        # Regenerate a turn that changed nothing: pageChanged is false.
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "open b instead",
                         "turnId": "t-4", "replaces": "t-2"})  # fmt: skip
        replaced, _ = await peer.until("chat.replaced", session_id="sp-1")
        assert replaced["pageChanged"] is False
        assert (await peer.turn_end("sp-1"))[0]["text"] == "Third."
    navigations = [c for c in peer.browser_calls if c.get("method") == "Page.navigate"]
    assert len(navigations) == 1  # nothing was replayed
