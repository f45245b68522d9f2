"""``browy chaos``'s live status line: the run so far, once a second, on a terminal.

:func:`live_line` is pure: turns sent and ended (and how many ended in an error), faults
injected, and the two invariants that can be judged while the run goes on — ``one_end`` (no turn
given up on without an end, no end without a turn) and ``no_duplicate`` (no page-changing command
executed twice). The others need the journals and the end of the run; the table says them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from nativehost.chaos.fake_browser import Executed
from nativehost.chaos.panels import Recorder

__all__ = ["duplicates_so_far", "live_line"]


def duplicates_so_far(executed: Iterable[Executed]) -> int:
    """Page-changing commands executed twice so far (by call id per link, tabs by key) — the
    rule of :meth:`nativehost.chaos.checks.InvariantChecks._duplicates`."""
    changing = [e for e in executed if e.page_changing]
    by_call = Counter(f"{e.link}:{e.call_id}" for e in changing)
    by_key = Counter(e.key for e in changing if e.op == "tab.new")
    return sum(1 for n in by_call.values() if n > 1) + sum(1 for n in by_key.values() if n > 1)


def live_line(
    *,
    elapsed: float,
    duration: float,
    recorder: Recorder,
    faults: int,
    executed: Sequence[Executed],
) -> str:
    sent = len(recorder.turns)
    ended = errors = 0
    for turn in recorder.turns:
        if turn.ends:
            ended += 1
            errors += turn.end_type == "chat.error"
    # Neither ended nor still open: given up on at its deadline (hung).
    hung = sent - ended - len(recorder.open)
    extra = len(recorder.extra_ends)
    dups = duplicates_so_far(executed)
    one_end = "ok" if hung == 0 and extra == 0 else f"FAIL (hung {hung}, extra ends {extra})"
    no_dup = "ok" if dups == 0 else f"FAIL ({dups})"
    return (
        f"chaos {min(elapsed, duration):.0f}/{duration:.0f} s · turns {sent} sent, {ended} ended "
        f"({errors} errors) · faults {faults} · one_end {one_end} · no_duplicate {no_dup}"
    )
