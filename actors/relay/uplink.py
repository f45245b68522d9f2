"""Uplink: the relay's link to the daemon — connect, handshake, forward, reconnect.

Every rule about what to forward, hold, answer or swallow lives in the pure
:class:`actors.relay.relay_core.RelayCore`; this actor does the I/O around it (protocol.md section
6):

- The first connection and every reconnection run in a connector task driven by a
  :class:`actors.runtime.backoff.ReconnectPlan`: jittered exponential backoff within a time
  budget. When nothing answers, the daemon is started (``start_daemon``, at most every 3 s; the
  daemon's own lock makes several relays starting at once produce exactly one).
- A handshake refused for a version mismatch is reported clearly in the log and retried: the
  daemon that refused a newer relay exits when idle, and the next attempt starts a current one.
- When the bound runs out the relay gives up: ``on_give_up`` is called and the process exits,
  so the extension's own reconnect takes over.

Restarts: the :class:`RelayCore` (registrations, open turns) belongs to the relay process, not
to an incarnation, so a supervisor can restart a crashed Uplink without losing the panels'
registrations. A new incarnation that finds the core linked treats the old link as dropped
(ending the turns in flight, exactly as a link drop would) and reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from actors.link.link_stream import LinkBroken, LinkRefusedError, LinkStream
from actors.relay.relay_core import (
    Action,
    LinkState,
    NoteEnded,
    RelayCore,
    ToDaemon,
    ToDaemonControl,
    ToExtension,
)
from actors.relay.stdio_framer import WriteFrame
from actors.runtime.actor import Actor
from actors.runtime.backoff import FIRST_CONNECT_BUDGET_S, RECONNECT_BUDGET_S, ReconnectPlan
from actors.runtime.ref import Overflow, Ref
from messages.link import LinkControl, LinkData

__all__ = ["ExtensionClosed", "FromExtension", "Uplink"]

log = logging.getLogger(__name__)

#: What a connect attempt raises when no link came of it: retried within the budget.
_NO_LINK = (OSError, TimeoutError, LinkBroken, LinkRefusedError)


@dataclass(frozen=True, slots=True, kw_only=True)
class FromExtension:
    """A frame Chrome sent (its JSON bytes, untouched)."""

    payload: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionClosed:
    """Chrome closed the port (EOF on stdin)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _LinkUp:
    stream: LinkStream


@dataclass(frozen=True, slots=True, kw_only=True)
class _LinkFrame:
    stream: LinkStream
    payload: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class _LinkDown:
    stream: LinkStream | None
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _GiveUp:
    reason: str


UplinkMsg = FromExtension | ExtensionClosed | _LinkUp | _LinkFrame | _LinkDown | _GiveUp


