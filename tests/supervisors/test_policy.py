"""The pure restart policy, step by step (no event loop)."""

from __future__ import annotations

import pytest

from supervisors.policy import (
    RestartIntensity,
    RestartType,
    Strategy,
    children_to_restart,
    should_restart,
)

ORDER = ["logger", "store", "gateway", "router"]


@pytest.mark.parametrize(
    ("restart_type", "abnormal", "expected"),
    [
        (RestartType.PERMANENT, True, True),
        (RestartType.PERMANENT, False, True),
        (RestartType.TRANSIENT, True, True),
        (RestartType.TRANSIENT, False, False),
        (RestartType.TEMPORARY, True, False),
        (RestartType.TEMPORARY, False, False),
    ],
)
def test_the_restart_type_decides_whether_an_exit_is_restarted(
    restart_type: RestartType, abnormal: bool, expected: bool
) -> None:
    assert should_restart(restart_type, abnormal) is expected


def test_one_for_one_restarts_only_the_failed_child() -> None:
    assert children_to_restart(Strategy.ONE_FOR_ONE, ORDER, "gateway") == ["gateway"]


def test_one_for_all_restarts_every_child_in_start_order() -> None:
    assert children_to_restart(Strategy.ONE_FOR_ALL, ORDER, "gateway") == ORDER


def test_rest_for_one_restarts_the_failed_child_and_those_started_after_it() -> None:
    assert children_to_restart(Strategy.REST_FOR_ONE, ORDER, "store") == [
        "store",
        "gateway",
        "router",
    ]
    assert children_to_restart(Strategy.REST_FOR_ONE, ORDER, "router") == ["router"]


def test_an_unknown_failed_child_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown child"):
        children_to_restart(Strategy.ONE_FOR_ONE, ORDER, "nobody")


def test_intensity_allows_max_restarts_within_the_window_and_not_one_more() -> None:
    intensity = RestartIntensity(max_restarts=3, within_seconds=10.0)
    assert [intensity.record(t) for t in (0.0, 1.0, 2.0)] == [True, True, True]
    assert intensity.record(3.0) is False


def test_restarts_older_than_the_window_no_longer_count() -> None:
    intensity = RestartIntensity(max_restarts=2, within_seconds=5.0)
    assert intensity.record(0.0)
    assert intensity.record(1.0)
    assert intensity.record(5.5)  # the restart at 0.0 has left the window
    assert intensity.recent == 2
    assert not intensity.record(5.6)


def test_zero_restarts_allowed_escalates_at_the_first_failure() -> None:
    assert RestartIntensity(max_restarts=0, within_seconds=1.0).record(0.0) is False
