"""A scripted OpenAI- and Anthropic-compatible model server: ``browy model-server``.

It lets a user check their setup without a key, and it is what the tests, the offline demo and the
fault-injection harness talk to through the real ``openai`` and ``anthropic`` clients. It speaks the
wire format of the OpenAI API as the SDK expects it (``POST /v1/chat/completions``, streaming or
not, and ``GET /v1/models``: :mod:`nativehost.demo.model_server_openai` describes and builds its
bodies) and the Anthropic Messages API (``POST /v1/messages``, and ``GET /v1/models`` with an
``anthropic-version`` header: :mod:`nativehost.demo.model_server_anthropic`); the same steps and
faults answer both.

The script itself (its format: steps with text, tool calls, thinking, usage, faults and matching
rules) and the rule that picks the step answering a request are described in
:mod:`nativehost.demo.model_script`. This module is the HTTP side: routing, checks, and the command
line; the scripted faults are played on the wire by :mod:`nativehost.demo.model_server_faults`.

Observability for tests: :attr:`ScriptedModelServer.requests` holds every request body received,
:attr:`~ScriptedModelServer.request_times` their arrival (loop time) (both empty with
``keep_bodies=False``, for long runs; ``request_count`` always counts),
:attr:`~ScriptedModelServer.served_faults` the steps with a fault that a request reached, and
:attr:`~ScriptedModelServer.client_disconnected` is set when a client goes away before its
response was complete (``disconnect_count`` counts them). A running server takes more steps with
:meth:`~ScriptedModelServer.extend` (a long run scripts each turn just before it starts) and
forgets the steps of a turn that ended early with :meth:`~ScriptedModelServer.drop_steps`.

The server binds 127.0.0.1 by default.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

import orjson
from aiohttp import web

from nativehost.demo import model_server_anthropic as anthropic_api
from nativehost.demo import model_server_openai as openai_api
from nativehost.demo.model_script import (
    Script,
    ScriptError,
    Step,
    StepQueue,
    load_script,
    message_text,
    parse_step,
    split_words,
)
from nativehost.demo.model_server_faults import FaultPlayer

__all__ = ["ScriptedModelServer", "main"]

log = logging.getLogger(__name__)


class _ErrorResponse(Protocol):
    """Makes an API's error response (:func:`_error`, :func:`_anthropic_error`)."""

    def __call__(
        self, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> web.Response: ...


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
        self._queue = StepQueue(self.script.steps)
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self._player = FaultPlayer(self._stopping, self._note_disconnect)
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
            if not self._authorized(request):
                return _anthropic_error(401, "invalid x-api-key")
            return _json(anthropic_api.models_body(self.script.models))
        if not self._authorized(request):
            return _error(401, "Incorrect API key provided.")
        return _json(openai_api.models_body(self.script.models))

    async def _read(
        self, request: web.Request, error: _ErrorResponse, no_messages: str, bad_key: str
    ) -> dict[str, Any] | web.Response:
        """The request's body, counted (and kept), or the *error* response that answers instead:
        the body is not JSON, it has no ``messages`` list, or the key is wrong."""
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return error(400, "request body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return error(400, no_messages)
        self._record(body)
        if not self._authorized(request):
            return error(401, bad_key)
        return body

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(
            request, _error, "'messages' is required", "Incorrect API key provided."
        )
        if not isinstance(body, dict):
            return body
        messages: list[dict[str, Any]] = body["messages"]
        step = self._step_or_error(messages, _error)
        if not isinstance(step, Step):
            return step
        model = str(body.get("model", self.script.models[0]))
        try:
            if body.get("stream"):
                options = body.get("stream_options") or {}
                include_usage = bool(options.get("include_usage"))
                chunks = openai_api.chunks(step, model, self._ids, include_usage)
                events = [openai_api.data_event(c) for c in chunks]
                return await self._player.stream(
                    request, step, events, error_event=openai_api.error_event, last=openai_api.DONE
                )
            if not await self._player.ready_to_answer(request, step):
                return web.Response()  # aiohttp finds the transport gone and drops it quietly
            return _json(openai_api.completion(step, model, self._ids))
        except asyncio.CancelledError:
            # With handler_cancellation, aiohttp cancels the handler when its client goes away.
            self._note_disconnect()
            raise

    # -- the Anthropic Messages API ------------------------------------------------------------

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(
            request, _anthropic_error, "messages: Field required", "invalid x-api-key"
        )
        if not isinstance(body, dict):
            return body
        if not isinstance(body.get("max_tokens"), int):
            return _anthropic_error(400, "max_tokens: Field required")
        step = self._step_or_error(anthropic_api.openai_view(body), _anthropic_error)
        if not isinstance(step, Step):
            return step
        model = str(body.get("model", self.script.models[0]))
        try:
            if body.get("stream"):
                events = anthropic_api.events(step, model, self._ids)
                sse = [anthropic_api.sse(e) for e in events]
                return await self._player.stream(
                    request, step, sse, error_event=anthropic_api.error_event
                )
            if not await self._player.ready_to_answer(request, step):
                return web.Response()
            return _json(anthropic_api.message_body(step, model, self._ids))
        except asyncio.CancelledError:
            self._note_disconnect()
            raise

    def extend(self, steps: Sequence[object]) -> None:
        """Append *steps* (raw step objects, as in a script's ``steps``) to the running script."""
        self._queue.extend([parse_step(s, f"extend[{n}]") for n, s in enumerate(steps)])

    def drop_steps(self, session: str, user_contains: str) -> int:
        """Forget the steps of *session* matching *user_contains* that no request took (see
        :meth:`StepQueue.drop`); returns how many."""
        return self._queue.drop(session, user_contains)

    def pending_steps(self) -> list[Step]:
        """The steps no request has taken yet."""
        return self._queue.pending()

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
            # The user's words: the host adds its context block after a blank line.
            words = message_text(users[-1]).split("\n\n", 1)[0] if users else ""
            return Step(text=split_words(words))
        step = self._queue.take(messages)
        if step is not None and step.faults:
            self.served_faults.append((asyncio.get_running_loop().time(), step))
        return step

    def _step_or_error(
        self, messages: list[dict[str, Any]], error: _ErrorResponse
    ) -> Step | web.Response:
        """The step answering *messages*, or the *error* response that answers instead: the
        script is exhausted, or the step's ``status`` fault is due before the first chunk."""
        step = self._answer_for(messages)
        if step is None:
            number = self.request_count
            message = f"scripted model server: script exhausted (no step left for request {number})"
            return error(500, message)
        status = step.fault("status")
        if status is not None and status.after_chunks == 0:
            headers = {}
            if status.retry_after is not None:
                headers["Retry-After"] = str(status.retry_after)
            return error(status.status, status.message or f"scripted HTTP {status.status}", headers)
        return step


def _dumps(obj: object) -> str:
    return orjson.dumps(obj).decode()


def _json(
    body: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.json_response(body, status=status, headers=headers, dumps=_dumps)


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return _json(openai_api.error_body(status, message), status, headers)


def _anthropic_error(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    return _json(anthropic_api.error_body(status, message), status, headers)


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
