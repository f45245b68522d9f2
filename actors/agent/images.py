"""Screenshots a tool took, kept a while for the panel that shows them inline.

A frame to the extension stays under Chrome's 1 MiB (protocol.md section 5) and a screenshot is
often larger, so a v2 ``chat.tool_result`` carries references (``images: {imageId, mime,
bytes}[]``), and the panel fetches each (``image.get``) as ``image.data`` chunks small enough
to fit. The bytes are kept here, per session, newest first, within :data:`MAX_IMAGES` and
:data:`MAX_BYTES` (the oldest go first); nothing of them is journaled. Only the session that
took an image may fetch it.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["CHUNK_CHARS", "MAX_BYTES", "MAX_IMAGES", "ImageRef", "ImageStore", "image_parts"]

MAX_IMAGES = 48
MAX_BYTES = 64 * 1024 * 1024
#: Base64 characters per ``image.data`` frame (well under 1 MiB with the envelope).
CHUNK_CHARS = 640 * 1024


@dataclass(frozen=True, slots=True)
class ImageRef:
    image_id: str
    mime: str
    size: int  # bytes of base64


@dataclass(frozen=True, slots=True)
class _Kept:
    session_id: str
    mime: str
    data: str  # base64


def image_parts(content: Any) -> Iterator[tuple[str, str]]:
    """(mime, base64) of each ``data:`` image in a tool's content parts."""
    if not isinstance(content, list):
        return
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "image_url":
            continue
        url = str((part.get("image_url") or {}).get("url", ""))
        head, comma, data = url.partition(",")
        if comma and head.startswith("data:") and head.endswith(";base64"):
            yield head[len("data:") : -len(";base64")] or "application/octet-stream", data


class ImageStore:
    def __init__(self, *, max_images: int = MAX_IMAGES, max_bytes: int = MAX_BYTES) -> None:
        self._images: OrderedDict[str, _Kept] = OrderedDict()
        self._bytes = 0
        self._max_images = max_images
        self._max_bytes = max_bytes

    def put(self, session_id: str, mime: str, data: str) -> ImageRef | None:
        """Keep one image for *session_id*; None when it is larger than the whole store."""
        if len(data) > self._max_bytes:
            return None
        image_id = f"img-{secrets.token_hex(8)}"
        self._images[image_id] = _Kept(session_id, mime, data)
        self._bytes += len(data)
        while len(self._images) > self._max_images or self._bytes > self._max_bytes:
            _, old = self._images.popitem(last=False)
            self._bytes -= len(old.data)
        return ImageRef(image_id, mime, len(data))

    def chunks(self, session_id: str, image_id: str) -> list[tuple[str, str]] | None:
        """The image as (mime, base64 chunk) pieces, or None (unknown, gone, or not this
        session's)."""
        kept = self._images.get(image_id)
        if kept is None or kept.session_id != session_id:
            return None
        data = kept.data
        return [
            (kept.mime, data[i : i + CHUNK_CHARS]) for i in range(0, max(len(data), 1), CHUNK_CHARS)
        ]

    def forget_session(self, session_id: str) -> None:
        for image_id in [k for k, v in self._images.items() if v.session_id == session_id]:
            self._bytes -= len(self._images.pop(image_id).data)

    def __len__(self) -> int:
        return len(self._images)
