"""A scripted OpenAI- and Anthropic-compatible model server: ``browy model-server``.

It lets a user check their setup without a key, and it is what the tests, the offline demo and the
fault-injection harness talk to through the real ``openai`` and ``anthropic`` clients. It speaks the
wire format of the OpenAI API as the SDK expects it:

- ``POST /v1/chat/completions``, non-streaming (one ``chat.completion`` object) or streaming (SSE:
  ``data: {chunk}\\n\\n`` ... ``data: [DONE]\\n\\n``). The first chunk carries ``role``; text
  follows in ``content`` deltas; each tool call comes in pieces as OpenAI sends them (``index``,
  ``id``, ``type`` and ``function.name`` with empty ``arguments`` first, then argument fragments);
  the last choice chunk carries ``finish_reason``; with ``stream_options.include_usage`` every
  chunk has ``"usage": null`` and a final chunk with ``"choices": []`` carries the usage.
- ``GET /v1/models``: the script's model list.
- Errors use OpenAI's body shape ``{"error": {"message", "type", "param", "code"}}``.

and the Anthropic Messages API (the same steps and faults answer both):

- ``POST /v1/messages``, non-streaming (one ``message`` object with ``content`` blocks) or
  streaming (SSE ``event: <type>\\ndata: {json}\\n\\n``, in Anthropic's order: ``message_start``;
  per content block ``content_block_start``, its ``content_block_delta`` events (``thinking_delta``
  then one ``signature_delta``; ``text_delta`` per text chunk; ``input_json_delta`` starting with an
  empty ``partial_json`` then argument fragments) and ``content_block_stop``, with one ``ping``
  after the first ``content_block_start``; ``message_delta`` with ``stop_reason`` and ``usage``;
  ``message_stop``). Blocks come thinking first, then text, then tool_use.
- ``GET /v1/models`` with an ``anthropic-version`` header: Anthropic's list shape (``data`` of
  ``{"type": "model", "id", "display_name", "created_at"}``, ``has_more``, ``first_id``,
  ``last_id``).
- Errors use Anthropic's body shape ``{"type": "error", "error": {"type", "message"}}``; the key
  is read from ``x-api-key`` (or a bearer token). Step matching sees the ``system`` parameter as a
  system message, and a user message made of ``tool_result`` blocks as a tool result.

Script format
-------------

A JSON file (or the same structure built in Python) that is either a list of steps or an object::

    {"mode": "script" | "echo",        # "echo" answers with the last user text (the demo)
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

Observability for tests: :attr:`ScriptedModelServer.requests` holds every request body received,
:attr:`~ScriptedModelServer.request_times` their arrival (loop time) (both empty with
``keep_bodies=False``, for long runs; ``request_count`` always counts),
:attr:`~ScriptedModelServer.served_faults` the steps with a fault that a request reached, and
:attr:`~ScriptedModelServer.client_disconnected` is set when a client goes away before its
response was complete (``disconnect_count`` counts them). A running server takes more steps with
:meth:`~ScriptedModelServer.extend` (a long run scripts each turn just before it starts).

The server binds 127.0.0.1 by default.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import re
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO, cast

import orjson
from aiohttp import web

__all__ = [
    "Fault",
    "Script",
    "ScriptError",
    "ScriptedModelServer",
    "Step",
    "ThinkingSpec",
    "ToolCallSpec",
    "load_script",
    "main",
]

log = logging.getLogger(__name__)

FaultKind = Literal["status", "disconnect", "hang", "delay"]
_FAULT_KINDS: tuple[str, ...] = ("status", "disconnect", "hang", "delay")
_ARGUMENT_FRAGMENT = 8  # characters per streamed argument fragment, as small as OpenAI's
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


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


def _split_words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\s*\S+\s*", text)) or ((text,) if text else ())


def _parse_fault(raw: object, where: str) -> Fault:
    if not isinstance(raw, dict) or raw.get("kind") not in _FAULT_KINDS:
        raise ScriptError(f"{where}: a fault needs 'kind', one of {', '.join(_FAULT_KINDS)}")
    try:
        return Fault(**raw)
    except TypeError as exc:
        raise ScriptError(f"{where}: {exc}") from None


def _parse_step(raw: object, where: str) -> Step:
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: a step must be an object")
    known = {"text", "tool_calls", "extra", "thinking", "usage", "finish_reason", "fault", "repeat"}
    unknown = set(raw) - known - {"session", "match"}
    if unknown:
        raise ScriptError(f"{where}: unknown keys {sorted(unknown)}")
    text = raw.get("text", ())
    chunks = _split_words(text) if isinstance(text, str) else tuple(str(t) for t in text)
    calls = []
    for n, call in enumerate(raw.get("tool_calls", ())):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ScriptError(f"{where}.tool_calls[{n}]: needs a 'name'")
        try:
            calls.append(ToolCallSpec(**call))
        except TypeError as exc:
            raise ScriptError(f"{where}.tool_calls[{n}]: {exc}") from None
    thinking_raw = raw.get("thinking", ())
    thinking = []
    for n, block in enumerate([thinking_raw] if isinstance(thinking_raw, dict) else thinking_raw):
        if not isinstance(block, dict):
            raise ScriptError(f"{where}.thinking[{n}]: must be an object")
        try:
            thinking.append(ThinkingSpec(**block))
        except TypeError as exc:
            raise ScriptError(f"{where}.thinking[{n}]: {exc}") from None
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
        steps=tuple(_parse_step(s, f"steps[{n}]") for n, s in enumerate(steps_raw)),
        mode=mode,
        models=tuple(str(m) for m in cast("Sequence[object]", models)),
        api_key=api_key if isinstance(api_key, str) else None,
    )


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class _Queue:
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
            _message_text(m) for m in messages if m.get("role") in ("system", "user", "developer")
        )
        session = next((m for m in self._markers if m in prompt), None)
        users = [m for m in messages if m.get("role") == "user"]
        last_user = _message_text(users[-1]) if users else ""
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


class ScriptedModelServer:
    """An aiohttp server answering chat completions from a :class:`Script`.

    ``await start()`` returns the base URL (``http://127.0.0.1:PORT/v1``) once it accepts
    connections; ``await stop()`` ends hanging answers and closes the listener (idempotent).
    """

    def __init__(
        self,
        script: Script | Sequence[object] | Mapping[str, object] | None,
        *,
        keep_bodies: bool = True,
    ) -> None:
        self.script = Script.echo() if script is None else load_script(script)
        #: With ``keep_bodies=False`` (long runs, e.g. a soak) no request is kept, so the
        #: server's memory does not grow with the run; ``request_count`` still counts them.
        self.keep_bodies = keep_bodies
        self.requests: list[dict[str, Any]] = []
        self.request_times: list[float] = []
        self.request_count = 0
        #: (arrival in loop time, step) for every step with a fault that a request reached.
        self.served_faults: list[tuple[float, Step]] = []
        self.client_disconnected = asyncio.Event()
        self.disconnect_count = 0
        self._queue = _Queue(self.script.steps)
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self._ids = itertools.count(1)
        self.base_url = ""

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on *host*:*port* (0: any free port) and return the base URL ending in ``/v1``."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._models)
        # handler_cancellation: a handler is cancelled when its client goes away, which is how a
        # hanging answer learns of the disconnect (and how tests observe it).
        runner = web.AppRunner(
            app, handle_signals=False, shutdown_timeout=1.0, handler_cancellation=True
        )
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        bound_port = runner.addresses[0][1]
        self.base_url = f"http://{host}:{bound_port}/v1"
        return self.base_url

    async def stop(self) -> None:
        """Release hanging answers, close every connection and the listener."""
        self._stopping.set()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> ScriptedModelServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- handlers ---------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        if self.script.api_key is None:
            return True
        if request.headers.get("x-api-key") == self.script.api_key:
            return True
        return request.headers.get("Authorization") == f"Bearer {self.script.api_key}"

    async def _models(self, request: web.Request) -> web.StreamResponse:
        if "anthropic-version" in request.headers:
            return self._anthropic_models(request)
        if not self._authorized(request):
            return _error(401, "Incorrect API key provided.", "invalid_request_error")
        data = [
            {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "browy"}
            for m in self.script.models
        ]
        return web.json_response({"object": "list", "data": data}, dumps=_dumps)

    def _anthropic_models(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return _anthropic_error(401, "invalid x-api-key")
        data = [
            {
                "type": "model",
                "id": m,
                "display_name": m,
                "created_at": "2025-01-01T00:00:00Z",
                "lifecycle": "active",
            }
            for m in self.script.models
        ]
        first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
        body = {"data": data, "has_more": False, "first_id": first, "last_id": last}
        return web.json_response(body, dumps=_dumps)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return _error(400, "request body is not JSON", "invalid_request_error")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "'messages' is required", "invalid_request_error")
        self._record(body)
        if not self._authorized(request):
            return _error(401, "Incorrect API key provided.", "invalid_request_error")
        messages: list[dict[str, Any]] = body["messages"]
        step = self._answer_for(messages)
        if step is None:
            number = self.request_count
            return _error(
                500, f"scripted model server: script exhausted (no step left for request {number})"
            )
        status = step.fault("status")
        if status is not None and status.after_chunks == 0:
            headers = {}
            if status.retry_after is not None:
                headers["Retry-After"] = str(status.retry_after)
            kind = "invalid_request_error" if status.status < 500 else "server_error"
            message = status.message or f"scripted HTTP {status.status}"
            return _error(status.status, message, kind, headers)
        model = str(body.get("model", self.script.models[0]))
        try:
            if body.get("stream"):
                options = body.get("stream_options") or {}
                return await self._stream(request, step, model, bool(options.get("include_usage")))
            return await self._complete(request, step, model)
        except asyncio.CancelledError:
            # With handler_cancellation, aiohttp cancels the handler when its client goes away.
            self._note_disconnect()
            raise

    def extend(self, steps: Sequence[object]) -> None:
        """Append *steps* (raw step objects, as in a script's ``steps``) to the running script."""
        self._queue.extend([_parse_step(s, f"extend[{n}]") for n, s in enumerate(steps)])

    def _record(self, body: dict[str, Any]) -> None:
        self.request_count += 1
        if self.keep_bodies:
            self.requests.append(body)
            self.request_times.append(asyncio.get_running_loop().time())

    def _note_disconnect(self) -> None:
        if not self._stopping.is_set():
            self.disconnect_count += 1
            self.client_disconnected.set()

    def _answer_for(self, messages: list[dict[str, Any]]) -> Step | None:
        if self.script.mode == "echo":
            users = [m for m in messages if m.get("role") == "user"]
            return Step(text=_split_words(_message_text(users[-1]) if users else ""))
        step = self._queue.take(messages)
        if step is not None and step.faults:
            self.served_faults.append((asyncio.get_running_loop().time(), step))
        return step

    async def _complete(self, request: web.Request, step: Step, model: str) -> web.StreamResponse:
        delay = step.fault("delay")
        if delay is not None and delay.first_chunk_s:
            await asyncio.sleep(delay.first_chunk_s)
        if step.fault("hang") is not None:
            await self._stopping.wait()
        if step.fault("disconnect") is not None or self._stopping.is_set():
            _abort(request)
            return web.Response()  # aiohttp finds the transport gone and drops it quietly
        message: dict[str, Any] = {"role": "assistant", "content": "".join(step.text) or None}
        calls = [self._tool_call(c, n) for n, c in enumerate(step.tool_calls)]
        if calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": c["function"], **c["extra"]}
                for c in calls
            ]
        message.update(step.extra)
        completion = {
            "id": f"chatcmpl-browy{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": _finish(step), "logprobs": None}
            ],
            "usage": _usage(step),
        }
        return web.json_response(completion, dumps=_dumps)

    def _tool_call(self, spec: ToolCallSpec, n: int) -> dict[str, Any]:
        call_id = spec.id or f"call_browy{next(self._ids)}_{n}"
        function = {"name": spec.name, "arguments": spec.arguments_json()}
        return {"id": call_id, "function": function, "extra": spec.extra}

    def _deltas(self, step: Step) -> list[dict[str, Any]]:
        """The choice deltas of a streamed answer, in OpenAI's order."""
        deltas: list[dict[str, Any]] = [
            {"role": "assistant", "content": "", "refusal": None, **step.extra}
        ]
        deltas.extend({"content": piece} for piece in step.text)
        for n, spec in enumerate(step.tool_calls):
            call = self._tool_call(spec, n)
            head = {
                "index": n,
                "id": call["id"],
                "type": "function",
                "function": {"name": spec.name, "arguments": ""},
                **spec.extra,
            }
            deltas.append({"tool_calls": [head]})
            args = call["function"]["arguments"]
            for at in range(0, len(args), _ARGUMENT_FRAGMENT):
                fragment = {
                    "index": n,
                    "function": {"arguments": args[at : at + _ARGUMENT_FRAGMENT]},
                }
                deltas.append({"tool_calls": [fragment]})
        return deltas

    async def _stream(
        self, request: web.Request, step: Step, model: str, include_usage: bool
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        base: dict[str, Any] = {
            "id": f"chatcmpl-browy{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
        }
        if include_usage:
            base["usage"] = None
        events: list[dict[str, Any]] = [
            {**base, "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": None}]}
            for d in self._deltas(step)
        ]
        events.append(
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": _finish(step)}]}
        )
        if include_usage:
            events.append({**base, "choices": [], "usage": _usage(step)})
        delay = step.fault("delay") or Fault(kind="delay")
        try:
            for n, event in enumerate(events):
                if not await self._fault_point(request, response, step, n):
                    return response
                pause = delay.first_chunk_s if n == 0 else delay.between_chunks_s
                if pause:
                    await asyncio.sleep(pause)
                await response.write(b"data: " + orjson.dumps(event) + b"\n\n")
            if not await self._fault_point(request, response, step, len(events)):
                return response
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except ConnectionResetError:
            self._note_disconnect()
        return response

    # -- the Anthropic Messages API ------------------------------------------------------------

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return _anthropic_error(400, "request body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _anthropic_error(400, "messages: Field required")
        self._record(body)
        if not self._authorized(request):
            return _anthropic_error(401, "invalid x-api-key")
        if not isinstance(body.get("max_tokens"), int):
            return _anthropic_error(400, "max_tokens: Field required")
        step = self._answer_for(_openai_view(body))
        if step is None:
            number = self.request_count
            return _anthropic_error(
                500, f"scripted model server: script exhausted (no step left for request {number})"
            )
        status = step.fault("status")
        if status is not None and status.after_chunks == 0:
            headers = {}
            if status.retry_after is not None:
                headers["Retry-After"] = str(status.retry_after)
            message = status.message or f"scripted HTTP {status.status}"
            return _anthropic_error(status.status, message, headers)
        model = str(body.get("model", self.script.models[0]))
        try:
            if body.get("stream"):
                return await self._anthropic_stream(request, step, model)
            return await self._anthropic_complete(request, step, model)
        except asyncio.CancelledError:
            self._note_disconnect()
            raise

    def _anthropic_blocks(self, step: Step) -> list[dict[str, Any]]:
        """The finished content blocks of an answer: thinking, then text, then tool_use."""
        blocks: list[dict[str, Any]] = []
        for thought in step.thinking:
            if thought.redacted is not None:
                blocks.append({"type": "redacted_thinking", "data": thought.redacted})
            else:
                blocks.append(
                    {"type": "thinking", "thinking": thought.text, "signature": thought.signature}
                )
        if step.text:
            blocks.append({"type": "text", "text": "".join(step.text)})
        for n, spec in enumerate(step.tool_calls):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": spec.id or f"toolu_browy{next(self._ids)}_{n}",
                    "name": spec.name,
                    "input": spec.arguments_json(),  # a string until _anthropic_complete parses it
                }
            )
        return blocks

    def _message(self, step: Step, model: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"msg_browy{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": _anthropic_usage(step)["input_tokens"], "output_tokens": 1},
        }

    async def _anthropic_complete(
        self, request: web.Request, step: Step, model: str
    ) -> web.StreamResponse:
        delay = step.fault("delay")
        if delay is not None and delay.first_chunk_s:
            await asyncio.sleep(delay.first_chunk_s)
        if step.fault("hang") is not None:
            await self._stopping.wait()
        if step.fault("disconnect") is not None or self._stopping.is_set():
            _abort(request)
            return web.Response()
        blocks = self._anthropic_blocks(step)
        for block in blocks:
            if block["type"] == "tool_use":
                try:
                    block["input"] = orjson.loads(block["input"])
                except orjson.JSONDecodeError:
                    block["input"] = {}  # Anthropic always sends an object
        message = self._message(step, model, blocks)
        message["stop_reason"] = _stop_reason(step)
        message["usage"] = _anthropic_usage(step)
        return web.json_response(message, dumps=_dumps)

    def _anthropic_events(self, step: Step, model: str) -> list[dict[str, Any]]:
        """The SSE events of a streamed answer, in Anthropic's order."""
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": self._message(step, model, [])}
        ]
        for index, block in enumerate(self._anthropic_blocks(step)):
            kind = block["type"]
            deltas: list[dict[str, Any]] = []
            start: dict[str, Any]
            if kind == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": t}
                    for t in _split_words(block["thinking"])
                ]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            elif kind == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": piece} for piece in step.text]
            elif kind == "tool_use":
                start = {**block, "input": {}}
                args: str = block["input"]
                deltas = [{"type": "input_json_delta", "partial_json": ""}]
                deltas.extend(
                    {"type": "input_json_delta", "partial_json": args[at : at + _ARGUMENT_FRAGMENT]}
                    for at in range(0, len(args), _ARGUMENT_FRAGMENT)
                )
            else:  # redacted_thinking: whole in its start event
                start = block
            events.append({"type": "content_block_start", "index": index, "content_block": start})
            if index == 0:
                events.append({"type": "ping"})
            events.extend(
                {"type": "content_block_delta", "index": index, "delta": d} for d in deltas
            )
            events.append({"type": "content_block_stop", "index": index})
        usage = _anthropic_usage(step)
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": _stop_reason(step), "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            }
        )
        events.append({"type": "message_stop"})
        return events

    async def _anthropic_stream(
        self, request: web.Request, step: Step, model: str
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        events = self._anthropic_events(step, model)
        delay = step.fault("delay") or Fault(kind="delay")
        try:
            for n, event in enumerate(events):
                if not await self._fault_point(request, response, step, n, anthropic=True):
                    return response
                pause = delay.first_chunk_s if n == 0 else delay.between_chunks_s
                if pause:
                    await asyncio.sleep(pause)
                await response.write(_sse(event))
            if not await self._fault_point(request, response, step, len(events), anthropic=True):
                return response
            await response.write_eof()
        except ConnectionResetError:
            self._note_disconnect()
        return response

    async def _fault_point(
        self,
        request: web.Request,
        response: web.StreamResponse,
        step: Step,
        sent: int,
        *,
        anthropic: bool = False,
    ) -> bool:
        """Inject the faults due after *sent* chunks; return whether to go on streaming.

        A ``status`` fault with ``after_chunks`` 0 was answered as an HTTP error before this.
        """
        for fault in step.faults:
            if fault.after_chunks != sent or (fault.kind == "status" and sent == 0):
                continue
            if fault.kind == "hang":
                await self._stopping.wait()  # the handler is cancelled if the client goes
                _abort(request)
                return False
            if fault.kind == "disconnect":
                _abort(request)
                return False
            if fault.kind == "status" and anthropic:
                message = fault.message or f"scripted HTTP {fault.status}"
                await response.write(_sse(_anthropic_error_body(fault.status, message)))
                await response.write_eof()
                return False
            if fault.kind == "status":
                # What OpenAI does when a stream fails after its 200: an error event, then the end.
                error = {
                    "message": fault.message or f"scripted HTTP {fault.status}",
                    "type": "server_error",
                    "param": None,
                    "code": fault.status,
                }
                await response.write(b"data: " + orjson.dumps({"error": error}) + b"\n\n")
                await response.write_eof()
                return False
        return True


def _dumps(obj: object) -> str:
    return orjson.dumps(obj).decode()


def _error(
    status: int, message: str, kind: str = "server_error", headers: dict[str, str] | None = None
) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return web.json_response(body, status=status, headers=headers, dumps=_dumps)


def _anthropic_error_body(status: int, message: str) -> dict[str, Any]:
    kind = _ANTHROPIC_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )
    return {"type": "error", "error": {"type": kind, "message": message}}


