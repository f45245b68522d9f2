"""The script of the scripted model server (:mod:`nativehost.demo.model_server`): its format, its
parsing into :class:`Script`, and the rule that picks the step answering a request
(:class:`StepQueue`).

Everything here is pure (no I/O, no event loop): the server passes each request's messages to a
:class:`StepQueue` and answers with the step it gets, in either API's wire format.

Script format
-------------

A JSON file (or the same structure built in Python) that is either a list of steps or an object::

    {"mode": "script" | "echo",        # "echo" answers with the user's words: the last user
                                       # message up to its first blank line (the context block
                                       # the host adds after one is left out)
     "api_key": "sk-test",             # optional: other bearer tokens get 401
     "models": ["gpt-4o", "text-embedding-3-small"],   # optional: GET /v1/models
     "steps": [ step, ... ]}

A step (every key optional)::

    {"text": "Hello there" | ["Hel", "lo"],   # a string is streamed word by word
     "tool_calls": [{"name": "click", "arguments": {"index": 3} | "<raw, maybe bad, JSON>",
                     "id": "call_1", "extra": {...}}],   # "extra": provider fields on the call
     "extra": {"reasoning_content": "..."},  # provider-opaque fields on the assistant message
     "thinking": {"text": "...", "signature": "sig"} | {"redacted": "opaque data"} | [...],
                                             # Anthropic thinking blocks (/v1/messages only)
     "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
     "finish_reason": "stop",                # default: "tool_calls" if there are any, else "stop"
     "fault": fault | [fault, ...],
     "repeat": 2,                            # serve this step N times (default 1)
     "session": "marker-A",                  # see "Which step answers a request"
     "match": {"user_contains": "weather", "tool_result": true}}

Faults (``after_chunks`` counts the SSE ``data:`` events already written, ``ping`` included;
default 0)::

    {"kind": "status", "status": 503, "retry_after": 1, "message": "..."}
        HTTP error with OpenAI's error body (and a Retry-After header: seconds or an HTTP date).
        With "after_chunks" > 0 the status is already 200, so the error is sent the way the
        provider does it mid-stream (OpenAI: a ``data: {"error": {...}}`` event; Anthropic: an
        ``event: error`` with its error body), then the stream ends.
    {"kind": "disconnect", "after_chunks": 2}    close the connection abruptly
    {"kind": "hang", "after_chunks": 0}          send nothing more until the client goes away
    {"kind": "delay", "first_chunk_s": 0.5, "between_chunks_s": 0.1}

Which step answers a request: the script's ``session`` markers are searched, in script order, in the
request's system and user messages; the first one found names the request's session (none found:
the session of steps without a marker). Among the remaining steps of that session, the first whose
``match`` holds is consumed (``user_contains``: the last user message contains the text;
``tool_result``: whether the last message is a tool result). So concurrent conversations can be
scripted deterministically. When no step fits, the answer is HTTP 500 with an error message saying
that the script is exhausted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import orjson

__all__ = [
    "ARGUMENT_FRAGMENT",
    "Fault",
    "FaultKind",
    "Script",
    "ScriptError",
    "Step",
    "StepQueue",
    "ThinkingSpec",
    "ToolCallSpec",
    "finish_of",
    "load_script",
    "message_text",
    "parse_step",
    "split_words",
    "usage_of",
]

FaultKind = Literal["status", "disconnect", "hang", "delay"]
_FAULT_KINDS: tuple[str, ...] = ("status", "disconnect", "hang", "delay")
_T = TypeVar("_T")


class ScriptError(ValueError):
    """The script is not well formed; the message names the step and the key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One scripted fault (see the module docstring)."""

    kind: FaultKind
    status: int = 500
    retry_after: float | str | None = None
    message: str | None = None
    after_chunks: int = 0
    first_chunk_s: float = 0.0
    between_chunks_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSpec:
    """A tool call the scripted model makes; ``arguments`` as a string is sent verbatim."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return orjson.dumps(self.arguments).decode()


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingSpec:
    """An Anthropic thinking block: ``text`` + ``signature``, or ``redacted`` (opaque data)."""

    text: str = ""
    signature: str = ""
    redacted: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One scripted answer (see the module docstring)."""

    text: tuple[str, ...] = ()
    tool_calls: tuple[ToolCallSpec, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    thinking: tuple[ThinkingSpec, ...] = ()
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    faults: tuple[Fault, ...] = ()
    repeat: int = 1
    session: str | None = None
    user_contains: str | None = None
    tool_result: bool | None = None

    def fault(self, kind: FaultKind) -> Fault | None:
        return next((f for f in self.faults if f.kind == kind), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Script:
    """A whole script: its steps, the model list, and the mode."""

    steps: tuple[Step, ...] = ()
    mode: Literal["script", "echo"] = "script"
    models: tuple[str, ...] = ("browy-scripted",)
    api_key: str | None = None

    @classmethod
    def echo(cls) -> Script:
        """The demo script: every answer repeats the last user message."""
        return cls(mode="echo", models=("browy-echo",))


def split_words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\s*\S+\s*", text)) or ((text,) if text else ())


def _build(cls: Callable[..., _T], raw: Mapping[str, Any], where: str) -> _T:
    """``cls(**raw)``, a missing or unknown key reported as a :class:`ScriptError` at *where*."""
    try:
        return cls(**raw)
    except TypeError as exc:
        raise ScriptError(f"{where}: {exc}") from None


def _parse_fault(raw: object, where: str) -> Fault:
    if not isinstance(raw, dict) or raw.get("kind") not in _FAULT_KINDS:
        raise ScriptError(f"{where}: a fault needs 'kind', one of {', '.join(_FAULT_KINDS)}")
    return _build(Fault, raw, where)


def parse_step(raw: object, where: str) -> Step:
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: a step must be an object")
    known = {"text", "tool_calls", "extra", "thinking", "usage", "finish_reason", "fault", "repeat"}
    unknown = set(raw) - known - {"session", "match"}
    if unknown:
        raise ScriptError(f"{where}: unknown keys {sorted(unknown)}")
    text = raw.get("text", ())
    chunks = split_words(text) if isinstance(text, str) else tuple(str(t) for t in text)
    calls = []
    for n, call in enumerate(raw.get("tool_calls", ())):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ScriptError(f"{where}.tool_calls[{n}]: needs a 'name'")
        calls.append(_build(ToolCallSpec, call, f"{where}.tool_calls[{n}]"))
    thinking_raw = raw.get("thinking", ())
    thinking = []
    for n, block in enumerate([thinking_raw] if isinstance(thinking_raw, dict) else thinking_raw):
        if not isinstance(block, dict):
            raise ScriptError(f"{where}.thinking[{n}]: must be an object")
        thinking.append(_build(ThinkingSpec, block, f"{where}.thinking[{n}]"))
    faults_raw = raw.get("fault", ())
    faults_list = [faults_raw] if isinstance(faults_raw, dict) else list(faults_raw)
    match = raw.get("match") or {}
    repeat = int(raw.get("repeat", 1))
    if repeat < 1:
        raise ScriptError(f"{where}: 'repeat' must be at least 1")
    return Step(
        text=chunks,
        tool_calls=tuple(calls),
        extra=dict(raw.get("extra") or {}),
        thinking=tuple(thinking),
        usage=raw.get("usage"),
        finish_reason=raw.get("finish_reason"),
        faults=tuple(_parse_fault(f, f"{where}.fault") for f in faults_list),
        repeat=repeat,
        session=raw.get("session"),
        user_contains=match.get("user_contains"),
        tool_result=match.get("tool_result"),
    )


def load_script(source: Script | Sequence[object] | Mapping[str, object] | str | Path) -> Script:
    """Build a :class:`Script` from a path to a JSON file, parsed JSON, or a Script (returned)."""
    if isinstance(source, Script):
        return source
    if isinstance(source, str | Path):
        source = cast("list[object] | dict[str, object]", orjson.loads(Path(source).read_bytes()))
    top = dict(source) if isinstance(source, Mapping) else {"steps": list(source)}
    steps_raw = top.get("steps", [])
    if not isinstance(steps_raw, list):
        raise ScriptError("'steps' must be a list")
    mode = top.get("mode", "script")
    if mode not in ("script", "echo"):
        raise ScriptError("'mode' must be 'script' or 'echo'")
    models = top.get("models") or (("browy-echo",) if mode == "echo" else ("browy-scripted",))
    api_key = top.get("api_key")
    return Script(
        steps=tuple(parse_step(s, f"steps[{n}]") for n, s in enumerate(steps_raw)),
        mode=mode,
        models=tuple(str(m) for m in cast("Sequence[object]", models)),
        api_key=api_key if isinstance(api_key, str) else None,
    )


def message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class StepQueue:
    """The remaining steps and the rule that picks one for a request (pure).

    Steps are kept per session marker, so a request only looks at its own session's steps.
    """

    def __init__(self, steps: Sequence[Step]) -> None:
        self._by_session: dict[str | None, list[list[Any]]] = {}
        self._markers: list[str] = []
        self.extend(steps)

    def extend(self, steps: Sequence[Step]) -> None:
        for s in steps:
            if s.session and s.session not in self._by_session:
                self._markers.append(s.session)
            self._by_session.setdefault(s.session, []).append([s, s.repeat])

    def take(self, messages: Sequence[Mapping[str, Any]]) -> Step | None:
        prompt = " ".join(
            message_text(m) for m in messages if m.get("role") in ("system", "user", "developer")
        )
        session = next((m for m in self._markers if m in prompt), None)
        users = [m for m in messages if m.get("role") == "user"]
        last_user = message_text(users[-1]) if users else ""
        last_is_tool = bool(messages) and messages[-1].get("role") == "tool"
        remaining = self._by_session.get(session, [])
        for entry in remaining:
            step: Step = entry[0]
            if step.user_contains is not None and step.user_contains not in last_user:
                continue
            if step.tool_result is not None and step.tool_result != last_is_tool:
                continue
            entry[1] -= 1
            if entry[1] == 0:
                remaining.remove(entry)
            return step
        return None

    def drop(self, session: str, user_contains: str) -> int:
        """Forget the steps of *session* that match on *user_contains* and were never taken
        (their turn ended early: a fault, a cancel); returns how many. A long run that scripts
        each turn as it starts would otherwise keep every turn's leftovers, and scan them."""
        remaining = self._by_session.get(session, [])
        kept = [e for e in remaining if e[0].user_contains != user_contains]
        dropped = len(remaining) - len(kept)
        if dropped:
            self._by_session[session] = kept
        return dropped

    def pending(self) -> list[Step]:
        """The steps not taken yet (every session's), in no particular order."""
        return [entry[0] for entries in self._by_session.values() for entry in entries]


# -- what a step answers, in either API -----------------------------------------------------

ARGUMENT_FRAGMENT = 8  # characters per streamed argument fragment, as small as OpenAI's


def finish_of(step: Step) -> str:
    """The step's OpenAI ``finish_reason``: as scripted, else ``tool_calls`` if it has any."""
    return step.finish_reason or ("tool_calls" if step.tool_calls else "stop")


def usage_of(step: Step) -> dict[str, int]:
    """The step's OpenAI ``usage``: as scripted, else counted roughly from its text and calls."""
    if step.usage is not None:
        return dict(step.usage)
    completion = len(step.text) + sum(len(c.arguments_json()) // 4 for c in step.tool_calls)
    return {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}
