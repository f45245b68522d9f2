"""``browy chaos --process`` in CI: real relay processes and a real daemon, a seeded ~12 s
scenario with relay and daemon SIGKILLs, its invariants asserted one by one."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from nativehost.chaos.faults import PROCESS_FAULTS
from nativehost.chaos.harness import main
from nativehost.chaos.measure import pid_alive
from nativehost.chaos.process_mode import run_process_chaos
from nativehost.chaos.report import ChaosOptions, ChaosReport, format_table

CI_OPTIONS = ChaosOptions(
    seed=1, duration=12.0, sessions=6, faults=PROCESS_FAULTS, turn_deadline=15.0
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report() -> ChaosReport:
    result = asyncio.run(run_process_chaos(CI_OPTIONS))
    print(format_table(result))
    return result


@pytest.mark.timeout(150)
def test_both_process_fault_kinds_were_injected(report: ChaosReport) -> None:
    assert report.mode == "process"
    assert report.faults_injected.get("relay_kill", 0) >= 1
    assert report.faults_injected.get("daemon_kill", 0) >= 1
    assert report.processes["relays_started"] > report.processes["relay_kills"]
    assert report.processes["daemons_seen"] == report.processes["daemon_kills"] + 1
    assert report.turns_run > 50
    assert report.turns_completed > 0


def test_every_chat_send_ended_exactly_once(report: ChaosReport) -> None:
    assert report.hung == 0, report.problems
    assert report.extra_ends == 0, report.problems


def test_no_page_changing_command_was_executed_twice(report: ChaosReport) -> None:
    assert report.page_changing_executed > 0
    assert report.duplicated == 0, report.problems


def test_every_interrupted_page_changing_command_was_reported_unknown(
    report: ChaosReport,
) -> None:
    assert report.not_unknown == 0, report.problems


def test_every_completed_turn_is_in_the_journal(report: ChaosReport) -> None:
    assert report.not_journaled == 0, report.problems


def test_a_turn_completed_after_every_kill_with_recovery_times(report: ChaosReport) -> None:
    assert report.lost == 0, report.problems
    for kind in ("relay_kill", "daemon_kill"):
        stats = report.recovery_ms[kind]
        assert stats["n"] >= 1 and 0 < stats["p50"] <= stats["p99"] < 20_000


def test_the_daemon_stays_flat_and_no_process_is_left(report: ChaosReport) -> None:
    assert report.invariants["flat"], (report.fds, report.rss, report.problems)
    assert report.invariants["no_leftover"], report.problems
    assert report.processes["leftover"] == 0


def test_the_report_has_the_process_section(report: ChaosReport) -> None:
    data = json.loads(json.dumps(report.as_json()))
    assert data["mode"] == "process"
    assert "no_leftover" in data["invariants"] and "processes" in data
    assert "--process" in format_table(report)


@pytest.mark.timeout(90)
def test_the_command_line_runs_process_mode_and_leaves_nothing(tmp_path: Path) -> None:
    out = io.StringIO()
    path = tmp_path / "chaos.json"
    code = main(
        ["--process", "--seed", "2", "--duration", "4", "--sessions", "2", "--faults",
         "relay_kill", "--json", str(path)],
        out,
    )  # fmt: skip
    data = json.loads(path.read_text())
    assert data["mode"] == "process" and data["processes"]["leftover"] == 0, out.getvalue()
    assert data["faults_injected"] == {"relay_kill": 1}
    assert code == (0 if data["ok"] else 1)


def test_in_process_kinds_do_not_apply_to_process_mode() -> None:
    assert main(["--process", "--faults", "link_drop"], io.StringIO()) == 2


def test_pid_alive_knows_a_gone_pid() -> None:
    import os

    assert pid_alive(os.getpid())
    assert not pid_alive(2**22 + 12345)
