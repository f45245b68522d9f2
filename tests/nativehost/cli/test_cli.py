"""The ``browy`` command: exit codes, messages, and never a traceback for a user's mistake."""

from __future__ import annotations

import fnmatch
import io
import json
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from nativehost.cli.daemon_commands import follow_file
from nativehost.cli.main import COMMANDS, main
from nativehost.origins import OUR_EXTENSION_ID

REPO = Path(__file__).resolve().parents[3]
OTHER_ID = "abcdefghijklmnopabcdefghijklmnop"


class Run:
    """Runs ``main`` against a temporary HOME, BROWY_HOME and filesystem root."""

    def __init__(self, tmp_path: Path) -> None:
        self.user = tmp_path / "user"
        self.home = tmp_path / "browy"
        self.root = tmp_path / "root"
        self.env = {
            "HOME": str(self.user),
            "BROWY_HOME": str(self.home),
            "BROWY_FS_ROOT": str(self.root),
            "BROWY_PLATFORM": "linux",
        }

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), env=self.env, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return Run(tmp_path)


def test_install_host_for_a_named_browser_succeeds(run: Run) -> None:
    code, out, err = run("install-host", "--browser", "chromium")
    manifest = run.user / ".config/chromium/NativeMessagingHosts/com.browy.host.json"
    assert (code, err) == (0, "")
    assert str(manifest) in out
    assert json.loads(manifest.read_text())["allowed_origins"] == [
        f"chrome-extension://{OUR_EXTENSION_ID}/"
    ]


def test_install_host_with_no_browser_found_exits_2_with_a_hint(run: Run) -> None:
    code, _, err = run("install-host")
    assert code == 2
    assert err.startswith("browy: error: no supported browser found")
    assert "Traceback" not in err


def test_install_host_to_a_target_dir_with_ids_and_compat(run: Run, tmp_path: Path) -> None:
    target = tmp_path / "profile/NativeMessagingHosts"
    code, _, _ = run(
        "install-host", "--target-dir", str(target), "--extension-id", OTHER_ID, "--compat-browy"
    )
    assert code == 0
    origins = json.loads((target / "com.browy.host.json").read_text())["allowed_origins"]
    assert f"chrome-extension://{OTHER_ID}/" in origins
    assert len(origins) == 4


def test_a_bad_extension_id_exits_2(run: Run) -> None:
    code, _, err = run("install-host", "--browser", "chrome", "--extension-id", "BAD")
    assert code == 2
    assert "not an extension id" in err


def test_a_filesystem_error_exits_2_without_a_traceback(run: Run) -> None:
    run.root.parent.mkdir(parents=True, exist_ok=True)
    run.root.write_text("a file where the filesystem root should be")
    code, _, err = run("install-host", "--browser", "chrome", "--system")
    assert code == 2
    assert err.startswith("browy: error: ")
    assert str(run.root) in err
    assert "Traceback" not in err


def test_uninstall_host_after_install_removes_the_manifest(run: Run) -> None:
    run("install-host", "--browser", "edge")
    code, out, _ = run("uninstall-host")
    assert code == 0
    assert "removed" in out
    assert not (
        run.user / ".config/microsoft-edge/NativeMessagingHosts/com.browy.host.json"
    ).exists()


def test_doctor_exits_1_when_something_is_wrong(run: Run) -> None:
    code, out, _ = run("doctor")
    assert code == 1
    assert "FAIL  manifest" in out


def test_doctor_json_is_a_list_of_checks(run: Run) -> None:
    _, out, _ = run("doctor", "--json")
    checks = json.loads(out)
    assert {"name", "ok", "detail", "fix"} <= set(checks[0])


def test_config_set_then_show(run: Run) -> None:
    assert run("config", "set", "model.model", "gpt-test")[0] == 0
    assert run("config", "set", "model.api_key", "sk-secret")[0] == 0
    code, out, _ = run("config", "show")
    assert code == 0
    assert 'model = "gpt-test"' in out
    assert "sk-secret" not in out
    code, out, _ = run("config", "show", "--json")
    assert json.loads(out)["model"]["api_key"] == "***"


def test_config_set_with_an_invalid_value_exits_2_naming_the_field(run: Run) -> None:
    code, _, err = run("config", "set", "daemon.idle_exit_seconds", "soon")
    assert code == 2
    assert "[daemon] idle_exit_seconds" in err
    assert "Traceback" not in err


def test_an_invalid_config_file_makes_config_show_exit_2(run: Run) -> None:
    run.home.mkdir(parents=True)
    (run.home / "config.toml").write_text("[daemon\n")
    code, _, err = run("config", "show")
    assert code == 2
    assert "not valid TOML" in err


