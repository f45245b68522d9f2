"""``browy login copilot`` and ``browy doctor`` with GitHub Copilot as the model, against the
scripted stand-in for the Copilot CLI (no network, no account)."""

from __future__ import annotations

import io
from pathlib import Path

from nativehost.cli.main import main
from nativehost.config import load_config, set_config_value
from nativehost.setup.copilot_checks import check_copilot
from tests.helpers.copilot_cli import StandinCli


def run(home: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = {"BROWY_HOME": str(home), "PATH": "/usr/bin:/bin"}
    return main(list(argv), env=env, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_login_shows_the_code_and_url_then_says_it_is_signed_in(tmp_path: Path) -> None:
    cli = StandinCli(tmp_path / "cli", authed=False)
    home = tmp_path / "browy"
    set_config_value(home, "model.cli_path", str(cli.path))
    code, out, err = run(home, "login", "copilot")
    assert code == 0, err
    assert "open https://github.com/login/device and enter the code WDJB-MJHT" in out
    assert "Signed in to GitHub Copilot." in out
    assert "  copilot: Signed in successfully as octocat." in out  # the CLI's own words, echoed
    assert "browy config set model.provider copilot" in out
    assert cli.authed


def test_a_failed_login_exits_1(tmp_path: Path) -> None:
    cli = StandinCli(tmp_path / "cli", authed=False, login="fails")
    home = tmp_path / "browy"
    set_config_value(home, "model.cli_path", str(cli.path))
    code, out, _ = run(home, "login", "copilot")
    assert code == 1
    assert "did not complete" in out


def test_login_without_the_cli_says_how_to_install_it(tmp_path: Path) -> None:
    code, _, err = run(tmp_path / "browy", "login", "copilot")
    assert code == 2
    assert "npm install -g @github/copilot" in err


def test_doctor_finds_the_cli_and_reports_the_sign_in(tmp_path: Path) -> None:
    home = tmp_path / "browy"
    set_config_value(home, "model.provider", "copilot")
    checks = {c.name: c for c in check_copilot(load_config(home, env={}), {"PATH": ""})}
    assert not checks["copilot cli"].ok
    assert "npm install -g @github/copilot" in checks["copilot cli"].fix

    cli = StandinCli(tmp_path / "cli", authed=False)
    set_config_value(home, "model.cli_path", str(cli.path))
    checks = {c.name: c for c in check_copilot(load_config(home, env={}), {"PATH": ""})}
    assert checks["copilot cli"].ok and checks["copilot cli"].detail == str(cli.path)
    assert not checks["copilot sign-in"].ok
    assert checks["copilot sign-in"].fix == "browy login copilot"

    (cli.dir / "authed").write_text("octocat")
    checks = {c.name: c for c in check_copilot(load_config(home, env={}), {"PATH": ""})}
    assert checks["copilot sign-in"].ok
