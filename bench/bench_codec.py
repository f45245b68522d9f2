"""Native messaging codec throughput against a naive baseline measured in the same run.

The baseline is what a straightforward implementation does: stdlib ``json`` + ``struct``, a
``bytes`` buffer grown by concatenation and re-sliced after every frame. Figures:

- small frames: ~200-byte ``chat.delta``-like messages, frames/s, decoding (framing + JSON +
  the object/type check) and encoding (JSON + length prefix);
- large frames: 512 KiB messages (a screenshot-sized ``tool.result``), MB/s of payload.

Input arrives in 64 KiB chunks, the size a pipe read typically returns. Each figure is the best
of a few repeats. Goal: at least 3x the baseline on small frames. Run: ``python -m bench codec``.
"""

import base64
import json
import os
import struct
import time
from collections.abc import Callable
from typing import Any

from messages.codec import Frame, NativeFrameDecoder, decode_message, encode_message

__all__ = ["main"]

CHUNK = 64 * 1024
SMALL_COUNT = 20_000
LARGE_COUNT = 24
LARGE_SIZE = 512 * 1024
REPEATS = 5
GOAL = 3.0
_WORDS = "the agent found the sign-in form and typed the user name into it"


class NaiveDecoder:
    """The baseline: concatenate, then slice each frame off the front of the buffer."""

    def __init__(self) -> None:
        self.buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        self.buf += data
        frames = []
        while len(self.buf) >= 4:
            (length,) = struct.unpack("<I", self.buf[:4])
            if len(self.buf) < 4 + length:
                break
            frames.append(self.buf[4 : 4 + length])
            self.buf = self.buf[4 + length :]
        return frames


def naive_decode(stream_chunks: list[bytes]) -> int:
    decoder = NaiveDecoder()
    count = 0
    for chunk in stream_chunks:
        for payload in decoder.feed(chunk):
            obj = json.loads(payload.decode("utf-8"))
            if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
                raise ValueError("bad message")
            count += 1
    return count


def naive_encode(messages: list[dict[str, Any]]) -> int:
    total = 0
    for message in messages:
        payload = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        total += len(struct.pack("<I", len(payload)) + payload)
    return total


def codec_decode(stream_chunks: list[bytes]) -> int:
    decoder = NativeFrameDecoder()
    count = 0
    for chunk in stream_chunks:
        decoder.feed(chunk)
        for event in decoder.events():
            if not isinstance(event, Frame):
                raise ValueError("stream broken")
            decode_message(event.payload)
            count += 1
    return count


def codec_encode(messages: list[dict[str, Any]]) -> int:
    total = 0
    for message in messages:
        total += len(encode_message(message))
    return total


def _small_messages() -> list[dict[str, Any]]:
    words = _WORDS.split()
    messages = []
    for i in range(SMALL_COUNT):
        text = " ".join(words[(i + k) % len(words)] for k in range(27))
        messages.append({"type": "chat.delta", "sessionId": "sp-1f2e3d4c5b6a", "text": text})
    return messages


def _large_messages() -> list[dict[str, Any]]:
    raw = os.urandom(LARGE_SIZE * 3 // 4 - 96)
    data = base64.b64encode(raw).decode("ascii")
    return [
        {
            "type": "tool.result",
            "sessionId": "sp-1f2e3d4c5b6a",
            "callId": f"c-{i}",
            "ok": True,
            "result": {"tabId": 812, "result": {"data": data}},
        }
        for i in range(LARGE_COUNT)
    ]


def _chunks(messages: list[dict[str, Any]]) -> list[bytes]:
    stream = b"".join(encode_message(m) for m in messages)
    return [stream[i : i + CHUNK] for i in range(0, len(stream), CHUNK)]


def _best(fn: Callable[[Any], int], arg: Any, expected: int | None = None) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = fn(arg)
        best = min(best, time.perf_counter() - started)
        if expected is not None and result != expected:
            raise AssertionError(f"{fn.__name__} returned {result}, expected {expected}")
    return best


def main() -> None:
    """Measure, print the table, and say whether the small-frame goal is met."""
    rows: list[tuple[str, str, float, float]] = []

    small = _small_messages()
    small_chunks = _chunks(small)
    avg = sum(map(len, small_chunks)) / len(small) - 4
    for label, ours, naive, arg, expected in (
        ("small decode", codec_decode, naive_decode, small_chunks, len(small)),
        ("small encode", codec_encode, naive_encode, small, None),
    ):
        rows.append((label, "frames/s", len(small) / _best(ours, arg, expected),
                     len(small) / _best(naive, arg, expected)))  # fmt: skip
    dec, enc = rows[0], rows[1]
    # A round trip is one decode plus one encode: combine the per-frame times.
    rows.append(
        (
            "small decode+encode",
            "frames/s",
            1 / (1 / dec[2] + 1 / enc[2]),
            1 / (1 / dec[3] + 1 / enc[3]),
        )
    )

    large = _large_messages()
    large_chunks = _chunks(large)
    megabytes = sum(map(len, large_chunks)) / 1e6
    for label, ours, naive, arg, expected in (
        ("512 KiB decode", codec_decode, naive_decode, large_chunks, len(large)),
        ("512 KiB encode", codec_encode, naive_encode, large, None),
    ):
        rows.append((label, "MB/s", megabytes / _best(ours, arg, expected),
                     megabytes / _best(naive, arg, expected)))  # fmt: skip

    print(f"small frames: {len(small)} x ~{avg:.0f} bytes; large: {len(large)} x 512 KiB;")
    print(f"input in {CHUNK // 1024} KiB chunks; best of {REPEATS}")
    print(f"{'case':<22}{'unit':<10}{'codec':>14}{'baseline':>14}{'ratio':>9}")
    for label, unit, ours_rate, naive_rate in rows:
        ratio = ours_rate / naive_rate
        print(f"{label:<22}{unit:<10}{ours_rate:>14,.0f}{naive_rate:>14,.0f}{ratio:>8.1f}x")
    small_ratio = rows[2][2] / rows[2][3]
    verdict = "met" if small_ratio >= GOAL else "NOT met"
    print(f"goal >= {GOAL:.0f}x baseline on small frames (decode+encode): {verdict}")


if __name__ == "__main__":
    main()
