"""What a turn's output looks like on the wire, so every frame stays under 1 MiB (protocol.md 5).

- :func:`split_delta`: streamed text in pieces that each fit one ``chat.delta`` frame;
- :func:`trim_args`: tool arguments as the panel is shown them (``chat.tool_call``,
  ``event.activity``, ``approval.request``), long strings trimmed with a marker.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DELTA_CHUNK_CHARS", "MAX_ARG_CHARS", "split_delta", "trim_args"]

MAX_ARG_CHARS = 4000
#: A chat.delta's text is split so each frame stays under Chrome's 1 MiB once JSON-encoded:
#: a character can take up to 6 bytes escaped (\u0001), so 128 K characters is at most 768 KiB.
DELTA_CHUNK_CHARS = 128 * 1024


def split_delta(text: str, chunk: int = DELTA_CHUNK_CHARS) -> list[str]:
    """Streamed text in pieces that each fit one frame (protocol.md section 5)."""
    return [text[i : i + chunk] for i in range(0, len(text), chunk)] or [""]


def trim_args(args: Any, limit: int = MAX_ARG_CHARS) -> Any:
    """Arguments for the panel: long strings trimmed with a marker (protocol.md section 5)."""
    if isinstance(args, str):
        return args if len(args) <= limit else args[:limit] + f"… [{len(args) - limit} more]"
    if isinstance(args, dict):
        return {k: trim_args(v, limit) for k, v in args.items()}
    if isinstance(args, list):
        return [trim_args(v, limit) for v in args[:200]]
    return args
