"""The model gateway: one streamed model call per :meth:`ModelGateway.stream_turn`.

Any OpenAI-compatible server is reached through the ``openai`` SDK (its own retries are off:
``max_retries=0``, so the rules below are ours). The daemon wraps this module; it is not an actor.
Anthropic's Messages API is reached by :class:`actors.model.anthropic_gateway.AnthropicGateway`
(same interface, same rules, the optional ``anthropic`` SDK);
:func:`actors.model.providers.make_gateway` picks by ``ModelSettings.provider``, and both satisfy
the :class:`~actors.model.types.ChatModel` protocol.

Errors (``ModelError.code``)::

    AUTH         HTTP 401/403: the provider refused the key; ``message`` says how to fix it
    MODEL_ERROR  anything else: HTTP 400/404/422, 408/409/429/5xx once retries are spent,
                 connection failures, a stream cut off or silent for ``stream_idle_timeout``
    (cancellation of the calling task is not turned into an error: CancelledError propagates,
    after the HTTP stream has been closed)

Retries (tenacity): bounded attempts, exponential backoff with jitter; never on 400/401/403/404/
422; honour ``Retry-After`` / ``retry-after-ms`` (seconds or an HTTP date, capped at
``retry_after_cap``); and only while no text has reached ``on_text`` — a retry never repeats text
the user has seen. A stream that goes silent is not retried either: the user already waited
``stream_idle_timeout`` for it.

Provider-opaque fields (reasoning text, signatures, ``extra_content`` ...) that a provider puts on
the streamed assistant delta or on a tool call are collected and put back on
:attr:`ModelReply.assistant_message`, so the next request echoes them exactly. Merging streamed
pieces: strings of the fields in :data:`~actors.model.openai_stream.FRAGMENT_FIELDS` and lists are
concatenated; any other value replaces the previous one (``null`` is ignored).

``ModelError.message`` is safe to show; internal exception text goes to the log only.

Layout: the settings, reply types and :class:`~actors.model.types.ModelError` are in
:mod:`actors.model.types`, the stream accumulation in :mod:`actors.model.openai_stream`, the retry
and HTTP-error rules shared with the Anthropic gateway in :mod:`actors.model.retry`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

import openai

from actors.model.openai_stream import ReplyAssembler
from actors.model.retry import AttemptFailed, run_attempts, status_failure
from actors.model.types import (
    AuthState,
    ModelError,
    ModelInfo,
    ModelReply,
    ModelSettings,
    TextSink,
    is_chat_model,
)
from messages.errors import ErrorCode

__all__ = ["ModelGateway"]

log = logging.getLogger(__name__)


class ModelGateway:
    """The LLM client. One instance per provider setting; ``aclose()`` when done."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        # The SDK's own retries are off (max_retries=0): ours know about streamed text.
        # Its read timeout is a backstop; the idle timeout below fires first.
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            # Never let the SDK fall back to OPENAI_API_KEY: the daemon's keys come from config.
            api_key=settings.api_key or "no-key-configured",
            max_retries=0,
            timeout=openai.Timeout(
                connect=settings.connect_timeout,
                read=settings.stream_idle_timeout + 1.0,
                write=settings.connect_timeout,
                pool=settings.connect_timeout,
            ),
        )

    async def aclose(self) -> None:
        """Close the HTTP client (idempotent)."""
        await self._client.close()

    async def __aenter__(self) -> ModelGateway:
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
        return await run_attempts(
            self.settings, lambda sink: self._attempt(messages, tools, sink), on_text
        )

    async def _attempt(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        sink: Callable[[str], Awaitable[None]],
    ) -> ModelReply:
        idle = self.settings.stream_idle_timeout
        assembler = ReplyAssembler()
        try:
            stream = await self._client.chat.completions.create(
                model=self.settings.model,
                messages=cast(Any, messages),
                tools=cast(Any, tools) if tools else openai.omit,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=dict(self.settings.extra_body) or None,
            )
            async with stream:  # closes the HTTP stream on every exit, cancellation included
                iterator = aiter(stream)
                while True:
                    try:
                        async with asyncio.timeout(idle):
                            chunk = await anext(iterator)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        error = ModelError(
                            "MODEL_ERROR",
                            f"The model stopped responding (no data for {idle:g} s).",
                            retryable=True,
                        )
                        raise AttemptFailed(error, retry=False) from None
                    piece = assembler.feed(chunk)
                    if piece:
                        await sink(piece)
        except openai.APIStatusError as exc:
            raise _openai_failure(self.settings, exc) from None
        except openai.APITimeoutError as exc:
            log.info("model call timed out: %r", exc)
            error = ModelError(
                "MODEL_ERROR", "The model provider did not answer in time.", retryable=True
            )
            raise AttemptFailed(error, retry=True) from None
        except openai.APIConnectionError as exc:
            log.info("model connection failed: %r (cause %r)", exc, exc.__cause__)
            error = ModelError(
                "MODEL_ERROR",
                f"Lost the connection to the model provider at {self.settings.base_url}.",
                retryable=True,
            )
            raise AttemptFailed(error, retry=True) from None
        except openai.APIError as exc:  # an error event inside a 200 stream
            log.info("model stream reported an error: %r body=%r", exc, exc.body)
            error = ModelError(
                "MODEL_ERROR", "The model provider reported an error mid-answer.", retryable=True
            )
            raise AttemptFailed(error, retry=True) from None
        if assembler.finish_reason is None:
            error = ModelError(
                "MODEL_ERROR", "The model's answer was cut off before its end.", retryable=True
            )
            raise AttemptFailed(error, retry=True)
        return assembler.reply()

    async def list_models(self) -> list[ModelInfo]:
        """The provider's chat models (embedding, audio and image models are left out)."""
        try:
            async with asyncio.timeout(
                self.settings.connect_timeout + self.settings.stream_idle_timeout
            ):
                listed = [m async for m in self._client.models.list()]
        except openai.APIStatusError as exc:
            raise _openai_failure(self.settings, exc).error from None
        except (openai.APIError, TimeoutError) as exc:
            log.info("models.list failed: %r", exc)
            raise ModelError(
                "MODEL_ERROR",
                f"Could not list the models of the provider at {self.settings.base_url}.",
                retryable=True,
            ) from None
        return [
            ModelInfo(id=m.id, name=m.id, vendor=str(getattr(m, "owned_by", "") or ""))
            for m in listed
            if is_chat_model(m.id)
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


def _openai_failure(settings: ModelSettings, exc: openai.APIStatusError) -> AttemptFailed:
    headers = {k.lower(): v for k, v in exc.response.headers.items()}
    return status_failure(settings, exc.status_code, headers, exc.body)
