"""config.toml + environment -> a validated Config; the relay's light origin reader."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nativehost.config import dumps_toml, load_config, redacted_dict, set_config_value
from nativehost.config_schema import ConfigError
from nativehost.origins import (
    BROWY_PUBLISHED_IDS,
    OUR_EXTENSION_ID,
    effective_extension_ids,
    read_allowed_origins,
)

OTHER_ID = "abcdefghijklmnopabcdefghijklmnop"
REPO = Path(__file__).resolve().parents[2]


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def test_a_missing_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path, env={})
    assert config.daemon.idle_exit_seconds == 600
    assert config.daemon.turn_concurrency == 4
    assert config.tools.allow_host_code is False
    assert config.tools.v1_approval_mode == "never"
    assert config.host.extension_ids == [OUR_EXTENSION_ID]


def test_file_values_are_read(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        '[daemon]\nidle_exit_seconds = 5\nlink_transport = "tcp"\n'
        '[model]\nprovider = "anthropic"\nmodel = "claude"\n[retention]\nmax_chats = 3\n',
    )
    config = load_config(tmp_path, env={})
    assert config.daemon.idle_exit_seconds == 5
    assert config.daemon.link_transport == "tcp"
    assert config.model.provider == "anthropic"
    assert config.retention.max_chats == 3


def test_an_invalid_value_names_the_file_and_the_field(tmp_path: Path) -> None:
    write_config(tmp_path, '[daemon]\nidle_exit_seconds = "soon"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, env={})
    message = str(info.value)
    assert str(tmp_path / "config.toml") in message
    assert "[daemon] idle_exit_seconds" in message
    assert "'soon'" in message


def test_an_unknown_key_is_an_error_listing_the_known_ones(tmp_path: Path) -> None:
    write_config(tmp_path, "[tools]\nallow_host_kode = true\n")
    with pytest.raises(
        ConfigError, match=r"\[tools\] allow_host_kode: unknown setting.*allow_host_code"
    ):
        load_config(tmp_path, env={})


def test_an_unknown_section_is_an_error(tmp_path: Path) -> None:
    write_config(tmp_path, "[modle]\nmodel = 'x'\n")
    with pytest.raises(ConfigError, match="modle: unknown setting"):
        load_config(tmp_path, env={})


def test_broken_toml_is_reported_with_the_file_name(tmp_path: Path) -> None:
    write_config(tmp_path, "[daemon\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path, env={})


def test_an_approval_mode_outside_the_choices_is_refused(tmp_path: Path) -> None:
    write_config(tmp_path, '[tools]\napproval_mode = "sometimes"\n')
    with pytest.raises(ConfigError, match=r"\[tools\] approval_mode = 'sometimes'"):
        load_config(tmp_path, env={})


def test_a_malformed_extension_id_is_refused_with_its_index(tmp_path: Path) -> None:
    write_config(tmp_path, '[host]\nallowed_extension_ids = ["nope"]\n')
    with pytest.raises(
        ConfigError, match=r"\[host\] allowed_extension_ids.*'nope' is not an extension id"
    ):
        load_config(tmp_path, env={})


def test_a_published_id_needs_compat_browy(tmp_path: Path) -> None:
    write_config(tmp_path, f'[host]\nallowed_extension_ids = ["{BROWY_PUBLISHED_IDS[0]}"]\n')
    with pytest.raises(ConfigError, match="compat_browy"):
        load_config(tmp_path, env={})


def test_compat_browy_adds_the_published_ids_after_ours(tmp_path: Path) -> None:
    write_config(tmp_path, f'[host]\nallowed_extension_ids = ["{OTHER_ID}"]\ncompat_browy = true\n')
    ids = load_config(tmp_path, env={}).host.extension_ids
    assert ids == [OUR_EXTENSION_ID, OTHER_ID, *BROWY_PUBLISHED_IDS]


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    write_config(tmp_path, '[model]\nmodel = "from-file"\n[daemon]\nidle_exit_seconds = 30\n')
    env = {
        "BROWY_MODEL": "from-env",
        "OPENAI_BASE_URL": "http://127.0.0.1:9999/v1/",
        "OPENAI_API_KEY": "sk-env",
        "BROWY_LINK_TRANSPORT": "tcp",
        "BROWY_IDLE_EXIT_SECONDS": "0.5",
    }
    config = load_config(tmp_path, env=env)
    assert config.model.model == "from-env"
    assert config.model.base_url == "http://127.0.0.1:9999/v1"
    assert config.model.resolve_api_key(tmp_path) == "sk-env"
    assert config.daemon.link_transport == "tcp"
    assert config.daemon.idle_exit_seconds == 0.5


def test_a_provider_key_applies_only_to_its_provider(tmp_path: Path) -> None:
    write_config(tmp_path, '[model]\nprovider = "anthropic"\n')
    config = load_config(tmp_path, env={"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"})
    assert config.model.resolve_api_key(tmp_path) == "sk-a"


def test_an_invalid_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="environment variable BROWY_LINK_TRANSPORT") as info:
        load_config(tmp_path, env={"BROWY_LINK_TRANSPORT": "pigeon"})
    assert str(tmp_path) not in str(info.value)


def test_an_api_key_never_appears_in_an_error(tmp_path: Path) -> None:
    write_config(tmp_path, "[model]\napi_key = 12345\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, env={})
    assert "12345" not in str(info.value)


def test_api_key_file_is_read_relative_to_home(tmp_path: Path) -> None:
    (tmp_path / "key.txt").write_text("sk-file\n")
    write_config(tmp_path, '[model]\napi_key_file = "key.txt"\n')
    assert load_config(tmp_path, env={}).model.resolve_api_key(tmp_path) == "sk-file"


def test_a_loopback_base_url_needs_no_key(tmp_path: Path) -> None:
    write_config(tmp_path, '[model]\nbase_url = "http://localhost:11434/v1"\n')
    assert load_config(tmp_path, env={}).model.needs_api_key is False
    write_config(tmp_path, '[model]\nbase_url = "https://api.example.com/v1"\n')
    assert load_config(tmp_path, env={}).model.needs_api_key is True


def test_set_config_value_stores_typed_values(tmp_path: Path) -> None:
    set_config_value(tmp_path, "daemon.idle_exit_seconds", "42")
    set_config_value(tmp_path, "tools.allow_host_code", "true")
    set_config_value(tmp_path, "host.allowed_extension_ids", OTHER_ID)
    set_config_value(tmp_path, "tools.disabled_tools", '["bash", "run_script"]')
    data = tomllib.loads((tmp_path / "config.toml").read_text())
    assert data["daemon"]["idle_exit_seconds"] == 42.0
    assert data["tools"]["allow_host_code"] is True
    assert data["host"]["allowed_extension_ids"] == [OTHER_ID]
    assert data["tools"]["disabled_tools"] == ["bash", "run_script"]


def test_set_config_value_keeps_other_settings(tmp_path: Path) -> None:
    write_config(tmp_path, '[model]\nmodel = "m"\n')
    set_config_value(tmp_path, "model.base_url", "http://127.0.0.1:1/v1")
    config = load_config(tmp_path, env={})
    assert config.model.model == "m"
    assert config.model.base_url == "http://127.0.0.1:1/v1"


def test_set_config_value_refuses_an_invalid_value_and_writes_nothing(tmp_path: Path) -> None:
    write_config(tmp_path, '[model]\nmodel = "m"\n')
    before = (tmp_path / "config.toml").read_text()
    with pytest.raises(ConfigError, match=r"\[daemon\] turn_concurrency"):
        set_config_value(tmp_path, "daemon.turn_concurrency", "0")
    assert (tmp_path / "config.toml").read_text() == before


@pytest.mark.parametrize(
    ("key", "pattern"),
    [("nokey", "SECTION.KEY"), ("bogus.x", "unknown section"), ("model.modle", "unknown setting")],
)
def test_set_config_value_refuses_an_unknown_key(tmp_path: Path, key: str, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        set_config_value(tmp_path, key, "1")


def test_unsetting_a_value_removes_it(tmp_path: Path) -> None:
    set_config_value(tmp_path, "model.model", "m")
    set_config_value(tmp_path, "model.model", None)
    assert load_config(tmp_path, env={}).model.model is None


def test_the_config_file_is_private(tmp_path: Path) -> None:
    set_config_value(tmp_path, "model.api_key", "sk-secret")
    mode = stat.S_IMODE(os.stat(tmp_path / "config.toml").st_mode)
    assert mode == 0o600


def test_redacted_dict_hides_the_key(tmp_path: Path) -> None:
    set_config_value(tmp_path, "model.api_key", "sk-secret")
    shown = redacted_dict(load_config(tmp_path, env={}))
    assert shown["model"]["api_key"] == "***"
    assert "sk-secret" not in repr(load_config(tmp_path, env={}))


_scalars = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text()
)
_keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=12)


@given(
    st.dictionaries(
        _keys,
        st.dictionaries(_keys, _scalars | st.lists(st.text(), max_size=4), max_size=5),
        max_size=4,
    )
)
def test_the_toml_emitter_round_trips_through_tomllib(data: dict[str, dict[str, object]]) -> None:
    assert tomllib.loads(dumps_toml(data)) == data


def test_read_allowed_origins_follows_the_same_list(tmp_path: Path) -> None:
    write_config(tmp_path, f'[host]\nallowed_extension_ids = ["{OTHER_ID}"]\ncompat_browy = true\n')
    assert read_allowed_origins(tmp_path) == load_config(tmp_path, env={}).host.allowed_origins
    assert read_allowed_origins(tmp_path)[0] == f"chrome-extension://{OUR_EXTENSION_ID}/"


def test_read_allowed_origins_falls_back_to_our_origin_on_a_broken_file(tmp_path: Path) -> None:
    write_config(tmp_path, "[host\n")
    assert read_allowed_origins(tmp_path) == [f"chrome-extension://{OUR_EXTENSION_ID}/"]


def test_read_allowed_origins_drops_published_ids_without_compat(tmp_path: Path) -> None:
    write_config(tmp_path, f'[host]\nallowed_extension_ids = ["{BROWY_PUBLISHED_IDS[0]}"]\n')
    assert read_allowed_origins(tmp_path) == [f"chrome-extension://{OUR_EXTENSION_ID}/"]


def test_effective_ids_have_no_duplicates() -> None:
    ids = effective_extension_ids([OUR_EXTENSION_ID, OTHER_ID, OTHER_ID], compat_browy=False)
    assert ids == [OUR_EXTENSION_ID, OTHER_ID]


def test_the_relay_side_reader_does_not_import_pydantic(tmp_path: Path) -> None:
    code = (
        "import sys, pathlib\n"
        "from nativehost.origins import read_allowed_origins\n"
        f"read_allowed_origins(pathlib.Path({str(tmp_path)!r}))\n"
        "print('pydantic' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
