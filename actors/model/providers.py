"""The gateway for a configured provider: :func:`make_gateway`.

``ModelSettings.provider`` names the provider: ``"openai"`` (any OpenAI-compatible server, through
:class:`~actors.model.openai_gateway.ModelGateway`), ``"anthropic"`` (the Messages API, through
:class:`~actors.model.anthropic_gateway.AnthropicGateway`) or ``"copilot"`` (the GitHub Copilot
CLI, through :class:`~actors.model.copilot_gateway.CopilotGateway`, which runs its own loop). The
``anthropic`` SDK is an optional dependency, so its gateway is imported only when it is asked
for; the Copilot SDK is large, so its gateway too.
"""

from __future__ import annotations

import logging

from actors.model.openai_gateway import ModelGateway
from actors.model.types import ChatModel, ModelError, ModelSettings

__all__ = ["make_gateway"]

log = logging.getLogger(__name__)


def make_gateway(settings: ModelSettings) -> ChatModel:
    """The gateway for ``settings.provider``: ``ModelGateway`` for ``"openai"``,
    ``AnthropicGateway`` for ``"anthropic"`` (needs the optional ``anthropic`` SDK:
    ``pip install 'browy-host[anthropic]'``). Raises :class:`ModelError` otherwise."""
    if settings.provider == "openai":
        return ModelGateway(settings)
    if settings.provider == "anthropic":
        try:
            # Lazy: the anthropic SDK is optional (pyproject's [anthropic] extra).
            from actors.model.anthropic_gateway import AnthropicGateway
        except ImportError as exc:
            log.error("the anthropic provider needs the anthropic SDK: %r", exc)
            raise ModelError(
                "MODEL_ERROR",
                "The Anthropic provider needs the 'anthropic' package. How to fix: install it "
                "(pip install 'browy-host[anthropic]') and restart Browy.",
            ) from None
        return AnthropicGateway(settings)
    if settings.provider == "copilot":
        from actors.model.copilot_gateway import CopilotGateway

        return CopilotGateway(settings)
    raise ModelError(
        "MODEL_ERROR",
        f"Unknown model provider '{settings.provider}' in [model] provider: "
        "use 'openai', 'anthropic' or 'copilot'.",
    )
