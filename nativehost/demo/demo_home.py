"""The demo's private ``BROWY_HOME``, and which model plays in it: the user's, or the scripted one.

:func:`new_demo_home` makes a temporary directory (under ``$XDG_CACHE_HOME/browy`` when that is
set); :func:`write_demo_config` gives it a ``config.toml`` that says ``[daemon]
allow_local_clients = true`` (this terminal may drive the browser) and ``[tools] approval_mode =
"never"`` (nothing waits for a click), with a ``[model]`` section that is either the scripted
model server's (:func:`scripted_model_section`) or a copy of the user's
(:func:`real_model_section`). :func:`model_is_configured` tells whether the user has a model set
up (``BROWY_MODEL`` / ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` or their ``config.toml``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from actors.runtime.private_files import write_private
from nativehost.config import load_config, read_config_file
from nativehost.config_schema import ConfigError
from nativehost.home import browy_home

__all__ = [
    "MODEL_ENV",
    "model_is_configured",
    "model_label",
    "new_demo_home",
    "real_model_section",
    "scripted_model_section",
    "write_demo_config",
]

#: The environment variables that choose a model (the scripted run takes them out of the
#: browser's environment: they would override config.toml).
MODEL_ENV = ("BROWY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def model_is_configured(env: Mapping[str, str]) -> bool:
    """True when the user has a model set up (the environment or their config.toml)."""
    try:
        model = load_config(browy_home(dict(env)), env=env).model
    except ConfigError:
        return False
    return bool(model.model) and (
        model.api_key is not None or model.api_key_file is not None or not model.needs_api_key
    )


def model_label(env: Mapping[str, str]) -> str:
    """The user's model as the demo names it: ``<model> at <base URL>``."""
    model = load_config(browy_home(dict(env)), env=env).model
    return f"{model.model} at {model.base_url or 'the provider default'}"


def _cache_root(env: Mapping[str, str]) -> Path | None:
    xdg = env.get("XDG_CACHE_HOME")
    if xdg:
        root = Path(xdg) / "browy"
        root.mkdir(parents=True, exist_ok=True)
        return root
    return None


def new_demo_home(env: Mapping[str, str]) -> Path:
    """A new, empty ``BROWY_HOME`` for one demo run (the caller removes it)."""
    return Path(tempfile.mkdtemp(prefix="browy-demo-", dir=_cache_root(env)))


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_demo_config(home: Path, model_section: str) -> None:
    text = (
        model_section
        + "\n[daemon]\nallow_local_clients = true\nidle_exit_seconds = 60\n"
        + '\n[tools]\napproval_mode = "never"\n'
    )
    write_private(home / "config.toml", text)


def scripted_model_section(base_url: str) -> str:
    """The [model] section for the scripted model server at *base_url*."""
    return f'[model]\nbase_url = {_toml_str(base_url)}\nmodel = "browy-demo"\napi_key = "sk-demo"\n'


def real_model_section(env: Mapping[str, str]) -> str:
    """The user's [model] settings for the demo's home (key files made absolute); keys given in
    the environment reach the daemon through the browser's environment instead."""
    user_home = browy_home(dict(env))
    raw = dict(read_config_file(user_home).get("model", {}))
    load_config(user_home, env=env)  # raises ConfigError with a clear message if invalid
    key_file = raw.get("api_key_file")
    if isinstance(key_file, str) and not Path(key_file).expanduser().is_absolute():
        raw["api_key_file"] = str(user_home / key_file)
    lines = ["[model]"]
    for key, value in raw.items():
        if isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        elif isinstance(value, int | float):
            lines.append(f"{key} = {value}")
        elif isinstance(value, str):
            lines.append(f"{key} = {_toml_str(value)}")
    return "\n".join(lines) + "\n"
