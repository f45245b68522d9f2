"""One ``chat.send`` on a Copilot session: :class:`CopilotRun` (made by
:meth:`actors.model.copilot_gateway.CopilotGateway.open_run`).

The SDK's callbacks (session events, Browy's tool handlers) put run events
(:mod:`actors.model.copilot_events`) on the run; the turn reads them with :meth:`CopilotRun.next`,
which also notices a CLI that is gone (or silent too long) and says so as a ``RunFailed`` — so no
turn waits on a dead CLI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from copilot import CopilotSession
from copilot._jsonrpc import JsonRpcError, ProcessExitedError

from actors.model.copilot_events import RunEvent, RunFailed, ToolWanted
from actors.model.types import ModelError

__all__ = ["POLL_S", "SDK_ERRORS", "CopilotRun"]

log = logging.getLogger(__name__)

#: What the SDK raises when the CLI refuses a request or is gone.
SDK_ERRORS = (JsonRpcError, ProcessExitedError, OSError, RuntimeError, TimeoutError)
#: A run checks this often, while it waits, that the CLI still runs.
POLL_S = 0.25


class CopilotRun:
    """One ``chat.send`` on a Copilot session: send the prompt, then read :meth:`next` until a
    :class:`~actors.model.copilot_events.RunEnded` or ``RunFailed``; :meth:`close` at the end."""

    def __init__(
        self,
        conversation: str,
        *,
        alive: Callable[[], bool],
        idle_timeout: float,
        on_close: Callable[[], None],
    ) -> None:
        self.conversation = conversation
        self._alive = alive
        self._idle = idle_timeout
        self._on_close = on_close
        # Unbounded: filled by the SDK's callbacks, which must not block; a run holds one turn's
        # events, drained as they come.
        self._events: asyncio.Queue[RunEvent] = asyncio.Queue()
        self.session: CopilotSession | None = None
        #: True when the chat's Copilot session was created for this run (no earlier context).
        self.fresh = False
        self._closed = False

    def put(self, event: RunEvent) -> None:
        if not self._closed:
            self._events.put_nowait(event)

    async def send(self, prompt: str) -> None:
        assert self.session is not None
        try:
            await self.session.send(prompt)
        except SDK_ERRORS as exc:
            log.info("copilot send failed: %r", exc)
            raise ModelError(
                "MODEL_ERROR", "The Copilot CLI did not take the message.", retryable=True
            ) from None

    async def next(self) -> RunEvent:
        """The next event; a CLI that is gone, or silent for the idle timeout, is ``RunFailed``."""
        idle = self._idle
        waited = 0.0
        while True:
            try:
                async with asyncio.timeout(POLL_S):
                    return await self._events.get()
            except TimeoutError:
                waited += POLL_S
            if not self._alive():
                return RunFailed(
                    error=ModelError(
                        "MODEL_ERROR",
                        "The Copilot CLI stopped in the middle of the answer. Send the message "
                        "again: the next one starts it anew.",
                        retryable=True,
                    )
                )
            if waited >= idle:
                return RunFailed(
                    error=ModelError(
                        "MODEL_ERROR",
                        f"GitHub Copilot stopped responding (nothing for {idle:g} s).",
                        retryable=True,
                    )
                )

    async def abort(self) -> None:
        """Stop Copilot's loop (the SDK's ``abort``); never raises."""
        if self.session is None or not self._alive():
            return
        try:
            await self.session.abort()
        except SDK_ERRORS as exc:
            log.info("copilot abort failed: %r", exc)

    def close(self) -> None:
        self._closed = True
        while not self._events.empty():
            event = self._events.get_nowait()
            if isinstance(event, ToolWanted) and not event.reply.done():
                event.reply.cancel()
        self._on_close()
