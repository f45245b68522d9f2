"""What every model gateway speaks: the settings, the answer, the error it raises, its protocol.

:class:`ModelSettings` says how to reach the provider; :class:`ModelReply` (with its
:class:`ToolCall` list and :class:`Usage`) is a finished answer (:func:`parse_arguments` reads a
tool call's arguments JSON); :class:`ModelInfo` and :class:`AuthState` answer ``models.list`` and
``auth.status`` (:func:`is_chat_model` tells chat models from the others in a provider's list);
:class:`ModelError` is the one error a gateway raises (its codes are drawn in
:mod:`actors.model.sdk_gateway`'s docstring). :class:`ChatModel` is what the daemon needs of a
gateway. Plain data and pure functions, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from messages.errors import BrowyError, ErrorCode

__all__ = [
    "AuthState",
    "ChatModel",
    "ModelError",
    "ModelInfo",
    "ModelReply",
    "ModelSettings",
    "TextSink",
    "ToolCall",
    "Usage",
    "is_chat_model",
    "parse_arguments",
]

#: Called with each piece of streamed text, in order; may be sync or async.
TextSink = Callable[[str], Awaitable[None] | None]

ModelErrorCode = Literal["AUTH", "MODEL_ERROR", "CANCELLED"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """How to reach the provider, and the time limits. Config loading lives elsewhere."""

    base_url: str
    api_key: str | None
    model: str
    #: ``"openai"`` (any OpenAI-compatible server), ``"anthropic"`` (the Messages API) or
    #: ``"copilot"`` (the GitHub Copilot CLI, through its SDK; no URL or key).
    provider: str = "openai"
    #: The Copilot CLI (``[model] cli_path``); None: ``COPILOT_CLI_PATH``, then ``PATH``.
    cli_path: str | None = None
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


class ChatModel(Protocol):
    """What the daemon needs of a gateway; ``ModelGateway`` (OpenAI-compatible) and
    ``AnthropicGateway`` are both one."""

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


# Ids of models that do not chat (the provider's models.list mixes them in).
_NOT_CHAT = (
    "embed", "whisper", "tts", "dall-e", "davinci-002", "babbage", "moderation", "transcribe",
    "rerank", "gpt-image", "sora",
)  # fmt: skip


def is_chat_model(model_id: str) -> bool:
    """Whether a ``models.list`` id names a chat model (embedding, audio, image ids are not)."""
    lowered = model_id.lower()
    return not any(word in lowered for word in _NOT_CHAT)


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments JSON as ``(object, None)``, or ``(None, why it is not one)``."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if isinstance(value, dict):
        return value, None
    return None, "the arguments must be a JSON object"
