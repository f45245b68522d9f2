"""What every model gateway does the same way, whatever its provider's SDK: :class:`SdkGateway`.

A gateway reaches its provider through the provider's Python SDK (``openai``, ``anthropic``), built
with :func:`client_options`: the SDK's own retries off (``max_retries=0``: ours, in
:mod:`actors.model.retry`, know about streamed text) and no key read from the environment.
:class:`SdkGateway` owns the client's life (``aclose``), runs one streamed call per
:meth:`~SdkGateway.stream_turn` under the retry rules, folds the stream's events into a
:class:`~actors.model.types.ModelReply` while watching for silence, says what each failure of the
SDK means, and answers ``models.list`` and ``auth.status``. A provider's gateway adds only its
specifics: its client, its request, its assembler (:class:`StreamAssembler`), which of its SDK's
exceptions mean what (:class:`SdkErrors`), and its model list. The daemon wraps a gateway; it is
not an actor.

Errors (``ModelError.code``)::

    AUTH         HTTP 401/403: the provider refused the key; ``message`` says how to fix it
    MODEL_ERROR  anything else: HTTP 400/404/422, 408/409/429/5xx once retries are spent,
                 connection failures, a stream cut off or silent for ``stream_idle_timeout``
    (cancellation of the calling task is not turned into an error: CancelledError propagates,
    after the HTTP stream has been closed)

``ModelError.message`` is safe to show; internal exception text goes to the log only.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from actors.model.retry import AttemptFailed, run_attempts
from actors.model.types import (
    AuthState,
    ModelError,
    ModelInfo,
    ModelReply,
    ModelSettings,
    TextSink,
)
from messages.errors import ErrorCode

__all__ = [
    "EventStream",
    "SdkClient",
    "SdkErrors",
    "SdkGateway",
    "StreamAssembler",
    "client_options",
]

log = logging.getLogger(__name__)

EventT = TypeVar("EventT")
EventT_co = TypeVar("EventT_co", covariant=True)
EventT_contra = TypeVar("EventT_contra", contravariant=True)
StatusErrorT = TypeVar("StatusErrorT", bound=Exception)


class SdkClient(Protocol):
    """A provider SDK's async client, as far as the gateway's life goes."""

    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=SdkClient)


class EventStream(Protocol[EventT_co]):
    """An SDK's streamed response: its events, and its HTTP stream closed on leaving
    ``async with``."""

    async def __aenter__(self) -> object: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> object: ...

    def __aiter__(self) -> AsyncIterator[EventT_co]: ...


class StreamAssembler(Protocol[EventT_contra]):
    """Builds a :class:`ModelReply` from a stream's events, one at a time (pure, no I/O)."""

    def feed(self, event: EventT_contra, /) -> str:
        """Take one event; return the text it adds (may be empty)."""
        ...

    @property
    def complete(self) -> bool:
        """Whether the stream said the answer is whole (not cut off before its end)."""
        ...

    def reply(self) -> ModelReply: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SdkErrors(Generic[StatusErrorT]):
    """Which exceptions of an SDK (and of its HTTP library) mean what; tried in this order."""

    #: The provider answered an HTTP error status (see ``SdkGateway._status_failure``).
    status: type[StatusErrorT]
    #: The provider did not answer in time.
    timeout: type[Exception]
    #: The connection could not be made, or broke.
    connection: tuple[type[Exception], ...]
    #: Any other error of the SDK (e.g. an error the provider reports inside a 200 stream).
    other: type[Exception]


def client_options(settings: ModelSettings, timeout: Callable[..., object]) -> dict[str, Any]:
    """The options an SDK client is built with, but its ``base_url``. *timeout*: the SDK's
    ``Timeout`` class."""
    return {
        # Never let the SDK fall back to its environment variable (OPENAI_API_KEY,
        # ANTHROPIC_API_KEY) or a profile: the daemon's keys come from config.
        "api_key": settings.api_key or "no-key-configured",
        # The SDK's own retries are off: ours know about streamed text.
        "max_retries": 0,
        # The read timeout is a backstop; the stream idle timeout fires first.
        "timeout": timeout(
            connect=settings.connect_timeout,
            read=settings.stream_idle_timeout + 1.0,
            write=settings.connect_timeout,
            pool=settings.connect_timeout,
        ),
    }


