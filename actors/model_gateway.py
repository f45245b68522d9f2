"""The model gateway: one streamed model call per :meth:`ModelGateway.stream_turn`.

Any OpenAI-compatible server is reached through the ``openai`` SDK (its own retries are off:
``max_retries=0``, so the rules below are ours). The daemon wraps this module; it is not an actor.
Anthropic's Messages API is reached by :class:`actors.model_anthropic.AnthropicGateway` (same
interface, same rules, the optional ``anthropic`` SDK); :func:`make_gateway` picks by
``ModelSettings.provider``, and both satisfy the :class:`ChatModel` protocol.

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
pieces: strings of the fields in :data:`FRAGMENT_FIELDS` and lists are concatenated; any other
value replaces the previous one (``null`` is ignored).

``ModelError.message`` is safe to show; internal exception text goes to the log only.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import inspect
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

import openai
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_base

from messages.errors import BrowyError, ErrorCode

__all__ = [
    "FRAGMENT_FIELDS",
    "NEVER_RETRY",
    "AttemptFailed",
    "AuthState",
    "ChatModel",
    "ModelError",
    "ModelGateway",
    "ModelInfo",
    "ModelReply",
    "ModelSettings",
    "TextSink",
    "ToolCall",
    "Usage",
    "is_chat_model",
    "make_gateway",
    "parse_arguments",
    "parse_retry_after",
    "provider_detail",
    "run_attempts",
    "status_failure",
]

log = logging.getLogger(__name__)

#: Provider fields streamed as text fragments (concatenated when merging deltas).
FRAGMENT_FIELDS = frozenset({"reasoning_content", "reasoning", "thinking"})

#: Called with each piece of streamed text, in order; may be sync or async.
TextSink = Callable[[str], Awaitable[None] | None]

ModelErrorCode = Literal["AUTH", "MODEL_ERROR", "CANCELLED"]

#: Statuses a retry cannot fix (the request or the credentials are wrong).
NEVER_RETRY = frozenset({400, 401, 403, 404, 422})
#: The environment variable config.py reads the key from, per provider.
_KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# Ids of models that do not chat (the provider's models.list mixes them in).
_NOT_CHAT = (
    "embed", "whisper", "tts", "dall-e", "davinci-002", "babbage", "moderation", "transcribe",
    "rerank", "gpt-image", "sora",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """How to reach the provider, and the time limits. Config loading lives elsewhere."""

    base_url: str
    api_key: str | None
    model: str
    #: ``"openai"`` (any OpenAI-compatible server) or ``"anthropic"`` (the Messages API).
    provider: str = "openai"
    #: The answer's token limit. Anthropic requires one; the OpenAI gateway does not send it.
    max_output_tokens: int = 4096
    connect_timeout: float = 10.0
    #: No chunk for this long (waiting for the answer, or inside the stream) ends the call.
    stream_idle_timeout: float = 60.0
    max_attempts: int = 3
    retry_initial_backoff: float = 0.5
    retry_max_backoff: float = 8.0
    #: A Retry-After longer than this is waited for this long only.
    retry_after_cap: float = 30.0
    #: Extra request fields sent as-is (e.g. ``{"temperature": 0}``); see ``extra_body`` in the SDK.
    extra_body: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call of the model.

    ``arguments`` is the parsed JSON object, or ``None`` when ``arguments_json`` (kept verbatim)
    is not a JSON object; ``arguments_error`` then says why, for the turn loop to tell the model.
    ``extra`` holds the provider's own fields on the call, echoed back in ``assistant_message``.
    """

    id: str
    name: str
    arguments_json: str
    arguments: dict[str, Any] | None
    arguments_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelReply:
    """A finished model answer. Append ``assistant_message`` to the conversation as it is."""

    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    finish_reason: str | None
    assistant_message: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    id: str
    name: str
    vendor: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthState:
    """The provider's state for ``auth.status``: ``detail`` says how to fix it when not ready."""

    state: Literal["ready", "unauth", "unknown"]
    detail: str | None = None


class ModelError(BrowyError):
    """A model call failed. ``message`` is readable and safe to send; ``retryable`` tells the
    caller whether trying the turn again later may help (the gateway's own retries are spent)."""

    def __init__(self, code: ModelErrorCode, message: str, retryable: bool = False) -> None:
        super().__init__(message, code=ErrorCode(code))
        self.retryable = retryable

    @property
    def wire_message(self) -> str:
        return self.message


