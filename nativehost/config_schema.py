"""What ``config.toml`` may hold: its sections and settings, their defaults and rules (pydantic).

:class:`Config` has one section per table of the file — ``[host]``, ``[daemon]``, ``[model]``,
``[tools]``, ``[files]``, ``[retention]`` — each frozen, and each forbidding unknown keys, so a typo
is an error naming the key. Reading the file and the environment into a :class:`Config`, and
changing the file, is :mod:`nativehost.config`.

Errors: :class:`ConfigError` for anything that makes the configuration unusable; its message is for
the user and names the file (or the environment variable) and the field.
"""

from __future__ import annotations

import socket
from ipaddress import ip_address
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from nativehost.origins import (
    BROWY_PUBLISHED_IDS,
    effective_extension_ids,
    is_extension_id,
    origin_of,
)

__all__ = [
    "ApprovalMode",
    "Config",
    "ConfigError",
    "DaemonConfig",
    "FilesConfig",
    "HostConfig",
    "HostTool",
    "LinkTransport",
    "McpConfig",
    "ModelConfig",
    "RetentionConfig",
    "ToolsConfig",
]

ApprovalMode = Literal["never", "page-changing", "always"]
HostTool = Literal["write_file", "bash", "grep", "glob", "web_fetch", "run_script"]
LinkTransport = Literal["unix", "tcp"]


class ConfigError(Exception):
    """The configuration cannot be used; ``str(exc)`` is a message for the user."""


class _Section(BaseModel):
    # No setting means anything with inf or nan (a timeout of inf is "never", which is what 0
    # says where the schema allows it; nan compares false with every bound).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


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
    """``[model]``: the model provider. ``api_key`` wins over ``api_key_file``.

    ``provider = "copilot"`` drives the GitHub Copilot CLI (``@github/copilot``) through the
    ``github-copilot-sdk``: no key or URL, the user signs in (``browy login copilot``);
    ``cli_path`` names the CLI when it is not on PATH (else ``COPILOT_CLI_PATH``, then PATH).
    """

    provider: Literal["openai", "anthropic", "copilot"] = "openai"
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_key_file: Path | None = None
    model: str | None = None
    # Seconds the model may stay silent (before its first token, or inside the stream) before
    # the call ends: as given, so a slow local model can have 600 or more.
    request_timeout: float = Field(default=120.0, gt=0)
    cli_path: Path | None = None

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
    # Host tools switched on for every session, each off by default (the options page, or
    # `browy config set tools.enabled_host_tools grep,glob`); bash and run_script
    # also need allow_host_code.
    enabled_host_tools: tuple[HostTool, ...] = ()
    # Tools that read the page's secrets (get_cookies, get_storage): "ask" the user every time,
    # never remembered (a v1 panel cannot answer: refused); "allow" runs them without asking.
    secret_reads: Literal["ask", "allow"] = "ask"


class FilesConfig(_Section):
    """``[files]``: the file tools' sandbox (always ``BROWY_HOME/data/files``)."""

    max_file_bytes: int = Field(default=10 * 1024 * 1024, ge=1)


class RetentionConfig(_Section):
    """``[retention]``: chat journals kept. 0 means no limit."""

    max_chats: int = Field(default=200, ge=0)
    max_age_days: int = Field(default=90, ge=0)


class McpConfig(_Section):
    """``[mcp]``: ``browy mcp``'s clients.

    ``allowed_clients``: the clients (by their ``clientInfo`` name) the user allowed for good.
    ``host_tools``: host-side tools (files, notes, host code…) offered to MCP clients besides the
    browser tools; none by default, and host code still needs ``[tools] allow_host_code``.
    ``elicit_clients``: clients also asked about their own guarded actions (MCP elicitation,
    where the client supports it) besides the side panel; none by default — a client that
    answers for itself would approve its own actions.
    """

    allowed_clients: tuple[str, ...] = ()
    host_tools: tuple[str, ...] = ()
    elicit_clients: tuple[str, ...] = ()


class Config(_Section):
    host: HostConfig = HostConfig()
    daemon: DaemonConfig = DaemonConfig()
    model: ModelConfig = ModelConfig()
    tools: ToolsConfig = ToolsConfig()
    files: FilesConfig = FilesConfig()
    retention: RetentionConfig = RetentionConfig()
    mcp: McpConfig = McpConfig()
