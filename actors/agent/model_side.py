"""The daemon's model provider: its gateway, what ``auth.status`` says, the model list.

One instance per daemon, owned by the agent hub. The gateway is built from config
(:func:`actors.model.providers.make_gateway`: OpenAI-compatible or Anthropic); a provider that
cannot be built (no model configured, an SDK missing) is not an error of the daemon: it is reported
in ``auth.status`` with how to fix it, and a turn then ends with ``AUTH`` (protocol.md section 3b:
``sdk.ready`` stays ok, the provider's state goes in ``auth.status`` only).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from actors.model.copilot_cli import CodeSink
from actors.model.providers import make_gateway
from actors.model.types import ChatModel, ModelError, ModelSettings
from messages.wire_outbound import AuthStatus, ModelInfo

__all__ = ["NO_MODEL", "ModelSide", "SignsIn"]

log = logging.getLogger(__name__)

NO_MODEL = (
    "No model is configured. Set BROWY_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY in "
    "BROWY_HOME/config.toml ([model] model, base_url, api_key) — the daemon inherits the "
    "browser's environment, not your shell's — or try `browy demo`."
)


@runtime_checkable
class SignsIn(Protocol):
    """A gateway with a sign-in of its own (GitHub Copilot's device flow)."""

    async def sign_in(self, on_code: CodeSink) -> bool: ...


class ModelSide:
    def __init__(
        self,
        settings: ModelSettings | None,
        *,
        own: Callable[[Coroutine[Any, Any, Any], str], None],
    ) -> None:
        self.settings = settings
        self._own = own  # runs a coroutine as a task the hub owns (awaited on stop)
        self._gateway: ChatModel | None = None
        self._problem: str | None = None
        self.model_id = settings.model if settings else ""
        self.auth = (
            AuthStatus(state="unknown", detail="checking the model provider")
            if settings
            else AuthStatus(state="unauth", detail=NO_MODEL)
        )

    def open(self) -> None:
        """Build the gateway (at the daemon's start)."""
        if self.settings is not None:
            self._gateway = self._build(self.settings)

    def _build(self, settings: ModelSettings) -> ChatModel | None:
        """The provider's gateway, or None with the reason kept; never raises."""
        try:
            gateway = make_gateway(settings)
        except ModelError as exc:
            log.error("model provider: %s", exc.message)
            self._problem = exc.message
            return None
        self._problem = None
        return gateway

    def model(self) -> ChatModel:
        """The gateway for a turn; ``AUTH`` with how to fix it when there is none."""
        if self._gateway is None:
            raise ModelError("AUTH", self._problem or NO_MODEL)
        return self._gateway

    def signs_in(self) -> SignsIn | None:
        """The gateway, when it has a sign-in of its own."""
        return self._gateway if isinstance(self._gateway, SignsIn) else None

    async def refresh_auth(self) -> AuthStatus:
        if self._gateway is None:
            self.auth = AuthStatus(state="unauth", detail=self._problem or NO_MODEL)
        else:
            state = await self._gateway.check_auth()
            self.auth = AuthStatus(state=state.state, detail=state.detail)
        return self.auth

    def known(self) -> list[ModelInfo]:
        """The current model, for the initial push (never waits for the provider)."""
        return [ModelInfo(id=self.model_id, name=self.model_id)] if self.model_id else []

    async def list_models(self) -> list[ModelInfo]:
        if self._gateway is None:
            return []
        try:
            models = await self._gateway.list_models()
        except ModelError as exc:
            log.warning("models.list failed: %s", exc.message)
            return self.known()
        return [ModelInfo(id=m.id, name=m.name, vendor=m.vendor or None) for m in models]

    def _swap(self, settings: ModelSettings | None) -> None:
        previous = self._gateway
        self._gateway = self._build(settings) if settings is not None else None
        if previous is not None:
            self._own(previous.aclose(), "close-old-gateway")

    def set_model(self, model_id: str) -> None:
        """``models.set``: new turns use *model_id* (same provider and key)."""
        if self.settings is None or not model_id:
            return
        self.model_id = model_id
        self._swap(replace(self.settings, model=model_id))

    def reconfigure(self, settings: ModelSettings | None) -> bool:
        """The config changed; returns True when the provider settings did."""
        if settings == self.settings:
            return False
        self.settings = settings
        self.model_id = settings.model if settings else ""
        self._swap(settings)
        if settings is None:
            self._problem = None
        return True

    async def aclose(self) -> None:
        if self._gateway is not None:
            await self._gateway.aclose()
