"""One agent turn: the model loop, tool calls, streaming, and exactly one end.

A turn runs as its own task (launched by the TurnScheduler), never inside an actor's handler, so
a slow turn never blocks the actors that route the others (architecture.md section 2).

The loop (architecture.md section 4):

1. ``event.activity status.thinking``; the turn pins the (connection, tab) it works on — the
   session's inspected tab, else the active tab (of the panel's window in v2) — and keeps it unless
   the model switches tabs (protocol.md section 3b).
2. The user's text goes to the model with a browser-context block (title, URL, a fresh page
   snapshot when the session may drive tabs). Page content is marked as untrusted data.
3. Streamed text -> ``chat.delta``. Each tool call: ``chat.tool_call``, the tool runs, then
   ``chat.tool_result`` (v2 adds ``outcome``); the result goes back to the model.
4. The loop ends when the model answers without tool calls, at the iteration cap, on cancel or on
   an error.

How a turn ends (protocol.md section 3b) — always exactly once, whatever happens:
``chat.done`` (all the turn's text, parts joined with a blank line) then ``status.idle``; or
``chat.error`` then ``status.error``. A user's cancel is a ``chat.done`` with the partial text. A
lost connection ends in ``CONNECTION_LOST`` (journaled; the panel is gone). v2 adds
``control.release``. The journal records the turn before each action it describes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from actors.agent.system_prompt import NO_BROWSER_CONTEXT, SYSTEM_PROMPT
from actors.agent.tool_turn import run_one_tool
from actors.agent.turn_parts import TurnDeps, TurnRequest, TurnState
from actors.agent.turn_queue import CancelReason, TurnTicket
from actors.agent.turn_scheduler import TurnEnded
from actors.agent.turn_step import run_tool_step
from actors.agent.wire_shapes import split_delta
from actors.model.types import ModelError
from actors.store.chat import Chat
from actors.store.chat_turns import TurnStateError
from actors.tools.masking import masked_tool_calls
from messages.errors import BrowyError, ErrorCode, v1_chat_error_code
from messages.wire_base import OutboundModel
from messages.wire_outbound import (
    ChatDelta,
    ChatDone,
    ChatError,
    ChatToolResult,
    EventActivity,
    Usage,
)

__all__ = ["run_turn"]

log = logging.getLogger(__name__)

#: The model sees this many recent turns of a chat; the last FULL_TURNS whole, older ones with
#: their page context left out and tool results trimmed ("recent-actions memory").
HISTORY_TURNS = 16
FULL_TURNS = 2


class _ChatRef:
    """The turn's chat, looked up in the store again whenever the store has let it go: the
    store may close an idle chat (before this turn's first record, or once it ended), and
    opens it again on demand. A running chat is never closed, so during the turn this is one
    attribute check, not a lookup of the chat's path at every record."""

    def __init__(self, deps: TurnDeps, scope: str, chat_id: str) -> None:
        self._deps, self._scope, self._id = deps, scope, chat_id
        self._chat: Chat | None = None

    def __getattr__(self, name: str) -> Any:
        chat, store = self._chat, self._deps.store
        if chat is None or not store.still_open(chat):
            chat = self._chat = store.chat(self._scope, self._id)
        return getattr(chat, name)


#: How long a turn cancelled while it is sending its end still waits for that end to go out.
END_GRACE_S = 5.0


async def _finished(deps: TurnDeps, ticket: TurnTicket) -> None:
    """Tell the scheduler the turn ended, so the next one may start."""
    try:
        await deps.scheduler.tell_again(TurnEnded(turn_id=ticket.turn_id))
    except Exception:  # the scheduler is stopping: nothing to start next
        log.debug("scheduler gone at the end of turn %s", ticket.turn_id)


async def run_turn(deps: TurnDeps, req: TurnRequest) -> None:
    """Run one turn to its single end. Never raises (but re-raises cancellation at the end)."""
    ticket = req.ticket
    sid = ticket.session_id
    state = TurnState()
    emit: Callable[[OutboundModel], Awaitable[bool]] = lambda m: deps.outbox.emit(sid, m)  # noqa: E731
    chat = _ChatRef(deps, req.scope, sid)
    outcome: tuple[str, ErrorCode | None, str] = ("done", None, "")
    cancelled: asyncio.CancelledError | None = None
    try:
        await emit(EventActivity(session_id=sid, event="status.thinking"))
        step = _loop if req.tool is None else run_one_tool
        if req.tool is None and getattr(deps.models.model(), "runs_own_loop", False):
            # GitHub Copilot loops by itself; its tool calls still run through run_tool_step.
            # (Imported here: the Copilot SDK is large and most daemons never need it.)
            from actors.agent.copilot_turn import run_copilot_turn

            step = run_copilot_turn
        await step(deps, req, state, chat, emit)
    except asyncio.CancelledError as exc:
        cancelled = exc
        reason = deps.board.cancel_reason(ticket.turn_id)
        if reason is CancelReason.USER:
            outcome = ("cancelled", None, "")
        elif reason is CancelReason.CONNECTION_LOST:
            outcome = ("error", ErrorCode.CONNECTION_LOST, "The browser connection was lost.")
        else:
            outcome = ("error", ErrorCode.INTERNAL, "The turn was stopped inside the host.")
    except ModelError as exc:
        outcome = ("error", exc.code, exc.wire_message)
    except BrowyError as exc:
        outcome = ("error", exc.code, exc.wire_message)
    except Exception:
        log.exception("turn %s failed", ticket.turn_id)
        outcome = ("error", ErrorCode.INTERNAL, "The turn failed inside the host; see the log.")
    # The end is the turn's last duty: a cancel that arrives while it is journaled and sent (the
    # scheduler stopping, say, during the end's fsync) must not cost the panel its one end. The
    # end runs to completion; the cancel is re-raised after it.
    # A second cancel, or an end still not out after END_GRACE_S, gives up on it (a stopping
    # daemon does not wait forever; the journal then has the end for the next registration).
    ending = asyncio.ensure_future(_end(deps, req, state, chat, emit, outcome))
    try:
        try:
            await asyncio.shield(ending)
        except asyncio.CancelledError as exc:
            if ending.cancelled():
                raise
            cancelled = cancelled or exc
            try:
                async with asyncio.timeout(END_GRACE_S):
                    await asyncio.shield(ending)
            except TimeoutError:
                log.warning("turn %s: its end took over %g s", ticket.turn_id, END_GRACE_S)
        if ending.done():
            ending.result()
    finally:
        if not ending.done():
            ending.cancel()
        await _finished(deps, ticket)
    if cancelled is not None:
        raise cancelled


async def _end(
    deps: TurnDeps,
    req: TurnRequest,
    state: TurnState,
    chat: Any,
    emit: Callable[[OutboundModel], Awaitable[bool]],
    outcome: tuple[str, ErrorCode | None, str],
) -> None:
    ticket = req.ticket
    sid = ticket.session_id
    kind, code, message = outcome
    text = "\n\n".join(t for t in state.texts if t)
    if kind == "cancelled" and state.streamed:
        partial = "".join(state.streamed)
        text = "\n\n".join(t for t in [text, partial] if t)
    end: list[OutboundModel] = list(state.undelivered)
    if state.in_flight is not None:
        # The turn stopped inside a tool call: its result says so (protocol.md section 4). A
        # page-changing call that was sent may or may not have happened: "unknown", and the
        # host never sends it again (section 5, "No replay").
        call_id, tool, changing, started = state.in_flight
        outcome_word: Literal["unknown", "error"] = "unknown" if changing else "error"
        summary = "interrupted: outcome unknown — not repeated" if changing else "interrupted"
        with contextlib.suppress(Exception):
            chat.tool_result(ticket.turn_id, call_id, outcome_word, summary, summary)
        end.append(
            ChatToolResult(
                session_id=sid,
                call_id=call_id,
                ok=False,
                summary=summary,
                duration_ms=int((time.monotonic() - started) * 1000),
                outcome=outcome_word if ticket.protocol >= 2 else None,
            )
        )
        state.tool_calls.append({"callId": call_id, "tool": tool, "ok": False})
    v2_turn = ticket.turn_id if ticket.protocol >= 2 else None
    if kind in ("done", "cancelled"):
        end += [
            ChatDone(session_id=sid, text=text, tool_calls=state.tool_calls, turn_id=v2_turn),
            EventActivity(session_id=sid, event="status.idle"),
        ]
    else:
        assert code is not None
        wire_code = code if ticket.protocol >= 2 else v1_chat_error_code(code)
        end += [
            ChatError(session_id=sid, message=message, code=wire_code, turn_id=v2_turn),
            EventActivity(session_id=sid, event="status.error"),
        ]
    try:
        # The journal records the end before the panel sees it.
        journal_kind = kind if kind in ("done", "cancelled") else "error"
        live = code is not ErrorCode.CONNECTION_LOST
        await chat.end_turn(ticket.turn_id, journal_kind, text, code.value if code else None,
                            message or None, delivered=live)  # fmt: skip
    except TurnStateError:
        # The turn stopped before its first record (e.g. cancelled while starting): there is
        # nothing to end in the journal, but the panel still gets its one end (section 3b).
        log.info("turn %s ended before it was journaled", ticket.turn_id)
    except Exception:
        # A journal that cannot record this end (the disk failed) must never cost the panel
        # its one end.
        log.exception("turn %s: the journal could not record its end", ticket.turn_id)
    # Whether the panel got the end is journaled, so a daemon that dies before an end reaches
    # its panel is found out by the next one, which sends it when the session registers
    # (protocol.md section 6). On a live link it is marked *before* the send, with the end and
    # under its one fsync (end_turn's ``delivered``): if the daemon dies in between, the relay
    # ends the turn for the panel — never a second end.
    if code is ErrorCode.CONNECTION_LOST:
        if await deps.ends.lost_end(ticket, end):
            with contextlib.suppress(Exception):
                chat.mark_delivered(ticket.turn_id)
        return await deps.browsers.release_control(ticket)
    with contextlib.suppress(Exception):
        chat.mark_delivered(ticket.turn_id)
    if await emit(end[0]):
        for msg in end[1:]:
            await emit(msg)
    else:
        with contextlib.suppress(Exception):
            chat.mark_undelivered(ticket.turn_id)
        deps.ends.undelivered_end(sid, end, ticket.turn_id)  # sent when the session registers again
    await deps.browsers.release_control(ticket)


async def _loop(
    deps: TurnDeps,
    req: TurnRequest,
    state: TurnState,
    chat: Any,
    emit: Callable[[OutboundModel], Awaitable[bool]],
) -> None:
    ticket = req.ticket
    sid = ticket.session_id
    browser = await deps.browsers.browser_for(ticket)
    context = await browser.context_block() if browser is not None else NO_BROWSER_CONTEXT
    chat.begin_turn(ticket.turn_id, req.text, context)
    tools = deps.tools.definitions(sid, browser=browser is not None)
    max_iterations = deps.max_iterations()
    for iteration in range(max_iterations):
        history = chat.model_messages(max_turns=HISTORY_TURNS, full_turns=FULL_TURNS)
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, *history]
        state.streamed = []

        async def on_text(piece: str) -> None:
            state.streamed.append(piece)
            for part in split_delta(piece):
                await emit(ChatDelta(session_id=sid, text=part))

        await emit(EventActivity(session_id=sid, event="llm_call_start", input_count=len(messages)))
        started = time.monotonic()
        reply = await deps.models.model().stream_turn(messages, tools, on_text=on_text)
        await emit(
            EventActivity(
                session_id=sid,
                event="llm_call_end",
                duration_ms=int((time.monotonic() - started) * 1000),
            )
        )
        state.streamed = []
        message = dict(reply.assistant_message)
        raw_calls = message.pop("tool_calls", None)
        tool_calls = await masked_tool_calls(raw_calls, reply.tool_calls, browser)
        message.pop("role", None)
        message.pop("content", None)
        chat.assistant(ticket.turn_id, reply.text, tool_calls=tool_calls, extra=message or None)
        chat.usage(ticket.turn_id, reply.usage.input_tokens, reply.usage.output_tokens)
        if ticket.protocol >= 2:
            await emit(
                Usage(
                    session_id=sid,
                    input_tokens=reply.usage.input_tokens,
                    output_tokens=reply.usage.output_tokens,
                    total_tokens=reply.usage.total_tokens,
                )
            )
        if reply.text:
            state.texts.append(reply.text)
        if not reply.tool_calls:
            return
        for call in reply.tool_calls:
            await run_tool_step(deps, ticket, state, chat, emit, browser, call)
        log.debug("turn %s: iteration %d done", ticket.turn_id, iteration)
    state.texts.append(f"(Stopped after {max_iterations} steps; ask me to continue.)")
