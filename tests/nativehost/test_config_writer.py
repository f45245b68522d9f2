"""``browy config set`` / ``unset`` change one setting and leave the rest of ``config.toml`` as the
user wrote it: comments, blank lines, order, quoting (tomlkit). Invalid values write nothing."""

from __future__ import annotations

import io
import os
import stat
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nativehost.cli.main import main
from nativehost.config import load_config, set_config_value
from nativehost.config_schema import ConfigError

USER_FILE = """\
# Browy settings, written by hand.
# (keep this header)

[model]
# the local one is faster
base_url = 'http://127.0.0.1:11434/v1'   # ollama
model = "llama3.1"

[daemon]
idle_exit_seconds = 900  # fifteen minutes
"""


def _home(tmp_path: Path, text: str = USER_FILE) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    return tmp_path


def _text(home: Path) -> str:
    return (home / "config.toml").read_text(encoding="utf-8")


def test_changing_a_value_rewrites_only_its_line(tmp_path: Path) -> None:
    home = _home(tmp_path)
    set_config_value(home, "model.model", "qwen2.5")
    assert _text(home) == USER_FILE.replace('model = "llama3.1"', 'model = "qwen2.5"')


def test_a_value_keeps_its_inline_comment(tmp_path: Path) -> None:
    home = _home(tmp_path)
    set_config_value(home, "daemon.idle_exit_seconds", "60")
    assert "idle_exit_seconds = 60.0  # fifteen minutes\n" in _text(home)
    assert _text(home).startswith("# Browy settings, written by hand.\n# (keep this header)\n")


def test_a_new_setting_goes_at_the_end_of_its_table(tmp_path: Path) -> None:
    home = _home(tmp_path)
    set_config_value(home, "model.request_timeout", "600")
    assert _text(home) == USER_FILE.replace(
        'model = "llama3.1"\n', 'model = "llama3.1"\nrequest_timeout = 600.0\n'
    )


def test_a_new_table_goes_at_the_end_of_the_file(tmp_path: Path) -> None:
    home = _home(tmp_path)
    set_config_value(home, "tools.approval_mode", "always")
    text = _text(home)
    assert text.startswith(USER_FILE)
    assert text.endswith('[tools]\napproval_mode = "always"\n')
    assert tomllib.loads(text)["tools"] == {"approval_mode": "always"}


def test_unsetting_removes_the_line_and_keeps_the_comments(tmp_path: Path) -> None:
    home = _home(tmp_path)
    set_config_value(home, "model.base_url", None)
    text = _text(home)
    assert "base_url" not in text
    assert "# the local one is faster\n" in text
    assert "# Browy settings, written by hand.\n" in text


def test_a_table_left_empty_goes_unless_it_holds_a_comment(tmp_path: Path) -> None:
    home = _home(tmp_path)
    set_config_value(home, "daemon.idle_exit_seconds", None)
    assert "[daemon]" not in _text(home)
    set_config_value(home, "model.base_url", None)
    set_config_value(home, "model.model", None)
    assert "[model]\n# the local one is faster\n" in _text(home)  # the user's note stays


def test_an_invalid_value_leaves_the_file_byte_for_byte(tmp_path: Path) -> None:
    home = _home(tmp_path)
    before = (home / "config.toml").read_bytes()
    with pytest.raises(ConfigError, match=r"\[daemon\] turn_concurrency"):
        set_config_value(home, "daemon.turn_concurrency", "0")
    with pytest.raises(ConfigError, match="unknown setting"):
        set_config_value(home, "model.modle", "x")
    assert (home / "config.toml").read_bytes() == before


def test_a_file_that_is_not_toml_is_reported_and_left_alone(tmp_path: Path) -> None:
    home = _home(tmp_path, "[model\nmodel = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        set_config_value(home, "model.model", "m")
    assert _text(home) == "[model\nmodel = 1\n"


def test_the_rewritten_file_is_private(tmp_path: Path) -> None:
    home = _home(tmp_path)
    os.chmod(home / "config.toml", 0o644)
    set_config_value(home, "model.model", "m")
    assert stat.S_IMODE(os.stat(home / "config.toml").st_mode) == 0o600


def test_lists_are_stored_as_toml_arrays_next_to_comments(tmp_path: Path) -> None:
    home = _home(tmp_path)
    set_config_value(home, "tools.disabled_tools", "bash,run_script")
    assert 'disabled_tools = ["bash", "run_script"]' in _text(home)
    assert load_config(home, env={}).tools.disabled_tools == ("bash", "run_script")


def test_browy_config_set_and_unset_keep_the_users_comments(tmp_path: Path) -> None:
    home = _home(tmp_path / "browy")
    env = {"BROWY_HOME": str(home), "HOME": str(tmp_path)}
    out, err = io.StringIO(), io.StringIO()
    assert main(["config", "set", "model.model", "gpt-4o"], env=env, stdout=out, stderr=err) == 0
    assert main(["config", "unset", "daemon.idle_exit_seconds"], env=env, stdout=out) == 0
    text = _text(home)
    assert "# Browy settings, written by hand.\n# (keep this header)\n" in text
    assert "base_url = 'http://127.0.0.1:11434/v1'   # ollama\n" in text
    assert 'model = "gpt-4o"\n' in text


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda s: s.strip() != ""
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_TEXT)
def test_any_model_name_round_trips_and_the_comments_stay(tmp_path: Path, name: str) -> None:
    home = _home(tmp_path)
    set_config_value(home, "model.model", name)
    text = _text(home)
    assert tomllib.loads(text)["model"]["model"] == name
    assert load_config(home, env={}).model.model == name
    assert text.startswith("# Browy settings, written by hand.\n")
    assert "idle_exit_seconds = 900  # fifteen minutes\n" in text
