"""Turns a relay ended itself, kept on disk so that a later daemon does not end them again.

A relay whose daemon link drops ends the turns in flight at once (protocol.md section 6) and, once
linked again, tells the daemon so (``turns_ended``). If the relay dies before it links again —
the double fault "the daemon dies, the relay ends the turn, the relay dies" — that word is lost,
and the next daemon, finding the turn cut in its journal, would send the panel a second end. v2
panels drop it by its ``turnId``; a v1 panel would show it. So the relay also leaves a mark here,
one file per session, after the end is written to Chrome; the daemon takes (deletes) a session's
mark when the session registers again, or when the relay's ``turns_ended`` arrives after all.

A mark means what the in-memory ``turns_ended`` means (actors/agent/end_delivery.py
``settle_cut_turn``): the panel has had the end of the session's cut turn. It is used once, for that
turn; marks nobody takes (the panel never came back) are pruned after :data:`MAX_AGE_S`.

The directory is private to the user (0700), like the rest of the run directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

import orjson

from actors.runtime.private_files import private_dir, write_private

__all__ = ["MAX_AGE_S", "RelayMarks"]

log = logging.getLogger(__name__)

#: Marks older than this are dropped when a daemon starts (a week).
MAX_AGE_S = 7 * 24 * 3600.0


class RelayMarks:
    """One file per session whose cut turn a relay ended: ``add`` (the relay), ``take`` (the
    daemon). Every method is best effort: a mark that cannot be written costs at most a second
    end on a v1 panel, which is what happened without marks."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def for_home(cls, home: Path) -> RelayMarks:
        return cls(home / "run" / "relay-ended")

    def _path(self, session_id: str) -> Path:
        # Session ids come from the extension: hash them into a safe, fixed-length file name.
        # (hashlib is imported here, off the relay's start-up path: marks are rare.)
        import hashlib

        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.directory / f"{digest}.json"

    def add(self, session_id: str, turn_id: str | None) -> None:
        """Remember that the panel of *session_id* has had the end of its cut turn."""
        try:
            private_dir(self.directory)
            write_private(
                self._path(session_id), orjson.dumps({"turnId": turn_id, "at": time.time()})
            )
        except (OSError, TypeError):  # TypeError: orjson refuses a turnId it cannot encode
            log.exception("could not keep the relay's mark for %r", session_id)

    def take(self, session_id: str) -> bool:
        """Remove the mark of *session_id*; True if there was one (only one taker wins)."""
        try:
            os.unlink(self._path(session_id))
        except FileNotFoundError:
            return False
        except OSError:
            log.exception("could not take the relay's mark for %r", session_id)
            return False
        return True

    def discard(self, session_ids: Iterable[str]) -> None:
        for sid in session_ids:
            self.take(sid)

    def prune(self, *, now: float | None = None, max_age_s: float = MAX_AGE_S) -> int:
        """Drop marks older than *max_age_s* (and leftover temporary files); returns how many."""
        now = time.time() if now is None else now
        dropped = 0
        with contextlib.suppress(OSError):  # no directory (yet), or not one
            for path in self.directory.iterdir():
                with contextlib.suppress(OSError):
                    age = now - path.stat().st_mtime
                    if age > max_age_s or (path.suffix == ".tmp" and age > 60):
                        path.unlink()
                        dropped += 1
        return dropped
