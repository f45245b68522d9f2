"""The OpenAI-compatible gateway: :class:`ModelGateway`, one streamed model call per
:meth:`~actors.model.sdk_gateway.SdkGateway.stream_turn`.

Any OpenAI-compatible server is reached through the ``openai`` SDK, as
:class:`~actors.model.sdk_gateway.SdkGateway` says (the errors it raises are drawn there; the
retry rules are in :mod:`actors.model.retry`). The request is the conversation as it is (the store
keeps OpenAI chat format), with ``stream_options.include_usage``; ``max_output_tokens`` is not
sent. The streamed chunks are folded by :mod:`actors.model.openai_stream`, which also keeps the
provider-opaque fields the next request must echo. ``models.list`` leaves out the models that do not
chat (:func:`~actors.model.types.is_chat_model`).

Anthropic's Messages API is reached by :class:`actors.model.anthropic_gateway.AnthropicGateway`
(same interface, same rules); :func:`actors.model.providers.make_gateway` picks by
``ModelSettings.provider``.
"""

from __future__ import annotations

from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionChunk

from actors.model.openai_stream import ReplyAssembler
from actors.model.retry import AttemptFailed, status_failure
from actors.model.sdk_gateway import SdkErrors, SdkGateway, client_options
from actors.model.types import ModelInfo, ModelSettings, is_chat_model

__all__ = ["ModelGateway"]

_ERRORS = SdkErrors(
    status=openai.APIStatusError,
    timeout=openai.APITimeoutError,
    connection=(openai.APIConnectionError,),
    other=openai.APIError,  # e.g. an error event inside a 200 stream
)


class ModelGateway(SdkGateway[openai.AsyncOpenAI, ChatCompletionChunk, openai.APIStatusError]):
    """The LLM client for an OpenAI-compatible server. One instance per provider setting;
    ``aclose()`` when done."""

    def __init__(self, settings: ModelSettings) -> None:
        client = openai.AsyncOpenAI(
            base_url=settings.base_url, **client_options(settings, openai.Timeout)
        )
        super().__init__(settings, client, _ERRORS)

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "model": self.settings.model,
            "messages": messages,
            "tools": tools if tools else openai.omit,
            "stream": True,
            "stream_options": {"include_usage": True},
            "extra_body": dict(self.settings.extra_body) or None,
        }

    async def _open_stream(
        self, request: dict[str, Any]
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        return cast(
            "openai.AsyncStream[ChatCompletionChunk]",
            await self._client.chat.completions.create(**request),
        )

    def _assembler(self) -> ReplyAssembler:
        return ReplyAssembler()

    def _status_failure(self, exc: openai.APIStatusError) -> AttemptFailed:
        return status_failure(self.settings, exc.status_code, exc.response.headers, exc.body)

    async def _models(self) -> list[ModelInfo]:
        """The provider's chat models (embedding, audio and image models are left out)."""
        listed = [m async for m in self._client.models.list()]
        return [
            ModelInfo(id=m.id, name=m.id, vendor=str(getattr(m, "owned_by", "") or ""))
            for m in listed
            if is_chat_model(m.id)
        ]
