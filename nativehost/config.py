"""Browy's settings: ``BROWY_HOME/config.toml`` plus a few environment variables, validated.

Sources, later wins::

    defaults  <  config.toml  <  environment (BROWY_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY,
                                              ANTHROPIC_API_KEY, BROWY_LINK_TRANSPORT,
                                              BROWY_IDLE_EXIT_SECONDS)

The daemon is started by the relay, which Chrome starts: it inherits the *browser's* environment,
not the user's shell (architecture.md section 1). So the environment is a convenience for tests
and for the CLI; durable settings belong in the file, and ``browy doctor`` says so when a key is
only in the shell.

Errors: every problem raises :class:`ConfigError`, whose message names the file (or the
environment variable) and the field, e.g.::

    /home/u/.browy/config.toml: [daemon] idle_exit_seconds = 'soon': Input should be a valid number

The relay must not import this module (pydantic is slow to import): it uses
:mod:`nativehost.origins`, whose names are re-exported here for everyone else.
"""

from __future__ import annotations

import math
import os
import socket
import tomllib
from collections.abc import Mapping
from ipaddress import ip_address
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from nativehost.origins import (
    BROWY_PUBLISHED_IDS,
    CONFIG_FILE_NAME,
    HOST_NAME,
    OUR_EXTENSION_ID,
    effective_extension_ids,
    is_extension_id,
    origin_of,
    read_allowed_origins,
)

__all__ = [
    "BROWY_PUBLISHED_IDS",
    "ENV_OVERRIDES",
    "HOST_NAME",
    "OUR_EXTENSION_ID",
    "ApprovalMode",
    "Config",
    "ConfigError",
    "DaemonConfig",
    "FilesConfig",
    "HostConfig",
    "ModelConfig",
    "RetentionConfig",
    "ToolsConfig",
    "config_path",
    "dumps_toml",
    "load_config",
    "read_allowed_origins",
    "read_config_file",
    "redacted_dict",
    "set_config_value",
]

ApprovalMode = Literal["never", "page-changing", "always"]
LinkTransport = Literal["unix", "tcp"]


class ConfigError(Exception):
    """The configuration cannot be used; ``str(exc)`` is a message for the user."""


def config_path(home: Path) -> Path:
    return home / CONFIG_FILE_NAME


# --------------------------------------------------------------------------------------------
# The schema. Every section forbids unknown keys, so a typo is an error naming the key.


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HostConfig(_Section):
    """``[host]``: who may connect to the native host."""

    allowed_extension_ids: tuple[str, ...] = ()
    compat_browy: bool = False

    @field_validator("allowed_extension_ids")
    @classmethod
    def _ids_are_well_formed(cls, ids: tuple[str, ...]) -> tuple[str, ...]:
        for i in ids:
            if not is_extension_id(i):
                raise ValueError(
                    f"{i!r} is not an extension id (32 letters a-p, as shown on chrome://extensions)"
                )
        return tuple(dict.fromkeys(ids))

    @model_validator(mode="after")
    def _published_ids_need_compat(self) -> HostConfig:
        published = [i for i in self.allowed_extension_ids if i in BROWY_PUBLISHED_IDS]
        if published and not self.compat_browy:
            raise ValueError(
                f"{published[0]} is a published Browy extension: set host.compat_browy = true "
                "to serve it (the published ids are then allowed without listing them)"
            )
        return self

    @property
    def extension_ids(self) -> list[str]:
        """Every id that may connect: ours, the listed ones, the published ones if compat."""
        return effective_extension_ids(self.allowed_extension_ids, self.compat_browy)

    @property
    def allowed_origins(self) -> list[str]:
        return [origin_of(i) for i in self.extension_ids]


def _default_transport() -> LinkTransport:
    return "unix" if hasattr(socket, "AF_UNIX") else "tcp"


class DaemonConfig(_Section):
    """``[daemon]``: the long-running process."""

    idle_exit_seconds: float = Field(default=600.0, ge=0)  # 0: never exit when idle
    link_transport: LinkTransport = Field(default_factory=_default_transport)
    turn_concurrency: int = Field(default=4, ge=1, le=64)
    # Same-user clients other than the relay (CLI, MCP) drive the browser only if this is true
    # (architecture.md section 7).
    allow_local_clients: bool = False


