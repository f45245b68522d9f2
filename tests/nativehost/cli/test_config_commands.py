"""``browy config get``, ``config set --help`` (every setting, its type and default), ``config
set-key`` (no echo, or stdin; a 0600 key file, never config.toml), and exit codes in every help."""

from __future__ import annotations

import argparse
import io
import json
import os
import pty
import select
import stat
import sys
import time
import warnings
from collections.abc import Callable
from getpass import GetPassWarning
from pathlib import Path

import pytest

from nativehost.cli.config_commands import handle_config
from nativehost.cli.context import Context, UserError
from nativehost.cli.main import COMMANDS, main
from nativehost.config import load_config
from nativehost.config_schema import Config

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-proj-Abc123Def456Ghi789"


class Run:
    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "browy"
        self.env = {"HOME": str(tmp_path), "BROWY_HOME": str(self.home)}

    def __call__(
        self, *argv: str, stdin: io.StringIO | None = None, env: dict[str, str] | None = None
    ) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(
            list(argv), env={**self.env, **(env or {})}, stdout=out, stderr=err, stdin=stdin
        )
        return code, out.getvalue(), err.getvalue()


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return Run(tmp_path)


# -- config get ----------------------------------------------------------------------------------


def test_get_prints_a_set_value(run: Run) -> None:
    run("config", "set", "model.model", "gpt-4o")
    assert run("config", "get", "model.model") == (0, "gpt-4o\n", "")


def test_get_prints_the_default_of_a_value_not_in_the_file(run: Run) -> None:
    assert run("config", "get", "model.request_timeout") == (0, "120.0\n", "")
    assert run("config", "get", "tools.allow_host_code") == (0, "false\n", "")


def test_get_of_a_setting_that_is_not_set_prints_nothing_and_exits_1(run: Run) -> None:
    assert run("config", "get", "model.base_url") == (1, "", "")
    assert run("config", "get", "model.base_url", "--json") == (1, "null\n", "")


def test_get_applies_the_environment_like_show(run: Run) -> None:
    run("config", "set", "model.model", "in-file")
    code, out, _ = run("config", "get", "model.model", env={"BROWY_MODEL": "from-env"})
    assert (code, out) == (0, "from-env\n")


def test_setting_a_key_on_the_command_line_points_to_set_key(run: Run) -> None:
    code, out, err = run("config", "set", "model.api_key", KEY)
    assert code == 0
    assert KEY not in out
    assert "model.api_key = ***" in out
    assert "browy config set-key" in err


def test_get_never_prints_an_api_key(run: Run) -> None:
    run("config", "set", "model.api_key", KEY)
    assert run("config", "get", "model.api_key") == (0, "***\n", "")


def test_get_json_gives_typed_values(run: Run) -> None:
    run("config", "set", "tools.disabled_tools", "bash,run_script")
    code, out, _ = run("config", "get", "tools.disabled_tools", "--json")
    assert (code, json.loads(out)) == (0, ["bash", "run_script"])
    assert run("config", "get", "tools.disabled_tools")[1] == "bash,run_script\n"
    assert json.loads(run("config", "get", "daemon.turn_concurrency", "--json")[1]) == 4


@pytest.mark.parametrize("key", ["model", "model.modle", "nope.x"])
def test_get_of_an_unknown_key_exits_2(run: Run, key: str) -> None:
    code, out, err = run("config", "get", key)
    assert (code, out) == (2, "")
    assert err.startswith("browy: error: ")


# -- config set --help -----------------------------------------------------------------------------


def test_set_help_lists_every_setting_with_its_type_and_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config", "set", "--help"]) == 0
    text = capsys.readouterr().out
    for section, outer in Config.model_fields.items():
        for name in outer.annotation.model_fields:  # type: ignore[union-attr]
            assert f"  {section}.{name} " in text, f"{section}.{name}"
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ")}
    assert "number > 0" in lines["model.request_timeout"]
    assert lines["model.request_timeout"].endswith("120.0")
    assert "integer >= 1, <= 64" in lines["daemon.turn_concurrency"]
    assert "one of: never, page-changing, always" in lines["tools.approval_mode"]
    assert lines["tools.approval_mode"].endswith("page-changing")
    assert "config set-key" in lines["model.api_key"]
    assert "exit codes:" in text