def _anthropic_error(
    status: int, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    body = _anthropic_error_body(status, message)
    return web.json_response(body, status=status, headers=headers, dumps=_dumps)


def _sse(event: Mapping[str, Any]) -> bytes:
    return b"event: " + str(event["type"]).encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def _openai_view(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic request's messages as OpenAI chat messages, for the step rules (and echo):
    ``system`` becomes a system message, a user message of tool_result blocks a tool message."""
    out: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        out.append({"role": "system", "content": system})
    for message in body["messages"]:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if message.get("role") == "user" and results and len(results) == len(blocks):
            out.append({"role": "tool", "content": ""})
        else:
            out.append({"role": message.get("role"), "content": content})
    return out


def _stop_reason(step: Step) -> str:
    finish = _finish(step)
    return _STOP_REASONS.get(finish, finish)


def _anthropic_usage(step: Step) -> dict[str, int]:
    usage = _usage(step)
    return {
        "input_tokens": usage.get("input_tokens", usage.get("prompt_tokens", 10)),
        "output_tokens": usage.get("output_tokens", usage.get("completion_tokens", 1)),
    }


def _finish(step: Step) -> str:
    return step.finish_reason or ("tool_calls" if step.tool_calls else "stop")


def _usage(step: Step) -> dict[str, int]:
    if step.usage is not None:
        return dict(step.usage)
    completion = len(step.text) + sum(len(c.arguments_json()) // 4 for c in step.tool_calls)
    return {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        # abort(), not close(): the client must see a broken chunked body, not a clean end.
        transport.abort()


# -- command line ---------------------------------------------------------------------------


async def _serve(script: Script, host: str, port: int, out: TextIO) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    server = ScriptedModelServer(script)
    try:
        url = await server.start(host, port)
        out.write(url + "\n")
        out.flush()
        await stop.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await server.stop()


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """``browy model-server [--script FILE] [--host H] [--port N]``.

    Prints the base URL (ending in ``/v1``) on one line once the server accepts connections, then
    serves until SIGINT or SIGTERM. Without ``--script`` it runs in echo mode. Returns the exit
    status (2 for a bad script).
    """
    parser = argparse.ArgumentParser(
        prog="browy model-server",
        description="A scripted OpenAI-compatible chat-completions server (no key needed).",
    )
    parser.add_argument("--script", type=Path, help="JSON script (default: echo mode)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    args = parser.parse_args(argv)
    try:
        script = Script.echo() if args.script is None else load_script(args.script)
    except (OSError, orjson.JSONDecodeError, ScriptError) as exc:
        print(f"browy model-server: cannot load {args.script}: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(script, args.host, args.port, out or sys.stdout))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
