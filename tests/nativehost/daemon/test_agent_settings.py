"""``[model] request_timeout`` reaches the model gateway as given; inf, nan and negative values
are refused with a message naming the setting, from the file and from ``browy config set``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nativehost.cli.main import main
from nativehost.config import load_config, set_config_value
from nativehost.config_schema import ConfigError
from nativehost.daemon.agent_settings import model_settings


def _home_with(tmp_path: Path, timeout: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.toml").write_text(
        '[model]\nbase_url = "http://127.0.0.1:11434/v1"\nmodel = "slow-local"\n'
        f"request_timeout = {timeout}\n"
    )
    return tmp_path


@pytest.mark.parametrize("seconds", [0.5, 120, 121, 600, 3600])
def test_the_stream_idle_timeout_is_request_timeout_as_given(
    tmp_path: Path, seconds: float
) -> None:
    home = _home_with(tmp_path, str(seconds))
    settings = model_settings(home, load_config(home, env={}))
    assert settings is not None
    assert settings.stream_idle_timeout == seconds


@pytest.mark.parametrize("text", ["inf", "+inf", "-inf", "nan"])
def test_a_non_finite_request_timeout_in_the_file_is_refused_naming_it(
    tmp_path: Path, text: str
) -> None:
    home = _home_with(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(home, env={})
    message = str(caught.value)
    assert "[model] request_timeout" in message
    assert "must be a finite number (inf and nan are not allowed)" in message


@pytest.mark.parametrize("value", ["inf", "nan", "-5", "0"])
def test_config_set_refuses_a_non_finite_or_non_positive_timeout_and_writes_nothing(
    tmp_path: Path, value: str
) -> None:
    set_config_value(tmp_path, "model.model", "m")
    before = (tmp_path / "config.toml").read_bytes()
    with pytest.raises(ConfigError, match=r"\[model\] request_timeout"):
        set_config_value(tmp_path, "model.request_timeout", value)
    assert (tmp_path / "config.toml").read_bytes() == before


def test_the_cli_reports_an_infinite_timeout_as_a_user_error(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["config", "set", "model.request_timeout", "inf"],
        env={"BROWY_HOME": str(tmp_path), "HOME": str(tmp_path)},
        stdout=out,
        stderr=err,
    )
    assert code == 2
    assert "[model] request_timeout = 'inf': must be a finite number" in err.getvalue()
    assert "Traceback" not in err.getvalue()
