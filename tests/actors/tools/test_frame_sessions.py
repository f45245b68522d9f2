"""The bookkeeping of frames' child sessions (``actors.tools.frames.Frames``): switching one
session's auto-attach off and on replaces the sessions of its children and of theirs, and the
worlds made in them go with them."""

from __future__ import annotations

from dataclasses import dataclass

from actors.tools.frames import Frames, FrameWorld


@dataclass
class Session:
    target_session: str | None = None


def _frames() -> Frames:
    top = Session()
    frames = Frames(top)  # type: ignore[arg-type]
    # issuer (sA, the tab's child) > challenge (sB, the issuer's child) > widget (sC)
    frames.targets = {"A": "sA", "B": "sB", "C": "sC", "D": "sD"}
    frames.attached_by = {"A": None, "B": "sA", "C": "sB", "D": None}
    sessions = {"top": top, "sA": Session("sA"), "sB": Session("sB"), "sC": Session("sC")}
    frames.worlds = {
        1: FrameWorld(1, sessions["sA"], "A", True, 11),  # type: ignore[arg-type]
        2: FrameWorld(2, sessions["sB"], "B", True, 12),  # type: ignore[arg-type]
        3: FrameWorld(3, sessions["sA"], "E", False, 13),  # type: ignore[arg-type]  # in sA
        4: FrameWorld(4, sessions["sC"], "C", True, 14),  # type: ignore[arg-type]
        5: FrameWorld(5, top, "F", False, 15),  # type: ignore[arg-type]  # the tab's renderer
    }
    return frames


def test_a_frames_session_switched_off_takes_its_descendants_and_their_worlds() -> None:
    frames = _frames()
    frames._drop_children_of("sA")
    assert frames.targets == {"A": "sA", "D": "sD"}
    assert frames.attached_by == {"A": None, "D": None}
    # The challenge's world (sB), the widget's (sC); the issuer's own and the one in its
    # renderer (sA) stay: sA itself was not replaced.
    assert sorted(frames.worlds) == [1, 3, 5]
    assert frames.generation == 1


def test_the_tabs_switched_off_takes_every_frame_session_and_keeps_its_own_worlds() -> None:
    frames = _frames()
    frames._drop_children_of(None)
    assert frames.targets == {} and frames.attached_by == {}
    # Even a same-site frame reached through the issuer's session (3, other_site False) goes.
    assert sorted(frames.worlds) == [5]
