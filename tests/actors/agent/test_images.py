"""Screenshots shown inline: kept per session within bounds, fetched in pieces under 1 MiB."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson

from actors.agent.images import CHUNK_CHARS, ImageStore, image_parts
from actors.link.link_writer import MAX_OUTBOUND_FRAME
from tests.helpers.daemon_harness import DaemonHarness, FakeTab


def test_the_store_keeps_the_newest_images_within_its_bounds_and_only_for_their_session() -> None:
    store = ImageStore(max_images=3, max_bytes=100)
    refs = [store.put("sp-1", "image/png", "A" * 30) for _ in range(4)]
    assert all(r is not None for r in refs) and len(store) == 3
    assert store.chunks("sp-1", refs[0].image_id) is None  # type: ignore[union-attr]
    assert store.chunks("sp-1", refs[3].image_id) == [("image/png", "A" * 30)]  # type: ignore[union-attr]
    assert store.chunks("sp-2", refs[3].image_id) is None  # type: ignore[union-attr]
    assert store.put("sp-1", "image/png", "B" * 101) is None  # larger than the whole store
    store.put("sp-1", "image/png", "C" * 60)
    assert len(store) <= 3
    store.forget_session("sp-1")
    assert len(store) == 0
    image = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,QUJD"}}
    parts = [{"type": "text", "text": "x"}, image]
    assert list(image_parts(parts)) == [("image/jpeg", "QUJD")]
    assert list(image_parts("plain text")) == []


async def test_a_screenshot_reaches_a_v2_panel_in_pieces_that_each_fit_a_frame(
    tmp_path: Path,
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 6000  # ~1.5 MB: more than one frame
    shot = base64.b64encode(png).decode()
    tab = FakeTab()

    def browser(msg: dict[str, Any]) -> Any:
        if msg.get("method") == "Page.captureScreenshot":
            return True, {"tabId": 7, "result": {"data": shot}}, None
        return tab(msg)

    script = [
        {"tool_calls": [{"name": "screenshot", "arguments": {}}]},
        {"text": "Here it is."},
    ]
    async with DaemonHarness(
        tmp_path / "home", script, config='[tools]\napproval_mode = "never"\n'
    ) as h:
        peer = await h.peer(browser)
        await peer.hello(2)
        await peer.start("sp-1", tabs=True)
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "show me"})
        result, _ = await peer.until("chat.tool_result", session_id="sp-1")
        await peer.turn_end("sp-1")
        (image,) = result["images"]
        assert image["mime"] == "image/png" and image["bytes"] == len(shot)
        # Another panel cannot fetch it.
        await peer.start("sp-2", tabs=True)
        await peer.send({"type": "image.get", "sessionId": "sp-2", "imageId": image["imageId"]})
        other, _ = await peer.until("image.data", session_id="sp-2")
        assert other["missing"] is True
        await peer.send({"type": "image.get", "sessionId": "sp-1", "imageId": image["imageId"]})
        pieces = [(await peer.until("image.data", session_id="sp-1"))[0]]
        while len(pieces) < pieces[0]["count"]:
            pieces.append((await peer.until("image.data", session_id="sp-1"))[0])
    assert len(pieces) == -(-len(shot) // CHUNK_CHARS) > 1
    assert all(len(orjson.dumps(p)) < MAX_OUTBOUND_FRAME for p in pieces)
    whole = "".join(p["data"] for p in sorted(pieces, key=lambda p: p["index"]))
    assert base64.b64decode(whole) == png