def test_config_unset_removes_a_value(run: Run) -> None:
    run("config", "set", "model.model", "m")
    assert run("config", "unset", "model.model")[0] == 0
    assert 'model = "m"' not in run("config", "show")[1]


def test_an_unknown_command_exits_2_with_usage(run: Run) -> None:
    code, out, err = run("frobnicate")
    assert code == 2
    assert out == ""
    assert "usage: browy" in err
    assert "invalid choice" in err


def test_a_missing_argument_exits_2(run: Run) -> None:
    code, _, err = run("config", "set", "model.model")
    assert code == 2
    assert "VALUE" in err


def test_help_exits_0(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--help")[0] == 0
    assert "install-host" in capsys.readouterr().out


def test_extension_path_prints_the_repository_extension_dir(run: Run) -> None:
    code, out, _ = run("extension-path")
    assert (code, out.strip()) == (0, str(REPO / "extension"))


def test_every_file_of_the_extension_ships_inside_the_package() -> None:
    # An installed browy (a wheel, pipx) has no checkout: the extension is package data under
    # nativehost/extension (a link to ../extension here). Each file Chrome loads must match.
    assert (REPO / "nativehost" / "extension").resolve() == (REPO / "extension").resolve()
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["nativehost"]
    shipped = [
        p.relative_to(REPO).as_posix()
        for p in (REPO / "extension").rglob("*")
        if p.is_file() and "tests" not in p.parts and not p.name.startswith(".")
    ]
    missing = [f for f in shipped if not any(fnmatch.fnmatch(f, pat) for pat in patterns)]
    assert shipped and missing == []


def test_logs_without_a_log_exits_2(run: Run) -> None:
    code, _, err = run("logs")
    assert code == 2
    assert "no log yet" in err


def test_logs_prints_the_log(run: Run) -> None:
    (run.home / "logs").mkdir(parents=True)
    (run.home / "logs/host.log").write_text("line one\nline two\n")
    code, out, _ = run("logs")
    assert (code, out) == (0, "line one\nline two\n")


def test_logs_relay_prints_the_relays_log(run: Run) -> None:
    (run.home / "logs").mkdir(parents=True)
    (run.home / "logs/host.log").write_text("daemon line\n")
    (run.home / "logs/relay.log").write_text("relay line\n")
    code, out, _ = run("logs", "--relay")
    assert (code, out) == (0, "relay line\n")


def test_follow_goes_on_in_the_new_file_when_the_log_is_rotated(tmp_path: Path) -> None:
    # relay.log is renamed by the daemon and started again by the next relay that writes.
    log = tmp_path / "relay.log"
    log.write_text("old\n")
    out = io.StringIO()
    reading = threading.Event()
    deadline = time.monotonic() + 5

    def stop() -> bool:
        if "old" in out.getvalue():
            reading.set()
        return "new" in out.getvalue() or time.monotonic() > deadline

    follower = threading.Thread(
        target=follow_file,
        args=(log, out),
        kwargs={"stop": stop, "poll_s": 0.01, "from_start": True},
    )
    follower.start()
    assert reading.wait(5)  # it has the old file open
    with log.open("a") as f:
        f.write("last of the old\n")
    log.rename(tmp_path / "relay.log.1")
    log.write_text("new\n")
    follower.join(6)
    assert out.getvalue() == "old\nlast of the old\nnew\n"


def test_follow_prints_what_is_appended(tmp_path: Path) -> None:
    log = tmp_path / "host.log"
    log.write_text("old\n")
    out = io.StringIO()
    seen = threading.Event()
    deadline = time.monotonic() + 5

    def stop() -> bool:
        if "new" in out.getvalue():
            seen.set()
        return seen.is_set() or time.monotonic() > deadline

    follower = threading.Thread(
        target=follow_file,
        args=(log, out),
        kwargs={"stop": stop, "poll_s": 0.01, "from_start": True},
    )
    follower.start()
    with log.open("a") as f:
        f.write("new\n")
    assert seen.wait(5)
    follower.join(5)
    assert out.getvalue() == "old\nnew\n"


def test_every_command_has_a_handler_in_one_table() -> None:
    assert {
        "install-host",
        "uninstall-host",
        "doctor",
        "config",
        "extension-path",
        "logs",
        "daemon",
    } <= set(COMMANDS)


def test_the_console_script_entry_returns_its_exit_code(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "BROWY_HOME": str(tmp_path / "b"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from nativehost.cli.main import main; sys.exit(main())",
            "config",
            "set",
            "nope",
            "1",
        ],
        check=False,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
