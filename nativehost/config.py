"""Browy's settings: ``BROWY_HOME/config.toml`` plus a few environment variables, read and changed.

Sources, later wins::

    defaults  <  config.toml  <  environment (BROWY_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY,
                                              ANTHROPIC_API_KEY, BROWY_LINK_TRANSPORT,
                                              BROWY_IDLE_EXIT_SECONDS)

The daemon is started by the relay, which Chrome starts: it inherits the *browser's* environment,
not the user's shell (architecture.md section 1). So the environment is a convenience for tests
and for the CLI; durable settings belong in the file, and ``browy doctor`` says so when a key is
only in the shell.

What the file may hold (the sections, their fields and rules) is the schema,
:class:`nativehost.config_schema.Config`. Errors: every problem raises
:class:`nativehost.config_schema.ConfigError`, whose message names the file (or the environment
variable) and the field, e.g.::

    /home/u/.browy/config.toml: [daemon] idle_exit_seconds = 'soon': Input should be a valid number

The relay must not import this module (pydantic is slow to import): it uses
:mod:`nativehost.origins`.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.items
from pydantic import BaseModel, SecretStr, ValidationError
from tomlkit.exceptions import TOMLKitError

from actors.runtime.private_files import write_private
from nativehost.config_schema import Config, ConfigError
from nativehost.origins import CONFIG_FILE_NAME

__all__ = [
    "ENV_OVERRIDES",
    "config_path",
    "dumps_toml",
    "load_config",
    "read_config_file",
    "redacted_dict",
    "set_config_value",
    "split_key",
]


def config_path(home: Path) -> Path:
    return home / CONFIG_FILE_NAME


# Environment variable -> (section, key). The provider keys apply only to their provider.
ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "BROWY_MODEL": ("model", "model"),
    "OPENAI_BASE_URL": ("model", "base_url"),
    "OPENAI_API_KEY": ("model", "api_key"),
    "ANTHROPIC_API_KEY": ("model", "api_key"),
    "BROWY_LINK_TRANSPORT": ("daemon", "link_transport"),
    "BROWY_IDLE_EXIT_SECONDS": ("daemon", "idle_exit_seconds"),
}
_PROVIDER_KEY_VARS = {"OPENAI_API_KEY": "openai", "ANTHROPIC_API_KEY": "anthropic"}


# --------------------------------------------------------------------------------------------
# Loading


def read_config_file(home: Path) -> dict[str, Any]:
    """The raw TOML of ``home/config.toml`` ({} if missing). Raises ConfigError if unparsable."""
    path = config_path(home)
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None


def _env_layer(
    env: Mapping[str, str], provider: object
) -> tuple[dict[str, dict[str, str]], dict[tuple[str, str], str]]:
    """The overrides present in *env*, and for each (section, key) the variable it came from."""
    layer: dict[str, dict[str, str]] = {}
    sources: dict[tuple[str, str], str] = {}
    for var, (section, key) in ENV_OVERRIDES.items():
        value = env.get(var)
        if value is None or value == "":
            continue
        wanted = _PROVIDER_KEY_VARS.get(var)
        if wanted is not None and wanted != (provider or "openai"):
            continue
        layer.setdefault(section, {})[key] = value
        sources[(section, key)] = var
    return layer, sources


def _describe_loc(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return "(top level)"
    head, *rest = loc
    if not rest:
        return f"[{head}]" if head in Config.model_fields else str(head)
    text = f"[{head}] {rest[0]}"
    for part in rest[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _format_errors(
    exc: ValidationError, origin: str, env_sources: Mapping[tuple[str, str], str]
) -> str:
    lines: list[str] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        where = _describe_loc(loc)
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "finite_number":
            msg = "must be a finite number (inf and nan are not allowed)"
        if err["type"] == "extra_forbidden":
            section = loc[0] if len(loc) > 1 else None
            known = (
                Config.model_fields[str(section)].annotation.model_fields  # type: ignore[union-attr]
                if section in Config.model_fields
                else Config.model_fields
            )
            msg = f"unknown setting (known: {', '.join(known)})"
        source = origin
        if len(loc) >= 2 and (str(loc[0]), str(loc[1])) in env_sources:
            source = f"environment variable {env_sources[(str(loc[0]), str(loc[1]))]}"
        shown = ""
        if "input" in err and err["type"] not in ("extra_forbidden", "missing") and len(loc) > 1:
            value = err["input"]
            if isinstance(value, dict):
                shown = ""
            elif "api_key" in where and "file" not in where:
                shown = " = '***'"
            else:
                shown = f" = {value!r}"
        lines.append(f"{source}: {where}{shown}: {msg}")
    return "\n".join(lines)


def _merge(base: Mapping[str, Any], layer: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for section, values in layer.items():
        target = merged.get(section)
        if not isinstance(target, dict):
            target = {}
        merged[section] = {**target, **values}
    return merged


def _validate(
    data: Mapping[str, Any], origin: str, env_sources: Mapping[tuple[str, str], str]
) -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, origin, env_sources)) from None


def load_config(home: Path, env: Mapping[str, str] | None = None) -> Config:
    """Defaults, then ``home/config.toml``, then *env* (default ``os.environ``; ``{}`` = file only).

    A missing file means defaults. Anything invalid raises :class:`ConfigError` naming the file or
    the environment variable, and the field.
    """
    env = os.environ if env is None else env
    path = config_path(home)
    raw = read_config_file(home)
    # The file alone must be valid, so its errors are not blamed on the environment.
    file_config = _validate(raw, str(path), {})
    layer, sources = _env_layer(env, file_config.model.provider)
    if not layer:
        return file_config
    return _validate(_merge(raw, layer), str(path), sources)


# --------------------------------------------------------------------------------------------
# Writing


def _toml_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_key(key: str) -> str:
    if key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key):
        return key
    return _toml_string(key)


def dumps_toml(data: Mapping[str, Any]) -> str:
    """TOML for a flat two-level document: top-level scalars, then ``[section]`` tables of
    scalars and arrays of scalars (the whole of Browy's schema). ``None`` values are left out.
    For new files and display (``browy config show``); the user's own file is changed by
    :func:`set_config_value`, which keeps its comments."""
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            tables.append((key, value))
        elif value is not None:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for name, table in tables:
        if lines:
            lines.append("")
        lines.append(f"[{_toml_key(name)}]")
        for key, value in table.items():
            if isinstance(value, Mapping):
                raise TypeError(f"nested table {name}.{key} is not supported")
            if value is not None:
                lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    return "\n".join(lines) + "\n" if lines else ""


def _plain(value: object) -> object:
    """A validated field value as TOML can hold it."""
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _parse_cli_list(value: str) -> list[str]:
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{value!r} is not a TOML array: {exc}") from None
        return [str(v) for v in parsed]
    return [part.strip() for part in text.split(",") if part.strip()]


def split_key(dotted_key: str) -> tuple[str, str, type[BaseModel]]:
    """``section.key`` -> (section, key, the section's model); ConfigError for an unknown key."""
    section, dot, key = dotted_key.partition(".")
    if not dot or not key or "." in key:
        raise ConfigError(f"{dotted_key!r}: expected SECTION.KEY, e.g. model.model")
    if section not in Config.model_fields:
        raise ConfigError(
            f"{dotted_key!r}: unknown section (known: {', '.join(Config.model_fields)})"
        )
    section_model: type[BaseModel] = Config.model_fields[section].annotation  # type: ignore[assignment]
    if key not in section_model.model_fields:
        known = ", ".join(section_model.model_fields)
        raise ConfigError(f"{dotted_key!r}: unknown setting (known in [{section}]: {known})")
    return section, key, section_model


def _read_document(path: Path) -> tomlkit.TOMLDocument:
    """``config.toml`` as tomlkit reads it: comments, order and layout kept for the rewrite."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _store(doc: tomlkit.TOMLDocument, section: str, key: str, value: object) -> None:
    """Put *value* at ``[section] key`` of *doc* (None removes it), touching nothing else: a new
    key goes at the end of its table, a new table at the end of the file, and a table left empty
    by a removal goes too unless it holds a comment."""
    table = doc.get(section)
    if value is None:
        if table is None or key not in table:
            return
        del table[key]
        body = getattr(getattr(table, "value", None), "body", [])
        commented = any(isinstance(item, tomlkit.items.Comment) for _, item in body)
        trivia = getattr(table, "trivia", None)
        if not len(table) and not commented and not (trivia is not None and trivia.comment):
            del doc[section]
        return
    if table is None:
        table = tomlkit.table()
        doc[section] = table
    table[key] = value


def set_config_value(home: Path, dotted_key: str, value: object) -> Config:
    """Set ``section.key`` in ``home/config.toml`` (``None`` removes it) and return the file's
    validated config (environment not applied).

    *value* may be a string as typed on a command line (``"600"``, ``"true"``, ``"a,b"`` or
    ``"[\\"a\\", \\"b\\"]"`` for lists) or an already typed value; it is validated against the
    schema, with the rest of the file, and stored with its proper TOML type. Nothing is written if
    the result is invalid. The rest of the file stays as the user wrote it — comments, order,
    blank lines (tomlkit) — and the file is replaced atomically, 0600 (it may hold an API key).
    """
    section, key, section_model = split_key(dotted_key)
    path = config_path(home)
    doc = _read_document(path)

    raw: dict[str, Any] = doc.unwrap()
    table = raw.get(section)
    table = dict(table) if isinstance(table, dict) else {}
    if value is None:
        table.pop(key, None)
    else:
        is_list = getattr(section_model.model_fields[key].annotation, "__origin__", None) is tuple
        table[key] = _parse_cli_list(value) if is_list and isinstance(value, str) else value
    raw[section] = table

    config = _validate(raw, str(path), {})
    stored = None if value is None else _plain(getattr(getattr(config, section), key))
    _store(doc, section, key, stored)
    write_private(path, tomlkit.dumps(doc))
    return config


def redacted_dict(config: Config) -> dict[str, dict[str, Any]]:
    """The config as plain data for display, secrets replaced by ``'***'``."""
    out: dict[str, dict[str, Any]] = {}
    for section in Config.model_fields:
        values: dict[str, Any] = {}
        for key, value in getattr(config, section):
            if isinstance(value, SecretStr):
                values[key] = "***"
            else:
                values[key] = _plain(value)
        out[section] = values
    return out
