"""doctor: each mistake Chrome would punish is found and named."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nativehost.config import set_config_value
from nativehost.origins import OUR_EXTENSION_ID
from nativehost.setup.check import Check, exit_code, format_checks
from nativehost.setup.doctor import run_checks
from nativehost.setup.install import install_host
from nativehost.setup.manifest_checks import CHROME_FORBIDDEN, CHROME_NOT_FOUND, CHROME_START_FAILED
from nativehost.setup.platforms import OSName, Platform

OUR_ORIGIN = f"chrome-extension://{OUR_EXTENSION_ID}/"
OTHER_ID = "abcdefghijklmnopabcdefghijklmnop"


@dataclass
class FakeStatus:
    running: bool

    def __str__(self) -> str:
        return "browyd: running" if self.running else "browyd: not running"


def stopped(home: Path) -> FakeStatus:
    return FakeStatus(running=False)


@pytest.fixture
def platform(tmp_path: Path) -> Platform:
    return Platform(OSName.LINUX, home=tmp_path / "user", root=tmp_path / "root")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "browy"


def installed(platform: Platform, home: Path) -> Path:
    """Install for chromium with a working model config; return the manifest path."""
    report = install_host(platform, home=home, browsers=["chromium"])
    set_config_value(home, "model.model", "gpt-test")
    set_config_value(home, "model.api_key", "sk-test")
    return report.manifests[0].path


def checks_of(platform: Platform, home: Path, **kw: Any) -> list[Check]:
    kw.setdefault("env", {})
    kw.setdefault("daemon_status", stopped)
    kw.setdefault("daemon_tree", lambda _home: None)
    return run_checks(platform, home, **kw)


def failing(checks: list[Check]) -> list[Check]:
    return [c for c in checks if not c.ok]


def edit(manifest: Path, **changes: Any) -> None:
    data = json.loads(manifest.read_text())
    data.update(changes)
    manifest.write_text(json.dumps(data))


def test_a_good_installation_passes(platform: Platform, home: Path) -> None:
    installed(platform, home)
    checks = checks_of(platform, home)
    assert failing(checks) == []
    assert exit_code(checks) == 0


def test_a_missing_manifest_is_reported_with_chromes_words(platform: Platform, home: Path) -> None:
    checks = checks_of(platform, home)
    [missing] = [c for c in checks if c.name == "manifest"]
    assert not missing.ok
    assert CHROME_NOT_FOUND in missing.detail
    assert missing.fix == "browy install-host"
    assert exit_code(checks) == 1


def test_a_missing_trailing_slash_is_caught(platform: Platform, home: Path) -> None:
    manifest = installed(platform, home)
    edit(manifest, allowed_origins=[OUR_ORIGIN.rstrip("/")])
    [bad] = failing(checks_of(platform, home))
    assert "lacks the trailing slash" in bad.detail
    assert CHROME_NOT_FOUND in bad.detail


def test_a_wrong_extension_id_is_caught(platform: Platform, home: Path) -> None:
    manifest = installed(platform, home)
    edit(manifest, allowed_origins=[f"chrome-extension://{OTHER_ID}/"])
    [bad] = failing(checks_of(platform, home))
    assert OUR_EXTENSION_ID in bad.detail
    assert CHROME_FORBIDDEN in bad.detail


def test_a_relative_path_is_caught(platform: Platform, home: Path) -> None:
    manifest = installed(platform, home)
    edit(manifest, path="bin/browy-host")
    [bad] = failing(checks_of(platform, home))
    assert "relative" in bad.detail
    assert CHROME_START_FAILED in bad.detail


def test_a_missing_path_is_caught(platform: Platform, home: Path, tmp_path: Path) -> None:
    manifest = installed(platform, home)
    edit(manifest, path=str(tmp_path / "gone"))
    [bad] = failing(checks_of(platform, home))
    assert "does not exist" in bad.detail


def test_a_non_executable_path_is_caught(platform: Platform, home: Path) -> None:
    manifest = installed(platform, home)
    launcher = Path(json.loads(manifest.read_text())["path"])
    launcher.chmod(0o644)
    [bad] = failing(checks_of(platform, home))
    assert "not executable" in bad.detail


@pytest.mark.parametrize(
    ("first_line", "expected"),
    [
        ("echo no shebang", "without a '#!' line"),
        ("#!sh", "bad shebang"),
        ("#!/nonexistent/interpreter", "cannot be run"),
    ],
)
def test_a_bad_shebang_is_caught(
    platform: Platform, home: Path, tmp_path: Path, first_line: str, expected: str
) -> None:
    manifest = installed(platform, home)
    script = tmp_path / "host.sh"
    script.write_text(first_line + "\nexit 0\n")
    script.chmod(0o755)
    edit(manifest, path=str(script))
    [bad] = failing(checks_of(platform, home))
    assert expected in bad.detail


def test_invalid_json_is_caught(platform: Platform, home: Path) -> None:
    manifest = installed(platform, home)
    manifest.write_text('{"name": "com.browy.host",')
    [bad] = failing(checks_of(platform, home))
    assert "not valid JSON" in bad.detail


def test_a_wrong_name_or_type_is_caught(platform: Platform, home: Path) -> None:
    manifest = installed(platform, home)
    edit(manifest, name="com.other.host", type="pipe")
    [bad] = failing(checks_of(platform, home))
    assert "com.other.host" in bad.detail
    assert "'pipe'" in bad.detail


def test_manifest_and_config_disagreeing_is_caught(platform: Platform, home: Path) -> None:
    installed(platform, home)
    set_config_value(home, "host.allowed_extension_ids", OTHER_ID)
    [bad] = failing(checks_of(platform, home))
    assert bad.name.endswith("matches config")
    assert OTHER_ID in bad.detail


def test_an_invalid_config_fails_the_config_check(platform: Platform, home: Path) -> None:
    installed(platform, home)
    (home / "config.toml").write_text("[daemon]\nturn_concurrency = 'x'\n")
    [bad] = failing(checks_of(platform, home))
    assert bad.name == "config"
    assert "turn_concurrency" in bad.detail


def test_a_key_only_in_the_shell_is_explained(platform: Platform, home: Path) -> None:
    install_host(platform, home=home, browsers=["chromium"])
    set_config_value(home, "model.model", "gpt-test")
    [bad] = failing(checks_of(platform, home, env={"OPENAI_API_KEY": "sk-shell"}))
    assert bad.name == "model key"
    assert "browser's environment" in bad.detail
    assert bad.fix.startswith("browy config set-key")
    assert "model.api_key <key>" not in bad.fix  # a key typed on a command line stays in history


def test_no_model_is_reported(platform: Platform, home: Path) -> None:
    install_host(platform, home=home, browsers=["chromium"])
    names = {c.name for c in failing(checks_of(platform, home))}
    assert names == {"model", "model key"}


def test_a_local_model_server_needs_no_key(platform: Platform, home: Path) -> None:
    install_host(platform, home=home, browsers=["chromium"])
    set_config_value(home, "model.model", "llama")
    set_config_value(home, "model.base_url", "http://127.0.0.1:8080/v1")
    assert failing(checks_of(platform, home)) == []


def test_a_run_directory_open_to_others_is_caught(platform: Platform, home: Path) -> None:
    installed(platform, home)
    (home / "run").mkdir(mode=0o755)
    os.chmod(home / "run", 0o755)
    [bad] = failing(checks_of(platform, home))
    assert bad.name == "run directory"
    assert "chmod 700" in bad.fix


def test_by_default_the_real_daemon_of_the_home_is_asked(platform: Platform, home: Path) -> None:
    installed(platform, home)
    [daemon] = [c for c in run_checks(platform, home, env={}) if c.name == "daemon"]
    assert daemon.ok
    assert "browyd: not running" in daemon.detail
    assert "starts on demand" in daemon.detail


def test_a_daemon_status_error_is_reported_not_raised(platform: Platform, home: Path) -> None:
    installed(platform, home)

    def broken(home: Path) -> object:
        raise OSError("socket refused")

    [bad] = failing(checks_of(platform, home, daemon_status=broken))
    assert "socket refused" in bad.detail


def test_a_stopped_daemon_is_fine_because_it_starts_on_demand(
    platform: Platform, home: Path
) -> None:
    installed(platform, home)
    [daemon] = [c for c in checks_of(platform, home) if c.name == "daemon"]
    assert daemon.ok
    assert "on demand" in daemon.detail


def test_a_flatpak_browser_is_explained(platform: Platform, home: Path) -> None:
    (platform.home / ".var/app/org.chromium.Chromium").mkdir(parents=True)
    [note] = [c for c in checks_of(platform, home) if c.name == "flatpak chromium"]
    assert not note.ok  # no native browser and no manifest: this is the whole problem
    assert "sandbox" in note.detail


def test_a_snap_browser_next_to_a_native_one_is_a_warning(platform: Platform, home: Path) -> None:
    installed(platform, home)
    (platform.root / "snap/chromium").mkdir(parents=True)
    [note] = [c for c in checks_of(platform, home) if c.name == "snap chromium"]
    assert note.ok
    assert note.warning


def test_the_output_is_one_line_per_check(platform: Platform, home: Path) -> None:
    manifest = installed(platform, home)
    edit(manifest, path="relative")
    checks = checks_of(platform, home)
    text = format_checks(checks)
    assert len(text.splitlines()) == len(checks)
    assert any(
        line.startswith("FAIL") and "fix: browy install-host" in line for line in text.splitlines()
    )


def _tree(restart_times: list[float]) -> Any:
    child = {
        "name": "turn-scheduler", "kind": "actor", "restart": "permanent", "state": "running",
        "mailbox_depth": 0, "restarts": len(restart_times), "restart_times": restart_times,
        "uptime_s": 3.0, "supervisor": None,
    }  # fmt: skip
    agent = {"name": "agent", "strategy": "one_for_one", "max_restarts": 5,
             "within_seconds": 10.0, "children": [child]}  # fmt: skip
    return {
        "name": "browyd", "strategy": "rest_for_one", "max_restarts": 0, "within_seconds": 60.0,
        "children": [{**child, "name": "agent", "kind": "supervisor", "supervisor": agent,
                      "restart_times": [], "restarts": 0}],
    }  # fmt: skip


def test_doctor_reports_an_actor_that_restarted_in_the_last_hour(
    platform: Platform, home: Path
) -> None:
    installed(platform, home)
    now = time.time()
    checks = checks_of(platform, home, daemon_tree=lambda _h: _tree([now - 7200, now - 60]))
    [restarts] = [c for c in checks if c.name == "actor restarts"]
    assert restarts.ok and restarts.warning
    assert "browyd/agent/turn-scheduler 1 time(s)" in restarts.detail
    assert "browy logs" in restarts.fix
    quiet = checks_of(platform, home, daemon_tree=lambda _h: _tree([now - 7200]))
    [restarts] = [c for c in quiet if c.name == "actor restarts"]
    assert not restarts.warning and "no actor restarted" in restarts.detail


def test_doctor_skips_the_restart_check_when_no_daemon_runs(platform: Platform, home: Path) -> None:
    installed(platform, home)
    assert not [c for c in checks_of(platform, home) if c.name == "actor restarts"]


def test_doctor_lists_the_copies_of_damaged_journals_as_a_warning(
    platform: Platform, home: Path
) -> None:
    installed(platform, home)
    [clean] = [c for c in checks_of(platform, home) if c.name == "journals"]
    assert clean.ok and not clean.warning
    scope = home / "sessions" / "install-1"
    scope.mkdir(parents=True)
    (scope / "sp-1.journal").write_bytes(b"")
    (scope / "sp-1.journal.corrupt").write_bytes(b"original")
    (scope / "sp-1.journal.corrupt.1").write_bytes(b"original again")
    [check] = [c for c in checks_of(platform, home) if c.name == "journals"]
    assert check.ok and check.warning
    assert "1 journal" in check.detail
    assert "sessions/install-1/sp-1.journal.corrupt" in check.detail
    assert "sp-1.journal.corrupt.1" in check.detail
    assert "disk" in check.fix and "delete" in check.fix


def test_an_api_key_sent_over_plain_http_to_another_host_is_a_warning(
    platform: Platform, home: Path
) -> None:
    installed(platform, home)
    set_config_value(home, "model.base_url", "http://models.example.net:8000/v1")
    [check] = [c for c in checks_of(platform, home) if c.name == "model connection"]
    assert check.ok and check.warning
    assert "models.example.net" in check.detail and "plain http" in check.detail
    assert "https" in check.fix and "tunnel" in check.fix


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:8000/v1",
        "http://[::1]:8000/v1",
        "http://localhost:11434/v1",
        "https://models.example.net/v1",
        None,
    ],
)
def test_loopback_over_http_and_any_https_endpoint_raise_no_transport_warning(
    platform: Platform, home: Path, base_url: str | None
) -> None:
    installed(platform, home)
    set_config_value(home, "model.base_url", base_url)
    checks = checks_of(platform, home)
    assert [c for c in checks if c.name == "model connection" and c.warning] == []
