"""One version, everywhere: ``browy --version``, ``doctor`` (text and JSON), the link's hello, the
installed distribution's metadata."""

from __future__ import annotations

import ast
import importlib.metadata
import io
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from nativehost.cli.main import main
from nativehost.version import VERSION

REPO = Path(__file__).resolve().parents[3]
_VERSION_NAMES = {"VERSION", "PACKAGE_VERSION", "__version__"}


def _run(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    env = {
        "HOME": str(tmp_path / "user"),
        "BROWY_HOME": str(tmp_path / "browy"),
        "BROWY_FS_ROOT": str(tmp_path / "root"),
        "BROWY_PLATFORM": "linux",
    }
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), env=env, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_version_prints_the_version_on_stdout_and_exits_0(tmp_path: Path) -> None:
    assert _run(tmp_path, "--version") == (0, f"browy {VERSION}\n", "")


def test_version_is_listed_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "--version" in capsys.readouterr().out


def test_the_console_script_answers_version_without_a_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nativehost.cli.main", "--version"],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, f"browy {VERSION}\n", "")


def test_doctor_names_the_version_first(tmp_path: Path) -> None:
    _, out, _ = _run(tmp_path, "doctor")
    assert out.splitlines()[0].startswith(f"ok    version: browy {VERSION} (Python ")


def test_doctor_json_carries_the_version_as_its_first_check(tmp_path: Path) -> None:
    _, out, _ = _run(tmp_path, "doctor", "--json")
    first = json.loads(out)[0]
    assert first["name"] == "version"
    assert first["ok"] is True
    assert first["detail"].startswith(f"browy {VERSION} ")


def test_the_distribution_takes_its_version_from_the_one_constant() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "nativehost.version.VERSION"
    }
    assert importlib.metadata.version("browy-host") == VERSION


def test_no_other_module_defines_a_version_constant() -> None:
    # The duplicated PACKAGE_VERSION constants are gone: every user imports nativehost.version.
    found = []
    for package in ("messages", "actors", "supervisors", "nativehost"):
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id in _VERSION_NAMES:
                            found.append(f"{path.relative_to(REPO)}:{target.id}")
    assert found == ["nativehost/version.py:VERSION"]


def test_doctor_warns_when_the_running_daemon_is_another_version(tmp_path: Path) -> None:
    from nativehost.daemon.instance import DaemonStatus
    from nativehost.setup.doctor import run_checks
    from nativehost.setup.platforms import OSName, Platform

    platform = Platform(OSName.LINUX, home=tmp_path / "user", root=tmp_path / "root")

    def old_daemon(home: Path) -> DaemonStatus:
        return DaemonStatus(running=True, pid=42, socket="s", details={"version": "0.0.9"})

    checks = run_checks(
        platform,
        tmp_path / "browy",
        env={},
        daemon_status=old_daemon,
        daemon_tree=lambda _home: None,
    )
    [daemon] = [c for c in checks if c.name == "daemon"]
    assert daemon.ok and daemon.warning
    assert f"runs browy 0.0.9, this is {VERSION}" in daemon.detail
    assert daemon.fix.startswith("browy daemon stop")
