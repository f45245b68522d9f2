"""Secret redaction for log lines: :func:`redact` replaces what looks like a secret.

What it knows: API keys (``sk-...``, ``sk-ant-...``), ``Bearer`` tokens,
``Authorization``/``Cookie``/``Set-Cookie`` header values, ``apiKey``/``api_key``/``cookie``/token
fields in JSON, dict reprs and query strings.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

_KEYS = (
    r"api[_-]?key|x-api-key|authorization|proxy-authorization|cookie|set-cookie"
    r"|access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret|password|secret|token"
)
# Order matters: quoted fields first, so the header rule does not eat a JSON line's remainder.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # "apiKey": "...", 'cookie': '...'  (JSON and Python reprs)
    (
        re.compile(
            rf"""(?P<q>["'])(?P<k>{_KEYS})(?P=q)(?P<sep>\s*[:=]\s*)"""
            r"""(?P<v>["'])(?:\\.|(?!(?P=v)).)*(?P=v)""",
            re.IGNORECASE,
        ),
        rf"\g<q>\g<k>\g<q>\g<sep>\g<v>{REDACTED}\g<v>",
    ),
    # Header lines: the whole value up to the end of the line.
    (
        re.compile(
            r"\b(?P<k>authorization|proxy-authorization|cookie|set-cookie|x-api-key)"
            r"(?P<sep>\s*:\s*)[^\r\n]+",
            re.IGNORECASE,
        ),
        rf"\g<k>\g<sep>{REDACTED}",
    ),
    # api_key=..., token=... in query strings and key=value logs.
    (
        re.compile(rf"\b(?P<k>{_KEYS})=(?P<v>[^\s&\"',;]+)", re.IGNORECASE),
        rf"\g<k>={REDACTED}",
    ),
    (re.compile(r"\bBearer\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE), f"Bearer {REDACTED}"),
    # OpenAI (sk-..., sk-proj-...) and Anthropic (sk-ant-...) keys, wherever they appear.
    (re.compile(r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{12,}"), f"sk-{REDACTED}"),
)


def redact(text: str) -> str:
    """Return ``text`` with every secret this module knows replaced by ``[REDACTED]``."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
