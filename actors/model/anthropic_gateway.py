"""The Anthropic gateway: :class:`AnthropicGateway`, the interface of every
:class:`~actors.model.sdk_gateway.SdkGateway` over Anthropic's Messages API.

Reached through the optional ``anthropic`` SDK (``pip install 'browy-host[anthropic]'``), with the
timeout and error rules of :class:`~actors.model.sdk_gateway.SdkGateway` and the retry rules of
:mod:`actors.model.retry`, as for an OpenAI-compatible server. ``ModelSettings.base_url`` is the
API root (``https://api.anthropic.com``); a trailing ``/v1`` is dropped, as the SDK adds it.

Each request converts the stored conversation (OpenAI chat format) to Anthropic's
(:mod:`actors.model.anthropic_request`); the streamed answer is folded back into OpenAI format by
:mod:`actors.model.anthropic_stream`. Anthropic reports an error inside a 200 stream as an
``event: error``, which the SDK raises as a status error with the 200 status: it is read as an
error mid-answer, retried like a broken stream.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from typing import Any, cast

import anthropic

from actors.model.anthropic_request import messages_request
from actors.model.anthropic_stream import ReplyAssembler
from actors.model.retry import AttemptFailed, provider_detail, status_failure
from actors.model.sdk_gateway import SdkErrors, SdkGateway, client_options
from actors.model.types import ModelError, ModelInfo, ModelSettings

__all__ = ["AnthropicGateway"]

log = logging.getLogger(__name__)


def _transport_errors() -> tuple[type[Exception], ...]:
    """The HTTP library's errors: a stream cut mid-body raises them unwrapped (the SDK uses
    ``httpx`` or, in its newer versions, ``httpx2``)."""
    found: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError):
            found.append(importlib.import_module(name).HTTPError)
    return tuple(found)


_ERRORS = SdkErrors(
    status=anthropic.APIStatusError,
    timeout=anthropic.APITimeoutError,
    connection=(anthropic.APIConnectionError, *_transport_errors()),
    other=anthropic.APIError,
)


class AnthropicGateway(SdkGateway[anthropic.AsyncAnthropic, object, anthropic.APIStatusError]):
    """The Anthropic client. One instance per provider setting; ``aclose()`` when done."""

    def __init__(self, settings: ModelSettings) -> None:
        client = anthropic.AsyncAnthropic(
            base_url=_api_root(settings.base_url), **client_options(settings, anthropic.Timeout)
        )
        super().__init__(settings, client, _ERRORS)

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return messages_request(self.settings, messages, tools)

    async def _open_stream(self, request: dict[str, Any]) -> anthropic.AsyncStream[Any]:
        return cast("anthropic.AsyncStream[Any]", await self._client.messages.create(**request))

    def _assembler(self) -> ReplyAssembler:
        return ReplyAssembler()

    def _status_failure(self, exc: anthropic.APIStatusError) -> AttemptFailed:
        if exc.status_code < 400:  # an ``event: error`` inside a 200 stream (e.g. overloaded)
            detail = provider_detail(exc.body)
            log.info("model stream reported an error: %s", detail)
            error = ModelError(
                "MODEL_ERROR",
                "The model provider reported an error mid-answer"
                + (f": {detail}" if detail else "."),
                retryable=True,
            )
            return AttemptFailed(error, retry=True)
        return status_failure(self.settings, exc.status_code, exc.response.headers, exc.body)

    async def _models(self) -> list[ModelInfo]:
        """The provider's models (Anthropic lists chat models only)."""
        listed = [m async for m in self._client.models.list()]
        return [
            ModelInfo(id=m.id, name=str(getattr(m, "display_name", "") or m.id), vendor="anthropic")
            for m in listed
        ]


def _api_root(base_url: str) -> str:
    """The SDK wants the API root (it adds ``/v1/...``): drop a trailing ``/v1``."""
    return base_url.rstrip("/").removesuffix("/v1")
