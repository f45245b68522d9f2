"""Secret redaction for log lines: :func:`redact` replaces what looks like a secret.

Two kinds of rules, applied in this order:

* **By context**, whatever the secret looks like: a field whose name ends in a secret word
  (``api_key``, ``apiKey``, ``x-api-key``, ``token``, ``access_token``, ``password``, ``secret``,
  ``cookie``, ``authorization``, ``private_key``, ...) set to a quoted value — JSON, dict and
  dataclass reprs, keyword arguments, ``name: 'value'``; even with escaped quotes (JSON inside
  JSON), and to the end of the line when the closing quote is missing (a cut line); the value of
  ``Authorization``/``Proxy-Authorization``/``Cookie``/``Set-Cookie``/``X-Api-Key``/``api-key``/
  ``x-goog-api-key`` header lines, up to the end of the line; an unquoted ``name=value`` (query
  strings, key=value logs); a ``Bearer`` token; the userinfo of a URL
  (``https://user:pass@host/`` becomes ``https://[REDACTED]@host/``).
* **By shape**, wherever they appear: OpenAI-style ``sk-...`` (also ``sk-proj-``, ``sk-ant-``,
  ``sk-or-``), Google ``AIza...``, Groq ``gsk_...``, Hugging Face ``hf_...`` and xAI ``xai-...``
  keys; the prefix stays, so the log still says which kind of key it was.

Cost: the relay imports this on its start-up path, so it needs only :mod:`re`, and every pattern
is compiled once, here. No rule rescans from each position of a run of text (their heads are
literal words and every repeat that could backtrack is bounded), so a line costs time linear in
its length.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

# A field is secret when its name *ends* in one of these (``openai_api_key``, ``refreshToken``,
# ``x-auth-token``), so ``max_tokens`` or ``tokenizer`` are not.
_SECRET_WORDS = r"api[_-]?key|private[_-]?key|authorization|cookie|password|passwd|secret|token"

# Each rule with the words one of which a line must hold (case-folded) for the rule to have
# anything to do: checking them is a fast substring search, so a line with none (most lines) costs
# a few microseconds. Order matters: quoted fields first, so that the header rule does not eat a
# JSON line's remainder, and the unquoted rule does not take a quote for a value.
_FIELD_WORDS = ("key", "author", "cookie", "passw", "secret", "token")
_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    # "apiKey": "...", 'cookie': '...', api_key='...', token = b"...", \"token\": \"...\"
    (
        _FIELD_WORDS,
        re.compile(
            rf"""(?P<head>(?:{_SECRET_WORDS})\\*["']?\s*[:=]\s*[bru]{{0,2}})"""
            r"""(?P<q>\\*["'])(?:\\.|[^\\\n])*?(?:(?P=q)|(?=\n)|\Z)""",
            re.IGNORECASE,
        ),
        rf"\g<head>\g<q>{REDACTED}\g<q>",
    ),
    # Header lines: the whole value up to the end of the line.
    (
        ("author", "cookie", "api-key"),
        re.compile(
            r"\b(?P<k>(?:proxy-)?authorization|(?:set-)?cookie|(?:x-goog-|x-)?api-key)"
            r"(?P<sep>\s*:\s*)[^\r\n]+",
            re.IGNORECASE,
        ),
        rf"\g<k>\g<sep>{REDACTED}",
    ),
    # api_key=..., access_token=... in query strings and key=value logs.
    (
        _FIELD_WORDS,
        re.compile(rf"(?P<k>{_SECRET_WORDS})=[^\s&\"',;]+", re.IGNORECASE),
        rf"\g<k>={REDACTED}",
    ),
    (
        ("bearer",),
        re.compile(r"(?:\bBearer\s+)+[A-Za-z0-9\-._~+/=]+", re.IGNORECASE),
        f"Bearer {REDACTED}",
    ),
    # scheme://userinfo@host: what RFC 3986 allows in userinfo, plus a raw "@" (up to the last
    # one before the host, as URL parsers read it).
    (
        ("://",),
        re.compile(r"(?P<s>\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://)[A-Za-z0-9\-._~%!$&'()*+,;=:@]*@"),
        rf"\g<s>{REDACTED}@",
    ),
    # Provider keys by shape (sk- covers OpenAI, Anthropic sk-ant-, OpenRouter sk-or-, ...).
    (
        ("sk-", "aiza", "gsk_", "hf_", "xai-"),
        re.compile(
            r"(?<![A-Za-z0-9])(?P<p>sk-(?=[A-Za-z0-9][A-Za-z0-9_\-]{12})"
            r"|AIza(?=[A-Za-z0-9_\-]{30})"
            r"|(?:gsk_|hf_|xai-)(?=[A-Za-z0-9]{20}))"
            r"[A-Za-z0-9_\-]+"
        ),
        rf"\g<p>{REDACTED}",
    ),
)


def redact(text: str) -> str:
    """Return ``text`` with every secret this module knows replaced by ``[REDACTED]``."""
    folded = text.casefold()
    for words, pattern, replacement in _RULES:
        if any(word in folded for word in words):
            text = pattern.sub(replacement, text)
    return text
