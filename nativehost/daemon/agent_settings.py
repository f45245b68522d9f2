"""The agent's settings from the validated config (``config.toml`` and the environment)."""

from __future__ import annotations

import logging
from pathlib import Path

from actors.agent.agent_config import AgentSettings
from actors.model.types import ModelSettings
from nativehost.config_schema import Config

__all__ = ["agent_settings", "model_settings"]

log = logging.getLogger(__name__)


def model_settings(home: Path, config: Config) -> ModelSettings | None:
    """The gateway's settings from ``[model]`` (and the environment), or None if not configured."""
    model = config.model
    if model.provider == "copilot":
        # The CLI holds the sign-in; no URL or key. No model: Copilot's default.
        return ModelSettings(
            provider="copilot",
            base_url="",
            api_key=None,
            model=model.model or "",
            cli_path=str(model.cli_path.expanduser()) if model.cli_path else None,
            stream_idle_timeout=min(model.request_timeout, 120.0),
        )
    base_url = model.base_url
    if base_url is None and model.provider == "anthropic":
        base_url = "https://api.anthropic.com"
    if not base_url or not model.model:
        return None
    try:
        key = model.resolve_api_key(home)
    except Exception as exc:  # a named key file that cannot be read: reported as unauth
        log.error("model key: %s", exc)
        key = None
    return ModelSettings(
        provider=model.provider,
        base_url=base_url,
        api_key=key,
        model=model.model,
        stream_idle_timeout=model.request_timeout,
    )


def agent_settings(home: Path, config: Config, version: str) -> AgentSettings:
    """The agent's settings from the validated config."""
    return AgentSettings(
        home=home,
        model=model_settings(home, config),
        turn_concurrency=config.daemon.turn_concurrency,
        allow_host_code=config.tools.allow_host_code,
        approval_mode=config.tools.approval_mode,
        v1_approval_mode=config.tools.v1_approval_mode,
        secret_reads=config.tools.secret_reads,
        mcp_clients=frozenset(config.mcp.allowed_clients),
        mcp_host_tools=frozenset(config.mcp.host_tools),
        mcp_elicit_clients=frozenset(config.mcp.elicit_clients),
        allow_local_clients=config.daemon.allow_local_clients,
        disabled_tools=frozenset(config.tools.disabled_tools),
        enabled_host_tools=frozenset(config.tools.enabled_host_tools),
        version=version,
    )
