"""Log redaction: no secret of a known shape, in any of the places a log line carries one, reaches
the log file."""

from __future__ import annotations

import json
import string
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from actors.runtime.logger import LogSink
from actors.runtime.redaction import REDACTED, redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("using key sk-proj-abcdefghijklmnop1234", "abcdefghijklmnop1234"),
        ("anthropic sk-ant-api03-AbCdEfGhIjKlMnOp_qr", "AbCdEfGhIjKlMnOp_qr"),
        ("headers: Bearer eyJhbGciOi.JIUzI1NiJ9-x", "eyJhbGciOi"),
        ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("Cookie: sid=12345; theme=dark", "sid=12345"),
        ("Set-Cookie: session=s3cr3t; HttpOnly", "s3cr3t"),
        ('{"apiKey": "key-123456", "model": "gpt"}', "key-123456"),
        ("{'api_key': 'key-123456'}", "key-123456"),
        ("GET /v1?api_key=key-123456&x=1", "key-123456"),
        ('{"cookie": "a=b; c=d", "url": "https://x"}', "a=b; c=d"),
        # Each of these reached the file before.
        ("ModelSettings(model='gpt-4o', api_key='key-123456', base_url=None)", "key-123456"),
        ('ModelSettings(api_key="key-123456")', "key-123456"),
        ("Settings(openai_api_key = 'key-123456', timeout=3)", "key-123456"),
        ("password: 'hunter2-hunter2'", "hunter2-hunter2"),
        ("key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"),
        ("GET /v1beta/models?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "SyA1b2C3d4E5"),
        ("groq gsk_Ab12Cd34Ef56Gh78Ij90Kl12Mn34", "Ab12Cd34Ef56Gh78Ij90Kl12Mn34"),
        ("hf hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
        ("xai xai-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
        ("api-key: 0123456789abcdef0123456789abcdef", "0123456789abcdef"),
        ("x-goog-api-key: my-google-key-value", "my-google-key-value"),
        ("proxy https://alice:s3cr3t-pw@proxy.example.com:8080/", "s3cr3t-pw"),
        ("clone https://ghtoken123456@github.com/o/r.git", "ghtoken123456"),
        ('{"url": "https://bob:p%40ss@host/x"}', "p%40ss"),
    ],
)
def test_redact_removes_each_kind_of_secret(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned
    assert "[REDACTED]" in cleaned


def test_redact_keeps_what_is_not_secret() -> None:
    for text in [
        '{"model": "gpt-4o", "url": "https://x"}',
        "task-12345 finished",
        "https://example.com/a?b=c and bob@example.com",
        '{"max_tokens": 1000, "prompt_tokens": 12, "tokenizer": "o200k"}',
        "press_key {'key': 'Enter'}",
    ]:
        assert redact(text) == text
    cleaned = redact('{"apiKey": "k-1", "model": "gpt"}')
    assert '"model": "gpt"' in cleaned
    assert redact("user https://u:p@host/path?q=1") == "user https://[REDACTED]@host/path?q=1"


def test_redact_stays_linear_on_long_lines_made_of_near_misses() -> None:
    # Word boundaries every other character, keyword heads without a value, schemes without
    # userinfo: a rule that rescans from each position would take minutes on these.
    lines = [
        "a." * 200_000,
        "token" * 100_000,
        "api_key='" + "x" * 400_000,
        "https://" + "a:" * 200_000,
        "sk-" * 100_000,
    ]
    done = threading.Event()

    def run() -> None:
        for line in lines:
            redact(line)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(20.0), "redact took too long on a long line"


# --- the property: any secret, anywhere -----------------------------------------------------------

_ALNUM = string.ascii_letters + string.digits
#: A token as it appears in headers and key=value logs (RFC 6750's b64token and friends).
_TOKEN = _ALNUM + "-._~+/="
#: A password as a user would type it: any printable character but a line break.
_PRINTABLE = "".join(c for c in string.printable if c not in "\r\n\x0b\x0c")
#: What RFC 3986 allows in a URL's userinfo (unreserved, sub-delims, ":" and %-escapes), plus "@".
_USERINFO = _ALNUM + "-._~!$&'()*+,;=%@"


def _body(alphabet: str, size: int | tuple[int, int]) -> st.SearchStrategy[str]:
    low, high = (size, size) if isinstance(size, int) else size
    return st.text(alphabet=alphabet, min_size=low, max_size=high)


#: (the whole key, the part that must not reach the file)
_provider_keys: st.SearchStrategy[tuple[str, str]] = st.one_of(
    _body(_ALNUM + "_-", (20, 60)).map(lambda b: ("sk-proj-" + b, b)),
    st.tuples(st.sampled_from(_ALNUM), _body(_ALNUM + "_-", (20, 60))).map(
        lambda t: ("sk-" + t[0] + t[1], t[1])
    ),
    _body(_ALNUM + "_-", (40, 95)).map(lambda b: ("sk-ant-api03-" + b, b)),
    _body(_ALNUM + "_-", 35).map(lambda b: ("AIza" + b, b)),
    _body(_ALNUM, 52).map(lambda b: ("gsk_" + b, b)),
    _body(_ALNUM, 34).map(lambda b: ("hf_" + b, b)),
    _body(_ALNUM, 80).map(lambda b: ("xai-" + b, b)),
)

_KEY_NAMES = [
    "apiKey",
    "api_key",
    "API_KEY",
    "x-api-key",
    "openai_api_key",
    "token",
    "access_token",
    "refreshToken",
    "id_token",
    "client_secret",
    "password",
    "secret",
    "cookie",
    "Set-Cookie",
    "Authorization",
    "private_key",
]
_HEADERS = [
    "Authorization",
    "Proxy-Authorization",
    "Cookie",
    "Set-Cookie",
    "X-Api-Key",
    "api-key",
    "x-goog-api-key",
]


def _keyed(name: str, value: str, form: str) -> tuple[str, str]:
    """``name`` set to ``value`` in one of the ways a log line shows a field; and ``value`` as it
    appears there (JSON and reprs escape quotes and backslashes)."""
    if form == "json":
        return json.dumps({"model": "m", name: value, "n": 1}), json.dumps(value)[1:-1]
    if form == "dict":
        return repr({"model": "m", name: value}), repr(value)[1:-1]
    if form == "kwargs":
        return f"ModelSettings(model='m', {name}={value!r}, timeout=3)", repr(value)[1:-1]
    if form == "kwargs-spaced":
        return f"Settings({name} = {value!r})", repr(value)[1:-1]
    return f"{name}: {value!r}", repr(value)[1:-1]  # YAML-ish


_FORMS = ["json", "dict", "kwargs", "kwargs-spaced", "yaml"]


@st.composite
def _fragments(draw: st.DrawFn) -> tuple[str, str, bool]:
    """(a piece of a log line, the secret in it, whether the secret is token-shaped)."""
    kind = draw(st.sampled_from(["provider", "keyed", "query", "kv", "header", "bearer", "url"]))
    if kind == "provider":
        key, secret = draw(_provider_keys)
        where = draw(
            st.sampled_from(
                [
                    "{k}",
                    "api_key={k}",
                    "GET /v1/models?key={k}&alt=json",
                    "Authorization: Bearer {k}",
                    "x-goog-api-key: {k}",
                    "https://user:{k}@host.example/v1",
                ]
                + [f"@{form}" for form in _FORMS]
            )
        )
        if where.startswith("@"):
            text, _ = _keyed(draw(st.sampled_from(_KEY_NAMES)), key, where[1:])
            return text, secret, True
        return where.format(k=key), secret, True
    if kind == "keyed":
        value = draw(_body(_PRINTABLE, (8, 40)))
        text, shown = _keyed(
            draw(st.sampled_from(_KEY_NAMES)), value, draw(st.sampled_from(_FORMS))
        )
        return text, shown, set(value) <= set(_TOKEN)
    if kind == "query":
        secret = quote(draw(_body(_PRINTABLE, (8, 40))), safe="")
        name = draw(st.sampled_from(["api_key", "access_token", "token", "password", "apiKey"]))
        return f"GET https://api.example/v1?{name}={secret}&page=2", secret, True
    if kind == "kv":
        secret = draw(_body(_TOKEN, (8, 40)))
        name = draw(st.sampled_from(_KEY_NAMES))
        return f"{name}={secret}", secret, True
    if kind == "header":
        secret = draw(_body(_PRINTABLE, (8, 40)))
        return f"{draw(st.sampled_from(_HEADERS))}: {secret}", secret, False
    if kind == "bearer":
        secret = draw(_body(_TOKEN, (8, 60)))
        return f"Bearer {secret}", secret, True
    user = draw(_body(_ALNUM + "-._~", (1, 12)))
    secret = draw(_body(_USERINFO, (8, 40)))
    host = draw(st.sampled_from(["host", "api.example.com:8443", "10.0.0.1"]))
    if draw(st.booleans()):
        return f"https://{user}:{secret}@{host}/v1/chat?x=1", secret, True
    return f"git+https://{secret}@{host}/o/r.git", secret, True


def _wrap(fragment: str, how: str) -> str:
    """The fragment as a log line may carry it: as it is, inside a repr, inside JSON."""
    if how == "repr":
        return repr(("request", fragment))
    if how == "json":
        return json.dumps({"event": "request", "detail": fragment})
    return fragment


_SEPARATORS = st.sampled_from([" ", "\n", ", ", "\t", " | ", ": ", " ("])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fragment=_fragments(),
    how=st.sampled_from(["plain", "repr", "json"]),
    prefix=st.text(alphabet=_PRINTABLE + "\n", max_size=40),
    suffix=st.text(alphabet=_PRINTABLE + "\n", max_size=40),
    before=_SEPARATORS,
    after=_SEPARATORS,
)
def test_no_secret_of_a_known_shape_reaches_the_log_file(
    fragment: tuple[str, str, bool],
    how: str,
    prefix: str,
    suffix: str,
    before: str,
    after: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    piece, secret, token_shaped = fragment
    # Nested quoting (a repr or JSON around a quoted field) escapes quotes and backslashes; the
    # secrets are then token-shaped, as API keys and tokens are.
    assume(how == "plain" or token_shaped)
    wrapped = _wrap(piece, how)
    line = prefix + before + wrapped + after + suffix
    assume(secret in wrapped and line.count(secret) == 1)  # only where the fragment put it
    assume(secret not in REDACTED)
    path = _log_path(tmp_path_factory)
    path.unlink(missing_ok=True)
    LogSink(path, max_bytes=1 << 20, rotate=False, daemon=True).write_now(line)
    written = path.read_text("utf-8")
    assert secret not in written, written
    assert secret not in redact(line)


_PATHS: dict[str, Path] = {}


def _log_path(factory: pytest.TempPathFactory) -> Path:
    if "log" not in _PATHS:
        _PATHS["log"] = factory.mktemp("redaction") / "host.log"
    return _PATHS["log"]
