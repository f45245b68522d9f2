"""The retry and HTTP-error rules shared by every gateway (OpenAI-compatible and Anthropic).

:func:`run_attempts` runs one model call under tenacity: bounded attempts, backoff with jitter or
the provider's ``Retry-After`` (:func:`parse_retry_after`), and no retry once text has been shown.
An attempt raises :class:`AttemptFailed`; :func:`status_failure` says what an HTTP error status
means (AUTH with a how-to-fix message, or MODEL_ERROR, retried unless in :data:`NEVER_RETRY`).

The rules: bounded attempts (``max_attempts``), exponential backoff with jitter; never on 400/401/
403/404/422; honour ``Retry-After`` / ``retry-after-ms`` (seconds or an HTTP date, capped at
``retry_after_cap``); and only while no text has reached ``on_text`` — a retry never repeats text
the user has seen. A stream that goes silent is not retried either: the user already waited
``stream_idle_timeout`` for it. The errors a gateway raises are drawn in
:mod:`actors.model.sdk_gateway`'s docstring.
"""

from __future__ import annotations

import contextlib
import email.utils
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_base

from actors.model.types import ModelError, ModelReply, ModelSettings, TextSink

__all__ = [
    "NEVER_RETRY",
    "AttemptFailed",
    "parse_retry_after",
    "provider_detail",
    "run_attempts",
    "status_failure",
]

log = logging.getLogger(__name__)

#: Statuses a retry cannot fix (the request or the credentials are wrong).
NEVER_RETRY = frozenset({400, 401, 403, 404, 422})
#: The environment variable config.py reads the key from, per provider.
_KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


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
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date).
    *headers*: with lower-case names."""
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


def provider_detail(body: object) -> str:
    """The provider's own error message from an error body (OpenAI's or Anthropic's shape)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return cast(str, inner["message"])[:300]
    return ""


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
    status is in :data:`NEVER_RETRY`, after ``Retry-After`` when given. *headers*: the response's,
    in any case."""
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
        retry_after=parse_retry_after({k.lower(): v for k, v in headers.items()}),
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
