"""Progress for long work: numbered set-up steps (``browy demo``) and a live status line
(``browy chaos``).

On a terminal a step shows while it runs — ``[3/5] launching Chromium…`` — and is completed in
place when it ends (``… pid 4242 (0.8 s)``); a live line is rewritten in place with a carriage
return, padded, never wider than the terminal. Written to a pipe or a file (a log, a test, CI),
each step is one line once it has ended and there is no live line at all: nothing but plain lines
reaches a reader that cannot move the cursor. No colours either way.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO

__all__ = ["LiveLine", "Step", "Steps", "is_live"]


def is_live(stream: IO[str], env: Mapping[str, str]) -> bool:
    """True when *stream* is a terminal that can take a line rewritten in place."""
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass(slots=True)
class Step:
    """One step in progress; :meth:`done` sets what its line ends with."""

    detail: str = ""

    def done(self, detail: str) -> None:
        self.detail = detail


@dataclass(slots=True)
class Steps:
    """Numbered steps written to *out*; *live*: completed in place (a terminal)."""

    out: IO[str]
    total: int
    live: bool = False
    _number: int = field(default=0, init=False)

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[Step]:
        """``with steps.step("launching Chromium") as s: ...; s.done("pid 42")``."""
        self._number += 1
        head = f"[{self._number}/{self.total}] {what}"
        if self.live:
            self._write(f"{head}… ")
        started = time.monotonic()
        step = Step()
        try:
            yield step
        except BaseException:
            self._write("failed\n" if self.live else f"{head}: failed\n")
            raise
        took = f"({time.monotonic() - started:.1f} s)"
        tail = f"{step.detail or 'done'} {took}"
        self._write(f"{tail}\n" if self.live else f"{head}: {tail}\n")


@dataclass(slots=True)
class LiveLine:
    """One status line rewritten in place on a terminal (:meth:`show`), ended by :meth:`clear`."""

    out: IO[str]
    _width: int = field(default=0, init=False)

    def show(self, text: str) -> None:
        columns = shutil.get_terminal_size((100, 24)).columns - 1
        text = text if len(text) <= columns else text[: columns - 1] + "…"
        self.out.write("\r" + text.ljust(self._width))
        self.out.flush()
        self._width = len(text)

    def clear(self) -> None:
        if self._width:
            self.out.write("\r" + " " * self._width + "\r")
            self.out.flush()
            self._width = 0
