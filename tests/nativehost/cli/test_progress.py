"""Progress for long work: install-host per browser, the demo's set-up steps, chaos's live line —
rewritten in place only on a terminal, plain lines elsewhere, never in ``--json``."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from nativehost.chaos.fake_browser import Executed
from nativehost.chaos.harness import live_line_for
from nativehost.chaos.live import live_line
from nativehost.chaos.panels import Recorder
from nativehost.chaos.report import ChaosOptions
from nativehost.chaos.run import ChaosRun
from nativehost.cli.main import main
from nativehost.cli.progress import LiveLine, Steps, is_live


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_each_step_is_one_line_once_it_ended() -> None:
    out = io.StringIO()
    steps = Steps(out, total=2)
    with steps.step("serving the shop") as step:
        assert out.getvalue() == ""  # nothing half-written into a log
        step.done("http://127.0.0.1:1/")
    with steps.step("waiting"):
        pass
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[1/2] serving the shop: http://127.0.0.1:1/ (")
    assert lines[1].startswith("[2/2] waiting: done (")
    assert all(line.endswith(" s)") for line in lines)
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_on_a_terminal_a_step_shows_while_it_runs_and_ends_in_place() -> None:
    out = Terminal()
    steps = Steps(out, total=3, live=True)
    with steps.step("launching Chromium") as step:
        assert out.getvalue() == "[1/3] launching Chromium… "
        step.done("pid 42")
    assert out.getvalue().startswith("[1/3] launching Chromium… pid 42 (")
    assert out.getvalue().endswith(" s)\n")


@pytest.mark.parametrize("live", [False, True])
def test_a_step_that_fails_says_so_and_lets_the_error_through(live: bool) -> None:
    out = Terminal() if live else io.StringIO()
    steps = Steps(out, total=1, live=live)
    with pytest.raises(TimeoutError), steps.step("waiting for the extension"):
        raise TimeoutError
    assert out.getvalue().endswith("failed\n")
    assert "[1/1] waiting for the extension" in out.getvalue()


def test_a_live_line_is_rewritten_in_place_and_cleared() -> None:
    out = Terminal()
    line = LiveLine(out)
    line.show("turns 10")
    line.show("turns 9")  # shorter: padded over the old one
    assert out.getvalue() == "\rturns 10\rturns 9 "
    line.clear()
    assert out.getvalue().endswith("\r" + " " * 7 + "\r")


def test_only_a_terminal_that_can_move_the_cursor_is_live() -> None:
    assert is_live(Terminal(), {})
    assert not is_live(Terminal(), {"TERM": "dumb"})
    assert not is_live(io.StringIO(), {})


def test_install_host_shows_each_browser_as_it_is_written(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path / "user"),
        "BROWY_HOME": str(tmp_path / "browy"),
        "BROWY_FS_ROOT": str(tmp_path / "root"),
        "BROWY_PLATFORM": "linux",
    }
    out = io.StringIO()
    argv = ["install-host", "--browser", "chrome", "--browser", "chromium", "--browser", "edge"]
    assert main(argv, env=env, stdout=out) == 0
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == [
        "[1/3] chrome",
        "[2/3] chromium",
        "[3/3] edge",
    ]
    assert all("created" in line and line.endswith("com.browy.host.json") for line in lines[:3])
    assert lines[3].startswith("launcher: ")
    assert sum("com.browy.host.json" in line for line in lines) == 3  # not listed twice


# -- chaos -----------------------------------------------------------------------------------------


def _executed(call_id: str, link: str = "0/1") -> Executed:
    return Executed(call_id, "s", "Page.navigate", "https://x.test/", True, 0.0, link=link)


def test_the_chaos_line_counts_turns_faults_and_the_invariants_so_far() -> None:
    rec = Recorder()
    done = rec.sent("s1", "t1", 1)
    rec.ended("s1", "chat.done", None, "t1")
    rec.sent("s2", "t2", 1)
    rec.ended("s2", "chat.error", "MODEL_ERROR", "t2")
    rec.sent("s3", "t3", 1)  # still open
    assert done.ends == 1
    line = live_line(elapsed=12.4, duration=60, recorder=rec, faults=5, executed=[_executed("c1")])
    assert line == (
        "chaos 12/60 s · turns 3 sent, 2 ended (1 errors) · faults 5 · one_end ok · no_duplicate ok"
    )


def test_the_chaos_line_shows_a_failing_invariant_as_soon_as_it_fails() -> None:
    rec = Recorder()
    rec.sent("s1", "t1", 1)
    rec.open.pop("s1")  # given up on at its deadline: hung
    rec.ended("s2", "chat.done", None)  # an end with no turn open: extra
    executed = [_executed("c1"), _executed("c1"), _executed("c1", link="0/2")]
    line = live_line(elapsed=70, duration=60, recorder=rec, faults=0, executed=executed)
    assert "chaos 60/60 s" in line
    assert "one_end FAIL (hung 1, extra ends 1)" in line
    assert "no_duplicate FAIL (1)" in line


def test_the_chaos_line_is_for_a_terminal_and_never_with_json(tmp_path: Path) -> None:
    assert isinstance(live_line_for(Terminal(), {}, json_report=None), LiveLine)
    assert live_line_for(Terminal(), {}, json_report=tmp_path / "r.json") is None
    assert live_line_for(io.StringIO(), {}, json_report=None) is None
    assert live_line_for(Terminal(), {"TERM": "dumb"}, json_report=None) is None


async def test_a_chaos_run_gives_its_line_once_a_second_while_it_runs(tmp_path: Path) -> None:
    shown: list[str] = []
    run = ChaosRun(ChaosOptions(duration=5, live=shown.append), tmp_path)
    ticker = run._start_live()
    assert ticker is not None
    async with asyncio.timeout(5):
        while len(shown) < 2:
            await asyncio.sleep(0.05)
    ticker.cancel()
    assert shown[0].startswith("chaos 0/5 s · turns 0 sent")
    assert shown[1].startswith("chaos 1/5 s")
    assert ChaosRun(ChaosOptions(), tmp_path)._start_live() is None  # no line asked for