class SdkGateway(ABC, Generic[ClientT, EventT, StatusErrorT]):
    """A model gateway over a provider's SDK client. One instance per provider setting;
    ``aclose()`` when done. Satisfies :class:`~actors.model.types.ChatModel`."""

    def __init__(
        self, settings: ModelSettings, client: ClientT, errors: SdkErrors[StatusErrorT]
    ) -> None:
        self.settings = settings
        self._client = client
        self._errors = errors

    async def aclose(self) -> None:
        """Close the HTTP client (idempotent)."""
        await self._client.close()

    async def __aenter__(self) -> Self:
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
        request = self._request(messages, tools)
        return await run_attempts(self.settings, lambda sink: self._attempt(request, sink), on_text)

    async def _attempt(
        self, request: dict[str, Any], sink: Callable[[str], Awaitable[None]]
    ) -> ModelReply:
        idle = self.settings.stream_idle_timeout
        errors = self._errors
        assembler = self._assembler()
        try:
            stream = await self._open_stream(request)
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
                    piece = assembler.feed(event)
                    if piece:
                        await sink(piece)
        except errors.status as exc:
            raise self._status_failure(exc) from None
        except errors.timeout as exc:
            log.info("model call timed out: %r", exc)
            error = ModelError(
                "MODEL_ERROR", "The model provider did not answer in time.", retryable=True
            )
            raise AttemptFailed(error, retry=True) from None
        except errors.connection as exc:
            log.info("model connection failed: %r (cause %r)", exc, exc.__cause__)
            error = ModelError(
                "MODEL_ERROR",
                f"Lost the connection to the model provider at {self.settings.base_url}.",
                retryable=True,
            )
            raise AttemptFailed(error, retry=True) from None
        except errors.other as exc:
            body = getattr(exc, "body", None)
            log.info("model stream reported an error: %r body=%r", exc, body)
            error = ModelError(
                "MODEL_ERROR", "The model provider reported an error mid-answer.", retryable=True
            )
            raise AttemptFailed(error, retry=True) from None
        if not assembler.complete:
            error = ModelError(
                "MODEL_ERROR", "The model's answer was cut off before its end.", retryable=True
            )
            raise AttemptFailed(error, retry=True)
        return assembler.reply()

    async def list_models(self) -> list[ModelInfo]:
        """The provider's chat models."""
        errors = self._errors
        # Any error of the SDK or of its connection, or our own deadline.
        failed: tuple[type[Exception], ...] = (
            errors.other,
            errors.timeout,
            *errors.connection,
            TimeoutError,
        )
        try:
            async with asyncio.timeout(
                self.settings.connect_timeout + self.settings.stream_idle_timeout
            ):
                return await self._models()
        except errors.status as exc:
            raise self._status_failure(exc).error from None
        except failed as exc:
            log.info("models.list failed: %r", exc)
            raise ModelError(
                "MODEL_ERROR",
                f"Could not list the models of the provider at {self.settings.base_url}.",
                retryable=True,
            ) from None

    async def check_auth(self) -> AuthState:
        """Ask the provider (``models.list``) whether the key works."""
        try:
            await self.list_models()
        except ModelError as exc:
            if exc.code is ErrorCode.AUTH:
                return AuthState(state="unauth", detail=exc.message)
            return AuthState(state="unknown", detail=exc.message)
        return AuthState(state="ready")

    # -- the provider's specifics -------------------------------------------------------------

    @abstractmethod
    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The SDK call's arguments for *messages* (OpenAI chat format) and *tools*; built once
        per :meth:`stream_turn`, sent by every attempt."""

    @abstractmethod
    async def _open_stream(self, request: dict[str, Any]) -> EventStream[EventT]:
        """Send *request*; the streamed answer."""

    @abstractmethod
    def _assembler(self) -> StreamAssembler[EventT]:
        """A fresh assembler for one attempt's stream."""

    @abstractmethod
    def _status_failure(self, exc: StatusErrorT) -> AttemptFailed:
        """What the SDK's HTTP-status error means (:func:`~actors.model.retry.status_failure`)."""

    @abstractmethod
    async def _models(self) -> list[ModelInfo]:
        """The provider's model list (raising the SDK's errors)."""
