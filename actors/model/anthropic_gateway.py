"""The Anthropic gateway: :class:`~actors.model.openai_gateway.ModelGateway`'s interface over
Anthropic's Messages API.

Reached through the optional ``anthropic`` SDK (``pip install 'browy-host[anthropic]'``) with its
own retries off (``max_retries=0``): the retry, timeout and error rules are the ones of
:mod:`actors.model.openai_gateway` (:func:`~actors.model.retry.run_attempts`,
:func:`~actors.model.retry.status_failure`). ``ModelSettings.base_url`` is the API root
(``https://api.anthropic.com``); a trailing ``/v1`` is dropped, as the SDK adds it.

Each request converts the stored conversation (OpenAI chat format) to Anthropic's
(:mod:`actors.model.anthropic_request`); the streamed answer is folded back into OpenAI format by
:mod:`actors.model.anthropic_stream`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anthropic

from actors.model.anthropic_request import convert_messages, convert_tools
from actors.model.anthropic_stream import ReplyAssembler, event_dict
from actors.model.retry import AttemptFailed, provider_detail, run_attempts, status_failure
from actors.model.types import (
    AuthState,
    ModelError,
    ModelInfo,
    ModelReply,
    ModelSettings,
    TextSink,
)
from messages.errors import ErrorCode

__all__ = ["AnthropicGateway"]

log = logging.getLogger(__name__)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's errors: a stream cut mid-body raises them unwrapped (the SDK uses
    ``httpx`` or, in its newer versions, ``httpx2``)."""
    found: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError):
            found.append(importlib.import_module(name).HTTPError)
    return tuple(found)


_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    anthropic.APIConnectionError,
    *_transport_errors(),
)
_LIST_ERRORS: tuple[type[BaseException], ...] = (
    anthropic.APIError,
    TimeoutError,
    *_CONNECTION_ERRORS,
)


class AnthropicGateway:
    """The Anthropic client, with :class:`~actors.model.openai_gateway.ModelGateway`'s interface."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self._client = anthropic.AsyncAnthropic(
            base_url=_api_root(settings.base_url),
            # Never let the SDK fall back to ANTHROPIC_API_KEY or a profile: keys come from config.
            api_key=settings.api_key or "no-key-configured",
            max_retries=0,
            timeout=anthropic.Timeout(
                connect=settings.connect_timeout,
                read=settings.stream_idle_timeout + 1.0,
                write=settings.connect_timeout,
                pool=settings.connect_timeout,
            ),
        )

    async def aclose(self) -> None:
        """Close the HTTP client (idempotent)."""
        await self._client.close()

    async def __aenter__(self) -> AnthropicGateway:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def stream_turn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink,
    ) -> ModelReply:
        """Call the model once, streaming text to *on_text*; return the whole answer.

        Raises :class:`ModelError`. Cancelling the calling task closes the HTTP stream before
        CancelledError propagates.
        """
        system, converted = convert_messages(messages)
        request: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": self.settings.max_output_tokens,
            "messages": converted,
            "stream": True,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = convert_tools(tools)
        if self.settings.extra_body:
            request["extra_body"] = dict(self.settings.extra_body)
        return await run_attempts(self.settings, lambda sink: self._attempt(request, sink), on_text)

    async def _attempt(
        self, request: dict[str, Any], sink: Callable[[str], Awaitable[None]]
    ) -> ModelReply:
        idle = self.settings.stream_idle_timeout
        assembler = ReplyAssembler()
        try:
            stream = cast(
                "anthropic.AsyncStream[Any]", await self._client.messages.create(**request)
            )
            async with stream:  # closes the HTTP stream on every exit, cancellation included
                iterator = aiter(stream)
                while True:
                    try:
                        async with asyncio.timeout(idle):
                            event = await anext(iterator)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        error = ModelError(
                            "MODEL_ERROR",
                            f"The model stopped responding (no data for {idle:g} s).",
                            retryable=True,
                        )
                        raise AttemptFailed(error, retry=False) from None
                    piece = assembler.feed(event_dict(event))
                    if piece:
                        await sink(piece)
        except anthropic.APIStatusError as exc:
            raise self._status_failure(exc) from None
        except anthropic.APITimeoutError as exc:
            log.info("model call timed out: %r", exc)
            error = ModelError(
                "MODEL_ERROR", "The model provider did not answer in time.", retryable=True
            )
            raise AttemptFailed(error, retry=True) from None
        except _CONNECTION_ERRORS as exc:
            log.info("model connection failed: %r (cause %r)", exc, exc.__cause__)
            error = ModelError(
                "MODEL_ERROR",
                f"Lost the connection to the model provider at {self.settings.base_url}.",
                retryable=True,
            )
            raise AttemptFailed(error, retry=True) from None
        except anthropic.APIError as exc:
            log.info("model stream failed: %r body=%r", exc, exc.body)
            error = ModelError(
                "MODEL_ERROR", "The model provider reported an error mid-answer.", retryable=True
            )
            raise AttemptFailed(error, retry=True) from None
        if not assembler.stopped or assembler.stop_reason is None:
            error = ModelError(
                "MODEL_ERROR", "The model's answer was cut off before its end.", retryable=True
            )
            raise AttemptFailed(error, retry=True)
        return assembler.reply()

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
        headers = {k.lower(): v for k, v in exc.response.headers.items()}
        return status_failure(self.settings, exc.status_code, headers, exc.body)

    async def list_models(self) -> list[ModelInfo]:
        """The provider's models (Anthropic lists chat models only)."""
        try:
            async with asyncio.timeout(
                self.settings.connect_timeout + self.settings.stream_idle_timeout
            ):
                listed = [m async for m in self._client.models.list()]
        except anthropic.APIStatusError as exc:
            raise self._status_failure(exc).error from None
        except _LIST_ERRORS as exc:
            log.info("models.list failed: %r", exc)
            raise ModelError(
                "MODEL_ERROR",
                f"Could not list the models of the provider at {self.settings.base_url}.",
                retryable=True,
            ) from None
        return [
            ModelInfo(id=m.id, name=str(getattr(m, "display_name", "") or m.id), vendor="anthropic")
            for m in listed
        ]

    async def check_auth(self) -> AuthState:
        """Ask the provider (``models.list``) whether the key works."""
        try:
            await self.list_models()
        except ModelError as exc:
            if exc.code is ErrorCode.AUTH:
                return AuthState(state="unauth", detail=exc.message)
            return AuthState(state="unknown", detail=exc.message)
        return AuthState(state="ready")


def _api_root(base_url: str) -> str:
    """The SDK wants the API root (it adds ``/v1/...``): drop a trailing ``/v1``."""
    return base_url.rstrip("/").removesuffix("/v1")