class AttemptFailed(Exception):
    """One attempt failed; ``retry`` says whether another attempt may follow."""

    def __init__(self, error: ModelError, *, retry: bool, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry = retry
        self.retry_after = retry_after


class _Backoff(wait_base):
    """Exponential backoff with jitter, unless the provider said how long (capped)."""

    def __init__(self, settings: ModelSettings) -> None:
        self._initial = settings.retry_initial_backoff
        self._max = settings.retry_max_backoff
        self._cap = settings.retry_after_cap

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        failure = outcome.exception() if outcome is not None else None
        if isinstance(failure, AttemptFailed) and failure.retry_after is not None:
            return min(failure.retry_after, self._cap)
        # Written out rather than tenacity's wait_exponential_jitter, whose parameters changed
        # across the versions pyproject allows. "Full" jitter of up to one initial step.
        step = self._initial * 2.0 ** (retry_state.attempt_number - 1)
        return float(min(step + random.uniform(0, self._initial), self._max))


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(raw_ms) / 1000)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def is_chat_model(model_id: str) -> bool:
    """Whether a ``models.list`` id names a chat model (embedding, audio, image ids are not)."""
    lowered = model_id.lower()
    return not any(word in lowered for word in _NOT_CHAT)


def _merge(into: dict[str, Any], extra: Mapping[str, Any] | None) -> None:
    for key, value in (extra or {}).items():
        if value is None:
            continue
        old = into.get(key)
        fragment = isinstance(old, str) and isinstance(value, str) and key in FRAGMENT_FIELDS
        if fragment or (isinstance(old, list) and isinstance(value, list)):
            into[key] = old + value
        else:
            into[key] = value


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class _Assembler:
    """Builds a :class:`ModelReply` from streamed chunks (pure, no I/O)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.extra: dict[str, Any] = {}
        self.usage = Usage()
        self.finish_reason: str | None = None

    def feed(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; return the text it adds (may be empty)."""
        if chunk.usage is not None:
            self.usage = Usage(
                input_tokens=chunk.usage.prompt_tokens,
                output_tokens=chunk.usage.completion_tokens,
                total_tokens=chunk.usage.total_tokens,
            )
        added = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            added += (delta.content or "") + (delta.refusal or "")
            _merge(self.extra, delta.model_extra)
            for piece in delta.tool_calls or ():
                self._feed_call(piece)
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
        if added:
            self.text.append(added)
        return added

    def _feed_call(self, piece: ChoiceDeltaToolCall) -> None:
        call = self.calls.setdefault(piece.index, _PartialCall())
        if piece.id:
            call.id = piece.id
        if piece.function is not None:
            if piece.function.name:
                call.name += piece.function.name
            if piece.function.arguments:
                call.arguments.append(piece.function.arguments)
        _merge(call.extra, piece.model_extra)

    def reply(self) -> ModelReply:
        text = "".join(self.text)
        calls = [_finish_call(n, self.calls[n]) for n in sorted(self.calls)]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        message.update(self.extra)
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json},
                    **c.extra,
                }
                for c in calls
            ]
        return ModelReply(
            text=text,
            tool_calls=calls,
            usage=self.usage,
            finish_reason=self.finish_reason,
            assistant_message=message,
        )


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments JSON as ``(object, None)``, or ``(None, why it is not one)``."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if isinstance(value, dict):
        return value, None
    return None, "the arguments must be a JSON object"


def _finish_call(index: int, call: _PartialCall) -> ToolCall:
    raw = "".join(call.arguments)
    parsed, problem = parse_arguments(raw)
    return ToolCall(
        id=call.id or f"call_{index}",
        name=call.name,
        arguments_json=raw,
        arguments=parsed,
        arguments_error=problem,
        extra=call.extra,
    )


