"""How the scripted model server sends a step's answer: on time, or as its faults say.

A :class:`~nativehost.demo.model_script.Step` may carry faults (:mod:`nativehost.demo.model_script`
describes them); :class:`StepDelivery` plays them over HTTP, for both APIs:

- a non-streamed answer (:meth:`StepDelivery.ready_to_answer`) waits the first-chunk delay, hangs
  until the server stops on ``hang``, and is never sent on ``disconnect`` (the connection is
  aborted);
- a streamed answer (:meth:`StepDelivery.stream`) waits its delays before the first event and
  between events, and after *n* events hangs, aborts the connection, or ends the stream with an
  error event in the API's shape (a ``status`` fault after the first chunk; one due before it was
  answered as an HTTP error by the server).

Aborting is ``transport.abort()``, not ``close()``: the client must see a broken chunked body, not a
clean end. A client that goes away is reported to the server (``on_disconnect``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web

from nativehost.demo import model_server_anthropic as anthropic_api
from nativehost.demo import model_server_openai as openai_api
from nativehost.demo.model_script import Fault, Step

__all__ = ["StepDelivery", "abort"]


def abort(request: web.Request) -> None:
    """Cut *request*'s connection so the client sees a broken response."""
    transport = request.transport
    if transport is not None:
        # abort(), not close(): the client must see a broken chunked body, not a clean end.
        transport.abort()


class StepDelivery:
    """Sends answers with their step's delays and faults; *stopping* releases hanging answers,
    *on_disconnect* is called when a client went away during a stream."""

    def __init__(self, stopping: asyncio.Event, on_disconnect: Callable[[], None]) -> None:
        self._stopping = stopping
        self._on_disconnect = on_disconnect

    async def ready_to_answer(self, request: web.Request, step: Step) -> bool:
        """Play the faults of a non-streamed answer (delay, hang, disconnect); return whether to
        send it (else the connection is aborted)."""
        delay = step.fault("delay")
        if delay is not None and delay.first_chunk_s:
            await asyncio.sleep(delay.first_chunk_s)
        if step.fault("hang") is not None:
            await self._stopping.wait()
        if step.fault("disconnect") is not None or self._stopping.is_set():
            abort(request)
            return False
        return True

    async def stream(
        self, request: web.Request, step: Step, events: list[bytes], *, anthropic: bool = False
    ) -> web.StreamResponse:
        """Stream the encoded SSE *events* with the step's delays and faults, then end the stream
        (OpenAI's with ``data: [DONE]``)."""
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        delay = step.fault("delay") or Fault(kind="delay")
        try:
            for n, event in enumerate(events):
                if not await self._fault_point(request, response, step, n, anthropic=anthropic):
                    return response
                pause = delay.first_chunk_s if n == 0 else delay.between_chunks_s
                if pause:
                    await asyncio.sleep(pause)
                await response.write(event)
            if await self._fault_point(request, response, step, len(events), anthropic=anthropic):
                if not anthropic:
                    await response.write(b"data: [DONE]\n\n")
                await response.write_eof()
        except ConnectionResetError:
            self._on_disconnect()
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
                abort(request)
                return False
            if fault.kind == "disconnect":
                abort(request)
                return False
            if fault.kind == "status":
                message = fault.message or f"scripted HTTP {fault.status}"
                error_event = anthropic_api.error_event if anthropic else openai_api.error_event
                await response.write(error_event(fault.status, message))
                await response.write_eof()
                return False
        return True