class ModelConfig(_Section):
    """``[model]``: the model provider. ``api_key`` wins over ``api_key_file``."""

    provider: Literal["openai", "anthropic"] = "openai"
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_key_file: Path | None = None
    model: str | None = None
    request_timeout: float = Field(default=120.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _url_is_http(cls, url: str | None) -> str | None:
        if url is None:
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{url!r} is not an http(s) URL")
        return url.rstrip("/")

    @field_validator("model")
    @classmethod
    def _model_not_blank(cls, name: str | None) -> str | None:
        if name is not None and not name.strip():
            raise ValueError("must not be empty")
        return name

    @property
    def needs_api_key(self) -> bool:
        """False for a loopback ``base_url`` (a local model server usually wants no key)."""
        if self.base_url is None:
            return True
        host = urlsplit(self.base_url).hostname or ""
        if host == "localhost":
            return False
        try:
            return not ip_address(host).is_loopback
        except ValueError:
            return True

    def resolve_api_key(self, home: Path) -> str | None:
        """The key itself: ``api_key``, else the first line of ``api_key_file`` (relative to
        *home*). Raises :class:`ConfigError` if the named key file cannot be read."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_file is None:
            return None
        path = self.api_key_file.expanduser()
        if not path.is_absolute():
            path = home / path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"[model] api_key_file: cannot read {path}: {exc}") from None
        key = text.strip().splitlines()[0].strip() if text.strip() else ""
        return key or None


class ToolsConfig(_Section):
    """``[tools]``: what the model may do, and when the user is asked."""

    allow_host_code: bool = False  # run_script, bash, ... (off by default; section 7)
    approval_mode: ApprovalMode = "page-changing"
    # v1 panels cannot answer approval prompts (protocol.md section 3b): page-changing tools run.
    v1_approval_mode: ApprovalMode = "never"
    disabled_tools: tuple[str, ...] = ()


class FilesConfig(_Section):
    """``[files]``: the file tools' sandbox (always ``BROWY_HOME/data/files``)."""

    max_file_bytes: int = Field(default=10 * 1024 * 1024, ge=1)


class RetentionConfig(_Section):
    """``[retention]``: chat journals kept. 0 means no limit."""

    max_chats: int = Field(default=200, ge=0)
    max_age_days: int = Field(default=90, ge=0)


class Config(_Section):
    host: HostConfig = HostConfig()
    daemon: DaemonConfig = DaemonConfig()
    model: ModelConfig = ModelConfig()
    tools: ToolsConfig = ToolsConfig()
    files: FilesConfig = FilesConfig()
    retention: RetentionConfig = RetentionConfig()


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
    scalars and arrays of scalars (the whole of Browy's schema). ``None`` values are left out."""
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


def _write_private(path: Path, text: str) -> None:
    """Write atomically, mode 0600: the file may hold an API key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def set_config_value(home: Path, dotted_key: str, value: object) -> Config:
    """Set ``section.key`` in ``home/config.toml`` (``None`` removes it) and return the file's
    validated config (environment not applied).

    *value* may be a string as typed on a command line (``"600"``, ``"true"``, ``"a,b"`` or
    ``"[\\"a\\", \\"b\\"]"`` for lists) or an already typed value; it is validated against the
    schema and stored with its proper TOML type. Nothing is written if the result is invalid.
    Comments in the file are not kept.
    """
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

    raw = read_config_file(home)
    table = raw.get(section)
    table = dict(table) if isinstance(table, dict) else {}
    if value is None:
        table.pop(key, None)
    else:
        is_list = getattr(section_model.model_fields[key].annotation, "__origin__", None) is tuple
        table[key] = _parse_cli_list(value) if is_list and isinstance(value, str) else value
    raw[section] = table

    config = _validate(raw, str(config_path(home)), {})
    if value is not None:
        table[key] = _plain(getattr(getattr(config, section), key))
    raw = {name: t for name, t in raw.items() if not (isinstance(t, dict) and not t)}
    _write_private(config_path(home), dumps_toml(raw))
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
