"""How the scripted model server (:mod:`nativehost.demo.model_server`) sends an answer: with the
step's delays and faults, at the moment the script says.

:class:`FaultPlayer` plays a :class:`~nativehost.demo.model_script.Step`'s faults (their format is
described in :mod:`nativehost.demo.model_script`) on the wire, for either API:

- before a non-streamed answer (:meth:`~FaultPlayer.ready_to_answer`): ``delay`` (its
  ``first_chunk_s``), ``hang`` (until the server stops or the client goes away), ``disconnect``;
- while streaming SSE events (:meth:`~FaultPlayer.stream`): after each event the faults whose
  ``after_chunks`` it reaches: ``hang``, ``disconnect`` (the connection is aborted, so the client
  sees a broken chunked body, not a clean end), or a ``status`` sent the way the API reports an
  error mid-stream; ``delay`` paces the events (``first_chunk_s``, then ``between_chunks_s``).

A ``status`` fault with ``after_chunks`` 0 is not played here: the server answers it as an HTTP
error before any event. A client that goes away is reported through ``on_disconnect``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from aiohttp import web

from nativehost.demo.model_script import Fault, Step

__all__ = ["FaultPlayer", "abort"]


class FaultPlayer:
    """Sends answers with their steps' faults. *stopping* is set when the server stops (it ends
    every hang); *on_disconnect* is called when a client goes away mid-answer."""

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
        self,
        request: web.Request,
        step: Step,
        events: Sequence[bytes],
        *,
        error_event: Callable[[int, str], bytes],
        last: bytes = b"",
    ) -> web.StreamResponse:
        """Stream the encoded SSE *events* with the step's delays and faults, then end the stream
        with *last* (OpenAI's ``data: [DONE]``). *error_event*: the API's mid-stream error."""
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        delay = step.fault("delay") or Fault(kind="delay")
        try:
            for n, event in enumerate(events):
                if not await self._fault_point(request, response, step, n, error_event):
                    return response
                pause = delay.first_chunk_s if n == 0 else delay.between_chunks_s
                if pause:
                    await asyncio.sleep(pause)
                await response.write(event)
            if await self._fault_point(request, response, step, len(events), error_event):
                if last:
                    await response.write(last)
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
        error_event: Callable[[int, str], bytes],
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
                await response.write(error_event(fault.status, message))
                await response.write_eof()
                return False
        return True


def abort(request: web.Request) -> None:
    """Break the request's connection."""
    transport = request.transport
    if transport is not None:
        # abort(), not close(): the client must see a broken chunked body, not a clean end.
        transport.abort()
