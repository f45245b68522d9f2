"""The fault kinds of ``browy chaos`` and the seams that inject them (see
:mod:`nativehost.chaos.harness`).

Here: the fault-kind tables of both modes, :class:`FaultyFsync` (the journal's fsync seam),
:class:`_CrashOnCue` (a message an actor cannot handle), the record of one injected fault, and the
scripted model's steps for each turn (:func:`turn_steps`), where the model faults are put in. The
frame and browser faults fire in the fake peer (:mod:`nativehost.chaos.peer`); the process-mode
kills in :mod:`nativehost.chaos.process_mode`.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ACTOR_TARGETS",
    "ALL_FAULTS",
    "BROWSER_FAULTS",
    "FRAME_FAULTS",
    "IN_PROCESS_FAULTS",
    "MODEL_FAULTS",
    "PROCESS_FAULTS",
    "SCRIPT_HEAD",
    "FaultyFsync",
    "turn_steps",
]

FRAME_FAULTS = (
    "frame_corrupt",
    "frame_truncated",
    "frame_duplicate",
    "frame_delay",
    "frame_reorder",
)
BROWSER_FAULTS = ("browser_late", "browser_never", "browser_twice")

MODEL_FAULTS = ("model_5xx", "model_hang", "model_disconnect")
IN_PROCESS_FAULTS: tuple[str, ...] = (
    "actor_crash",
    "link_drop",
    *FRAME_FAULTS,
    *MODEL_FAULTS,
    *BROWSER_FAULTS,
    "fsync_fail",
)
PROCESS_FAULTS: tuple[str, ...] = ("relay_kill", "daemon_kill")
ALL_FAULTS = IN_PROCESS_FAULTS + PROCESS_FAULTS
ACTOR_TARGETS = ("connection", "session-router", "turn-scheduler", "tool-worker", "cdp-proxy")


class FaultyFsync:
    """The journal's fsync seam: fails with ``EIO`` while armed, else ``os.fsync``."""

    def __init__(self) -> None:
        self.failing_until = 0.0
        self.failures = 0

    def arm(self, seconds: float) -> None:
        self.failing_until = time.monotonic() + seconds

    def __call__(self, fd: int) -> None:
        if time.monotonic() < self.failing_until:
            self.failures += 1
            raise OSError(errno.EIO, "chaos: injected fsync failure")
        os.fsync(fd)


class _CrashOnCue:
    """A message no actor knows: any attribute read raises, so a handler that looks at it
    crashes (conventions.md item 12: an actor that crashes on cue)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"chaos: crash on cue ({name})")


@dataclass(slots=True)
class _Injected:
    kind: str
    at: float
    detail: str = ""
    sessions: frozenset[str] = frozenset()  # the sessions it hit; empty: all of them


def _marker(index: int) -> str:
    return f"<chaos-s{index:02d}>"


def _tag(number: int) -> str:
    return f"[turn {number:04d}]"


def _url(index: int, number: int) -> str:
    return f"https://chaos.test/s{index:02d}/t{number:04d}"


#: The script a run's model server starts with; each turn's steps are added just before it
#: starts (``ScriptedModelServer.extend``), so a long run holds only the steps in flight.
SCRIPT_HEAD: dict[str, Any] = {"models": ["chaos-model"], "steps": []}


def turn_steps(s: int, n: int, fault: str | None = None) -> list[dict[str, Any]]:
    """The steps for session *s*, turn *n*: a tool step (one page-changing ``new_tab`` with a
    unique URL and a host-side ``note_set``), then a text answer; a model *fault* goes first."""
    marker = _marker(s)
    first = {"user_contains": _tag(n), "tool_result": False}
    steps: list[dict[str, Any]] = []
    if fault == "model_5xx":
        steps.append(
            {"session": marker, "match": first, "fault": {"kind": "status", "status": 503}}
        )
    elif fault == "model_hang":
        steps.append({"session": marker, "match": first, "fault": {"kind": "hang"}})
    tool_step: dict[str, Any] = {
        "session": marker,
        "match": first,
        "text": f"Opening step {n}.",
        "tool_calls": [
            {"name": "new_tab", "arguments": {"url": _url(s, n)}},
            {"name": "note_set", "arguments": {"key": f"s{s}", "value": str(n)}},
        ],
    }
    if fault == "model_disconnect":
        tool_step["fault"] = {"kind": "disconnect", "after_chunks": 3}
    steps.append(tool_step)
    steps.append(
        {
            "session": marker,
            "match": {"user_contains": _tag(n), "tool_result": True},
            "text": f"Done with step {n}.",
        }
    )
    return steps
