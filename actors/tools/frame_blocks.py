"""What the cross-origin frames add to a snapshot: each frame's lines, under a line naming it.

The frames themselves (their worlds, sessions and slots) are :mod:`actors.tools.frames`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from actors.tools.cdp import CdpError, ErrorCode
from actors.tools.closed_roots import adopt_closed_roots
from actors.tools.frames import MAX_DEPTH, MAX_FRAMES, Frames, FrameWorld

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
    document token (the element numbers of a frame are checked against it).

    A walk that had to switch a session's auto-attach off and on (a frame of another site that
    attached unheard) replaced the sessions of frames it may have read already: it is done once
    more, on the new sessions, so that no line it returns stands for a world that is gone."""
    for _attempt in range(2):
        generation = frames.generation
        out = await _walk(frames, main_context, found, opts, tokens)
        if frames.generation == generation:
            break
    return out


async def _walk(
    frames: Frames,
    main_context: int,
    found: list[dict[str, Any]],
    opts: dict[str, Any],
    tokens: dict[int, str],
) -> FrameBlocks:
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
            got, res = await _read(frames, slot, f, main_context, opts | {"max_chars": budget})
        except CdpError as exc:
            log.info("frame %s (%s) not read: %s", slot, label, exc.message)
            out.lines.append(f"# frame {slot} {label}: could not be read ({exc.wire_message})")
            continue
        if isinstance(got, str):
            out.lines.append(
                f"# frame {slot} {label} (cross-origin{inside}): {got}, so its controls are not "
                f"listed; open {f.get('src')} in a tab of its own (new_tab) to use it, or ask "
                "the user"
            )
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
        for inner in res.get("frames") or [] if depth < MAX_DEPTH else []:
            try:
                nested = await frames.nested_slot(slot, int(inner["slot"]), main_context)
            except CdpError as exc:  # the top document changed meanwhile: the next snapshot
                log.info("a frame inside frame %s not numbered: %s", slot, exc.message)
                break
            # Its box is in the frame's own pixels: the frame's offset added, the top viewport kept.
            x, y = inner["x"] + f["x"], inner["y"] + f["y"]
            queue.append(
                (
                    inner | {"slot": nested, "x": x, "y": y, "vw": f["vw"], "vh": f["vh"]},
                    depth + 1,
                    slot,
                )
            )
    if queue:
        out.lines.append(f"# {len(queue)} more cross-origin frames not read (at most {MAX_FRAMES})")
    return out


async def _read(
    frames: Frames, slot: int, f: dict[str, Any], main_context: int, opts: dict[str, Any]
) -> tuple[FrameWorld | str, dict[str, Any]]:
    """Frame ``slot``'s world (or why it cannot be reached) and its snapshot. A world kept from
    before whose frame has since shown another document is made again, once."""
    frame = {"slot": slot, "x": f["x"], "y": f["y"], "vw": f["vw"], "vh": f["vh"]}
    args = opts | {"frame": frame}
    got = await frames.world(slot, main_context)
    if isinstance(got, str):
        return got, {}
    expr = f"__browy.snapshot({json.dumps(args)})"
    try:
        res = await frames.evaluate(got, expr)
    except CdpError as exc:
        if exc.code is not ErrorCode.STALE_REF:
            raise
        got = await frames.world(slot, main_context)  # evaluate dropped the one that is gone
        if isinstance(got, str):
            return got, {}
        res = await frames.evaluate(got, expr)
    # Closed shadow roots in the frame, as in the top document (actors.tools.closed_roots).
    for _round in range(3):
        if not res.get("closed_hosts") or got.context_id is None:
            break
        if not await adopt_closed_roots(got.session, got.context_id):
            break
        res = await frames.evaluate(got, f"__browy.snapshot({json.dumps(args | {'redo': True})})")
    return got, res
