"""What the cross-origin frames add to a snapshot: each frame's lines, under a line naming it.

The frames themselves (their worlds, sessions and slots) are :mod:`actors.tools.frames`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from actors.tools.cdp import CdpError
from actors.tools.closed_roots import adopt_closed_roots
from actors.tools.frames import MAX_DEPTH, MAX_FRAMES, Frames

__all__ = ["FrameBlocks", "frame_blocks"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class FrameBlocks:
    """What the cross-origin frames add to a snapshot."""

    lines: list[str] = field(default_factory=list)
    count: int = 0
    listed: int = 0
    shown: int = 0
    new: int = 0
    ms: float = 0.0  # time spent inside the frames' pages


def _label(src: str) -> str:
    host_path = src.split("://", 1)[-1].split("?", 1)[0]
    return host_path[:80] or "(no address)"


async def frame_blocks(
    frames: Frames,
    main_context: int,
    found: list[dict[str, Any]],
    opts: dict[str, Any],
    tokens: dict[int, str],
) -> FrameBlocks:
    """Snapshot each cross-origin frame the top snapshot ``found`` in its own world and return
    its lines (under a ``-- frame k: <address> --`` line) and counts; a frame that cannot be
    reached gets a ``#`` line saying so and what to do instead. ``tokens`` learns each frame's
    document token (the element numbers of a frame are checked against it)."""
    out = FrameBlocks()
    budget = max(2000, int(opts.get("max_chars") or 12_000) // 3)
    # Breadth first: the top document's frames, then the frames inside each, MAX_DEPTH down.
    queue: list[tuple[dict[str, Any], int, int]] = [(f, 1, 0) for f in found]  # (frame, depth, in)
    walked = 0
    while queue and walked < MAX_FRAMES:
        f, depth, parent = queue.pop(0)
        walked += 1
        slot, label = int(f["slot"]), _label(str(f.get("src", "")))
        inside = f", inside frame {parent}" if parent else ""
        try:
            got = await frames.world(slot, main_context)
            if isinstance(got, str):
                out.lines.append(
                    f"# frame {slot} {label} (cross-origin{inside}): {got}, so its controls are "
                    f"not listed; open {f.get('src')} in a tab of its own (new_tab) to use it, or "
                    "ask the user"
                )
                continue
            frame = {"slot": slot, "x": f["x"], "y": f["y"], "vw": f["vw"], "vh": f["vh"]}
            args = opts | {"frame": frame, "max_chars": budget}
            res = await frames.evaluate(got, f"__browy.snapshot({json.dumps(args)})")
            # Closed shadow roots in the frame, as in the top document (actors.tools.closed_roots).
            for _round in range(3):
                if not res.get("closed_hosts") or got.context_id is None:
                    break
                if not await adopt_closed_roots(got.session, got.context_id):
                    break
                redo = json.dumps(args | {"redo": True})
                res = await frames.evaluate(got, f"__browy.snapshot({redo})")
            if depth < MAX_DEPTH:
                for inner in res.get("frames") or []:
                    # Its box is in the frame's own pixels: the frame's offset added, the top
                    # viewport kept.
                    nested = await frames.nested_slot(slot, int(inner["slot"]), main_context)
                    x, y = inner["x"] + f["x"], inner["y"] + f["y"]
                    down = inner | {"slot": nested, "x": x, "y": y, "vw": f["vw"], "vh": f["vh"]}
                    queue.append((down, depth + 1, slot))
        except CdpError as exc:
            log.info("frame %s (%s) not read: %s", slot, label, exc.message)
            out.lines.append(f"# frame {slot} {label}: could not be read ({exc.wire_message})")
            continue
        tokens[slot] = str(res["token"])
        site = "another site" if got.other_site else "cross-origin"
        out.lines.append(f"-- frame {slot}: {label} ({site}{inside}) --")
        out.lines.extend(ln for ln in str(res["text"]).splitlines() if ln)
        out.count += int(res["count"])
        out.listed += int(res["listed"])
        out.shown += int(res["shown"])
        out.new += int(res["new"])
        out.ms += float(res["ms"])
    if queue:
        out.lines.append(f"# {len(queue)} more cross-origin frames not read (at most {MAX_FRAMES})")
    return out