class Uplink(Actor[UplinkMsg]):
    mailbox_size = 512
    overflow = Overflow.WAIT

    def __init__(
        self,
        *,
        core: RelayCore,
        framer: Callable[[], Ref[WriteFrame]],
        self_ref: Callable[[], Ref[UplinkMsg]],
        connect: Callable[[], Awaitable[LinkStream]],
        start_daemon: Callable[[], None],
        on_give_up: Callable[[str], None],
        reconnect_budget_s: float = RECONNECT_BUDGET_S,
        first_connect_budget_s: float = FIRST_CONNECT_BUDGET_S,
        note_ended: Callable[[str, str | None], None] | None = None,
    ) -> None:
        self.core = core
        self._framer = framer
        self._self = self_ref
        self._connect = connect
        self._start_daemon = start_daemon
        self._on_give_up = on_give_up
        self._reconnect_budget_s = reconnect_budget_s
        self._first_budget_s = first_connect_budget_s
        self._note_ended = note_ended
        self._stream: LinkStream | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._connecting = False

    async def on_start(self) -> None:
        if self.core.state is LinkState.LINKED:
            # An earlier incarnation crashed while linked: its link is gone with it.
            await self._carry_out(self.core.link_down())
        if self.core.state is LinkState.CONNECTING:
            self._start_connector(self._first_budget_s)
        elif self.core.state is LinkState.OUTAGE:
            self._start_connector(self._reconnect_budget_s)

    async def _tell_self(self, msg: UplinkMsg) -> None:
        await self._self().tell(msg)

    # -- owned tasks ------------------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[None], name: str) -> None:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _start_connector(self, budget_s: float) -> None:
        if self._connecting:
            return
        self._connecting = True
        self._spawn(self._connector(budget_s), "uplink-connect")

    async def _connector(self, budget_s: float) -> None:
        # The common case — a daemon already running — connects at the first try; the plan
        # (delays, budget, daemon starts) only begins when that try fails.
        try:
            stream = await self._connect()
        except _NO_LINK as exc:
            log.info("first connect attempt failed (%s); retrying with backoff", exc)
        else:
            self._connecting = False
            await self._tell_self(_LinkUp(stream=stream))
            return
        await self._connect_with_backoff(budget_s)

    async def _connect_with_backoff(self, budget_s: float) -> None:
        plan = ReconnectPlan(budget_s=budget_s, now=time.monotonic())
        while True:
            try:
                stream = await self._connect()
            except LinkRefusedError as exc:
                log.error("the daemon refused this relay: %s (will retry)", exc)
                error: Exception = exc
            except (OSError, TimeoutError, LinkBroken) as exc:
                error = exc
                if plan.should_start_daemon(time.monotonic()):
                    log.info("no daemon answers (%s); starting one", exc)
                    with contextlib.suppress(Exception):
                        await asyncio.to_thread(self._start_daemon)
            else:
                break
            delay = plan.next_delay(time.monotonic())
            if delay is None:
                self._connecting = False
                reason = f"no daemon after {budget_s:.0f} s: {type(error).__name__}: {error}"
                await self._tell_self(_GiveUp(reason=reason))
                return
            await asyncio.sleep(delay)
        self._connecting = False
        log.info("link up after %d attempt(s)", plan.failures + 1)
        await self._tell_self(_LinkUp(stream=stream))

    async def _reader(self, stream: LinkStream) -> None:
        reason = "closed by the daemon"
        try:
            while True:
                env = await stream.recv()
                if env is None:
                    break
                if isinstance(env, LinkData):
                    await self._tell_self(_LinkFrame(stream=stream, payload=env.payload))
                elif isinstance(env, LinkControl):
                    log.info("daemon control: %s %s", env.op, env.args)
        except (LinkBroken, OSError) as exc:
            reason = f"link failed: {exc}"
        with contextlib.suppress(Exception):
            await self._tell_self(_LinkDown(stream=stream, reason=reason))

    # -- messages ---------------------------------------------------------------------------------

    async def handle(self, msg: UplinkMsg) -> Any:
        if isinstance(msg, FromExtension):
            await self._carry_out(self.core.from_extension(msg.payload))
        elif isinstance(msg, _LinkFrame):
            if msg.stream is self._stream:
                await self._carry_out(self.core.from_daemon(msg.payload, now=time.monotonic()))
        elif isinstance(msg, _LinkUp):
            if self.core.state is LinkState.CLOSED:
                msg.stream.close()
                return None
            self._stream = msg.stream
            self._spawn(self._reader(msg.stream), "uplink-reader")
            await self._carry_out(self.core.link_up(now=time.monotonic()))
        elif isinstance(msg, _LinkDown):
            if msg.stream is not self._stream:
                return None
            log.warning("link down: %s; reconnecting", msg.reason)
            self._drop_stream()
            await self._carry_out(self.core.link_down())
            self._start_connector(self._reconnect_budget_s)
        elif isinstance(msg, _GiveUp):
            log.error("giving up: %s", msg.reason)
            self.core.give_up()
            self._on_give_up(msg.reason)
        elif isinstance(msg, ExtensionClosed):
            self.core.give_up()
            self._drop_stream()
            self._on_give_up("extension closed the port")
        return None

    async def _carry_out(self, actions: list[Action]) -> None:
        # With a NoteEnded among them, the frames before it must be written before the mark is
        # kept: a mark for an end the panel never got would swallow the only end it gets.
        confirm = any(isinstance(a, NoteEnded) for a in actions)
        written = True
        for action in actions:
            if isinstance(action, ToExtension):
                if not confirm:
                    await self._framer().tell(WriteFrame(payload=action.payload))
                    continue
                try:
                    ok = await self._framer().ask(WriteFrame(payload=action.payload), timeout=5.0)
                except Exception as exc:
                    log.warning("could not write a turn's end to Chrome: %s", exc)
                    ok = False
                written = written and ok is not False
            elif isinstance(action, NoteEnded):
                if written and self._note_ended is not None:
                    self._note_ended(action.session_id, action.turn_id)
            elif self._stream is None:
                continue
            elif isinstance(action, ToDaemon):
                self._stream.send(LinkData(action.payload))
            elif isinstance(action, ToDaemonControl):
                self._stream.send(LinkControl(op=action.op, args=dict(action.args)))
        if self._stream is not None and any(
            isinstance(a, ToDaemon | ToDaemonControl) for a in actions
        ):
            try:
                await self._stream.drain()
            except (ConnectionError, OSError) as exc:
                # The reader sees the same failure and reports _LinkDown.
                log.warning("link write failed: %s", exc)

    def _drop_stream(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    async def on_stop(self) -> None:
        await self._teardown()

    async def on_failure(self, exc: BaseException) -> None:
        await self._teardown()

    async def _teardown(self) -> None:
        self._drop_stream()
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        for task in list(self._tasks):
            if task is not current:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