def test_version_and_help_import_no_pydantic() -> None:
    # The settings table is made only for `config set --help`; `browy --version` stays fast.
    import subprocess

    code = (
        "import sys; from nativehost.cli.main import main; main(['--version']); "
        "print('pydantic' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines()[-1] == "False"


# -- exit codes in --help --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [[name] for name, cmd in COMMANDS.items() if not cmd.passthrough]
    + [["config", "set"], ["config", "get"], ["daemon", "status"], ["sessions", "show"]],
    ids=" ".join,
)
def test_every_help_documents_the_exit_codes(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--help"]) == 0
    text = capsys.readouterr().out
    assert "exit codes:\n  0    " in text
    assert "\n  2    " in text
    assert "\n  130  " in text


def test_daemon_status_help_names_exit_code_3(capsys: pytest.CaptureFixture[str]) -> None:
    main(["daemon", "status", "--help"])
    assert "  3    status / tree: the daemon is not running" in capsys.readouterr().out


# -- config set-key --------------------------------------------------------------------------------


def _assert_key_stored(run: Run, provider: str) -> Path:
    key_file = run.home / "keys" / f"{provider}.key"
    assert key_file.read_text() == KEY + "\n"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    config = load_config(run.home, env={})
    assert config.model.api_key is None
    assert config.model.api_key_file == key_file
    assert config.model.resolve_api_key(run.home) == KEY
    assert KEY not in (run.home / "config.toml").read_text()
    return key_file


def test_set_key_reads_the_first_line_of_stdin_when_it_is_not_a_terminal(run: Run) -> None:
    code, out, err = run("config", "set-key", stdin=io.StringIO(f"  {KEY}  \nignored\n"))
    assert (code, err) == (0, "")
    key_file = _assert_key_stored(run, "openai")
    assert KEY not in out
    assert str(key_file) in out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _ctx(run: Run, stdin: io.StringIO, read_secret: Callable[[str], str]) -> Context:
    ctx = Context(env=run.env, stdout=io.StringIO(), stderr=io.StringIO(), stdin=stdin)
    ctx.read_secret = read_secret
    return ctx


def test_set_key_asks_the_terminal_without_echo(run: Run) -> None:
    prompts: list[str] = []

    def getpass(prompt: str) -> str:
        prompts.append(prompt)
        return KEY

    args = argparse.Namespace(config_action="set-key", provider=None)
    assert handle_config(args, _ctx(run, _Terminal(), getpass)) == 0
    assert prompts == ["API key for openai (not shown): "]
    _assert_key_stored(run, "openai")


def test_set_key_refuses_a_terminal_whose_echo_it_cannot_turn_off(run: Run) -> None:
    def echoing_getpass(prompt: str) -> str:
        warnings.warn("Can not control echo on the terminal.", GetPassWarning, stacklevel=2)
        return KEY  # what getpass's fallback would read with echo on

    args = argparse.Namespace(config_action="set-key", provider=None)
    with pytest.raises(UserError, match="pipe the key on stdin"):
        handle_config(args, _ctx(run, _Terminal(), echoing_getpass))
    assert not (run.home / "keys").exists()


def test_set_key_with_a_provider_switches_the_provider(run: Run) -> None:
    code, out, _ = run("config", "set-key", "anthropic", stdin=io.StringIO(KEY + "\n"))
    assert code == 0
    assert "model.provider = anthropic" in out
    _assert_key_stored(run, "anthropic")
    assert load_config(run.home, env={}).model.provider == "anthropic"


def test_set_key_moves_a_key_out_of_config_toml_and_keeps_the_comments(run: Run) -> None:
    run.home.mkdir(parents=True)
    (run.home / "config.toml").write_text(
        '# mine\n[model]\nmodel = "gpt-4o"  # the big one\napi_key = "sk-old-key-in-the-file"\n'
    )
    code, out, _ = run("config", "set-key", stdin=io.StringIO(KEY + "\n"))
    assert code == 0
    assert "removed the key that was stored in config.toml" in out
    text = (run.home / "config.toml").read_text()
    assert "sk-old-key-in-the-file" not in text
    assert text.startswith('# mine\n[model]\nmodel = "gpt-4o"  # the big one\n')
    _assert_key_stored(run, "openai")


@pytest.mark.parametrize("given", ["", "\n", "sk-one two\n", "sk-\x07bell\n"])
def test_set_key_refuses_no_key_or_a_mangled_one_and_writes_nothing(run: Run, given: str) -> None:
    code, _, err = run("config", "set-key", stdin=io.StringIO(given))
    assert code == 2
    assert err.startswith("browy: error: ")
    assert not (run.home / "keys").exists()
    assert not (run.home / "config.toml").exists()


def test_set_key_refuses_an_unknown_provider(run: Run) -> None:
    code, _, err = run("config", "set-key", "acme", stdin=io.StringIO(KEY))
    assert code == 2
    assert "invalid choice: 'acme'" in err


def test_set_key_on_a_real_terminal_never_echoes_the_key(tmp_path: Path) -> None:
    home = tmp_path / "browy"
    env = {**os.environ, "HOME": str(tmp_path), "BROWY_HOME": str(home), "TERM": "xterm"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal, as in a real shell
        os.chdir(REPO)
        os.execve(
            sys.executable, [sys.executable, "-m", "nativehost.cli.main", "config", "set-key"], env
        )
    seen = b""

    def read_until(needle: bytes, timeout: float = 20.0) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while needle not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # EIO: the child closed the terminal
                    return
                if not chunk:
                    return
                seen += chunk

    try:
        read_until(b"(not shown): ")
        assert b"(not shown): " in seen, seen
        os.write(fd, KEY.encode() + b"\n")
        read_until(b"points at it")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert KEY.encode() not in seen
    assert (home / "keys" / "openai.key").read_text() == KEY + "\n"