def provider_detail(body: object) -> str:
    """The provider's own error message from an error body (OpenAI's or Anthropic's shape)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return cast(str, inner["message"])[:300]
    return ""


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
        assembler = _Assembler()
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


# -- shared by every gateway ------------------------------------------------------------------


async def run_attempts(
    settings: ModelSettings,
    attempt: Callable[[Callable[[str], Awaitable[None]]], Awaitable[ModelReply]],
    on_text: TextSink,
) -> ModelReply:
    """Run ``attempt(sink)`` under the retry rules (see the module docstring).

    *attempt* streams text to the sink it is given and raises :class:`AttemptFailed`; once any
    text has reached *on_text*, a failure is final. Raises :class:`ModelError`.
    """
    shown = False  # has any text reached on_text? then no retry

    async def sink(piece: str) -> None:
        nonlocal shown
        shown = True
        result = on_text(piece)
        if inspect.isawaitable(result):
            await result

    retrying = AsyncRetrying(
        stop=stop_after_attempt(max(1, settings.max_attempts)),
        wait=_Backoff(settings),
        retry=retry_if_exception(lambda e: isinstance(e, AttemptFailed) and e.retry),
        reraise=True,
    )
    try:
        async for trial in retrying:
            with trial:
                try:
                    return await attempt(sink)
                except AttemptFailed as failure:
                    if shown:
                        failure.retry = False
                    n = trial.retry_state.attempt_number
                    log.warning("model call attempt %d failed: %s", n, failure.error.message)
                    raise
    except AttemptFailed as failure:
        raise failure.error from None
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover


def status_failure(
    settings: ModelSettings, status: int, headers: Mapping[str, str], body: object
) -> AttemptFailed:
    """What an HTTP error status means: AUTH for 401/403, else MODEL_ERROR, retried unless the
    status is in :data:`NEVER_RETRY`, after ``Retry-After`` when given. *headers*: lower-case."""
    detail = provider_detail(body)
    log.info("model call got HTTP %d: %s", status, detail)
    if status in (401, 403):
        return AttemptFailed(ModelError("AUTH", _auth_detail(settings, status)), retry=False)
    if status == 404:
        message = (
            f"The model provider at {settings.base_url} has no model "
            f"'{settings.model}' (HTTP 404). Pick one from the provider's model list."
        )
        return AttemptFailed(ModelError("MODEL_ERROR", message), retry=False)
    message = f"The model provider answered HTTP {status}" + (f": {detail}" if detail else ".")
    if status in NEVER_RETRY:
        return AttemptFailed(ModelError("MODEL_ERROR", message), retry=False)
    return AttemptFailed(
        ModelError("MODEL_ERROR", message, retryable=True),
        retry=True,
        retry_after=parse_retry_after(headers),
    )


def _auth_detail(settings: ModelSettings, status: int) -> str:
    where = settings.base_url
    variable = _KEY_VARS.get(settings.provider)
    env_note = (
        f" ({variable} counts only when it is set in the environment the browser was started "
        "from; the daemon does not read keys from your shell's environment)"
        if variable
        else ""
    )
    if not settings.api_key:
        return (
            f"No API key is configured for the model provider at {where} (HTTP {status}). "
            "How to fix: put the key in Browy's config.toml ([model] api_key, or api_key_file "
            f"naming a file that holds it) and try again{env_note}."
        )
    if status == 403:
        return (
            f"The model provider at {where} refused access to model "
            f"'{settings.model}' with this API key (HTTP 403). How to fix: check the "
            "key's permissions or project in the provider's console, or pick another model."
        )
    return (
        f"The model provider at {where} rejected the API key (HTTP 401). How to fix: put "
        "a valid key in Browy's config.toml ([model] api_key, or the file [model] api_key_file "
        f"names) and try again{env_note}."
    )


class ChatModel(Protocol):
    """What the daemon needs of a gateway; :class:`ModelGateway` and ``AnthropicGateway`` are
    both one."""

    @property
    def settings(self) -> ModelSettings: ...

    async def stream_turn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink,
    ) -> ModelReply: ...

    async def list_models(self) -> list[ModelInfo]: ...

    async def check_auth(self) -> AuthState: ...

    async def aclose(self) -> None: ...


def make_gateway(settings: ModelSettings) -> ChatModel:
    """The gateway for ``settings.provider``: :class:`ModelGateway` for ``"openai"``,
    ``AnthropicGateway`` for ``"anthropic"`` (needs the optional ``anthropic`` SDK:
    ``pip install 'browy-host[anthropic]'``). Raises :class:`ModelError` otherwise."""
    if settings.provider == "openai":
        return ModelGateway(settings)
    if settings.provider == "anthropic":
        try:
            from actors.model_anthropic import AnthropicGateway
        except ImportError as exc:
            log.error("the anthropic provider needs the anthropic SDK: %r", exc)
            raise ModelError(
                "MODEL_ERROR",
                "The Anthropic provider needs the 'anthropic' package. How to fix: install it "
                "(pip install 'browy-host[anthropic]') and restart Browy.",
            ) from None
        return AnthropicGateway(settings)
    raise ModelError(
        "MODEL_ERROR",
        f"Unknown model provider '{settings.provider}' in [model] provider: "
        "use 'openai' or 'anthropic'.",
    )
