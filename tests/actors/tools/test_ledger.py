"""The no-replay ledger: bounded, and small per call (a daemon keeps one per session)."""

from __future__ import annotations

import tracemalloc

import pytest

from actors.tools.ledger import MAX_ENTRIES, AlreadySent, CallLedger, LedgerEntry


def test_a_full_ledger_forgets_the_oldest_call_first_and_stays_at_its_bound() -> None:
    ledger = CallLedger(max_entries=3)
    for n in range(5):
        ledger.sent(f"c{n}", "navigate")
        ledger.done(f"c{n}", "ok")
    assert len(ledger) == 3
    assert ledger.get("c1") is None
    assert ledger.get("c2") == LedgerEntry("c2", "ok")
    with pytest.raises(AlreadySent):
        ledger.sent("c4", "navigate")


def test_states_move_only_along_the_table_and_the_views_say_where_each_call_is() -> None:
    ledger = CallLedger()
    ledger.sent("a", "click")
    ledger.sent("b", "click")
    assert [e.call_id for e in ledger.in_flight()] == ["a", "b"]
    ledger.interrupted("a")
    ledger.done("b", "error")
    assert ledger.unknown() == [LedgerEntry("a", "unknown")]
    assert ledger.in_flight() == []
    with pytest.raises(Exception, match="cannot go from unknown to ok"):
        ledger.done("a", "ok")


def test_a_session_s_full_ledger_costs_about_a_call_id_and_a_dict_slot_per_call() -> None:
    # One ledger per session lives as long as the daemon, filling up to MAX_ENTRIES calls: a
    # record with its times per call (~310 bytes) made a 16-session soak grow by 5 MB.
    ids = [f"call_{n:06d}_abcdefghijklmnop" for n in range(MAX_ENTRIES * 2)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        ledger = CallLedger()
        for call_id in ids:
            ledger.sent(call_id, "new_tab")
            ledger.done(call_id, "ok")
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(ledger) == MAX_ENTRIES
    assert used / MAX_ENTRIES < 80  # the ids are the caller's: only the slots are the ledger's
