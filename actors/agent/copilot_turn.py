"""A turn whose model runs its own loop: GitHub Copilot (:mod:`actors.model.copilot_gateway`).

It is a turn like any other (:mod:`actors.agent.turn` starts it and sends its one end): the same
browser-context block with the user's words, the same ``chat.delta`` stream, and each tool call
Copilot makes goes through :func:`~actors.agent.turn_step.run_tool_step` — the card, the journal's
*sent* before and *done* after, the ToolWorker with its per-tab lock and approvals, ``unknown``
when cut, never replayed. What differs is who loops: Copilot decides when to call the model again
and when it is done (``session.idle``); this step only follows what it reports
(:mod:`actors.model.copilot_events`) and answers its tool calls.

A cancel stops Copilot (the SDK's ``abort``) and then lets the cancellation end the turn; so does
the iteration cap (Copilot is stopped after that many model replies). A CLI that dies mid-turn is
a ``MODEL_ERROR`` end; the next turn starts a new CLI. When Copilot has no session for this chat
yet (a new CLI that lost it, say) but the journal has earlier turns, their words go with the
first message so the chat goes on where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from actors.agent.system_prompt import NO_BROWSER_CONTEXT, SYSTEM_PROMPT
from actors.agent.turn_parts import TurnDeps, TurnRequest, TurnState
from actors.agent.turn_step import run_tool_step
from actors.agent.wire_shapes import split_delta
from actors.model.copilot_events import (
    ModelCalled,
    ModelSpoke,
    RunEnded,
    RunFailed,
    TextArrived,
    TokensUsed,
    ToolWanted,
    tool_answer,
)
from actors.model.copilot_gateway import CopilotGateway
from actors.model.copilot_run import CopilotRun
from actors.model.types import ToolCall
from actors.store.chat_views import join_context
from actors.tools.masking import masked_tool_calls
from messages.wire_base import OutboundModel
from messages.wire_outbound import ChatDelta, EventActivity, Usage

__all__ = ["conversation_id", "run_copilot_turn"]

#: How long a cancelled turn waits for Copilot to confirm it stopped.
ABORT_WAIT_S = 3.0
#: Earlier turns sent along when Copilot's session for the chat is new.
EARLIER_TURNS = 8


def conversation_id(scope: str, session_id: str) -> str:
    """The Copilot session id of a chat: the panel's id (v1's one scope), else scoped by install."""
    if scope == "default":
        return session_id
    return f"{scope[:32]}-{session_id}"


async def run_copilot_turn(
    deps: TurnDeps,
    req: TurnRequest,
    state: TurnState,
    chat: Any,
    emit: Callable[[OutboundModel], Awaitable[bool]],
) -> None:
    ticket = req.ticket
    sid = ticket.session_id
    model = deps.models.model()
    assert isinstance(model, CopilotGateway)
    browser = await deps.browsers.browser_for(ticket)
    context = await browser.context_block() if browser is not None else NO_BROWSER_CONTEXT
    earlier = chat.model_messages(max_turns=EARLIER_TURNS, full_turns=0)
    chat.begin_turn(ticket.turn_id, req.text, context)
    tools = deps.tools.definitions(sid, browser=browser is not None)
    run = await model.open_run(conversation_id(req.scope, sid), tools, SYSTEM_PROMPT)
    try:
        prompt = join_context(req.text, context)
        recap = _recap(earlier) if run.fresh else ""
        if recap:
            prompt = f"{recap}\n\n{prompt}"
        started = time.monotonic()
        await emit(EventActivity(session_id=sid, event="llm_call_start", input_count=1))
        await run.send(prompt)
        await _follow(deps, ticket, state, chat, emit, browser, run, started)
    except asyncio.CancelledError:
        await asyncio.shield(_stop(run))
        raise
    finally:
        run.close()


async def _follow(
    deps: TurnDeps,
    ticket: Any,
    state: TurnState,
    chat: Any,
    emit: Callable[[OutboundModel], Awaitable[bool]],
    browser: Any,
    run: CopilotRun,
    started: float,
) -> None:
    """Follow Copilot's loop to its end, running each call of Browy's tools."""
    sid = ticket.session_id
    max_replies = deps.max_iterations()
    replies = 0
    announced: set[str] = set()
    state.streamed = []
    while True:
        event = await run.next()
        if isinstance(event, ModelCalled):
            if replies:
                started = time.monotonic()
                await emit(EventActivity(session_id=sid, event="llm_call_start", input_count=1))
        elif isinstance(event, TextArrived):
            state.streamed.append(event.text)
            for part in split_delta(event.text):
                await emit(ChatDelta(session_id=sid, text=part))
        elif isinstance(event, ModelSpoke):
            replies += 1
            ms = int((time.monotonic() - started) * 1000)
            await emit(EventActivity(session_id=sid, event="llm_call_end", duration_ms=ms))
            await _journal_reply(chat, ticket.turn_id, event.text, event.calls, browser)
            announced.update(call.id for call in event.calls)
            state.streamed = []
            if event.text:
                state.texts.append(event.text)
            if replies >= max_replies and event.calls:
                await _stop(run)
                state.texts.append(f"(Stopped after {max_replies} steps; ask me to continue.)")
                return
        elif isinstance(event, ToolWanted):
            if event.call.id not in announced:  # a call no reply announced: journal it first
                announced.add(event.call.id)
                await _journal_reply(chat, ticket.turn_id, "", (event.call,), browser)
            result = await run_tool_step(deps, ticket, state, chat, emit, browser, event.call)
            if not event.reply.done():
                event.reply.set_result(
                    tool_answer(result.outcome == "ok", result.content_for_model)
                )
        elif isinstance(event, TokensUsed):
            chat.usage(ticket.turn_id, event.input_tokens, event.output_tokens)
            if ticket.protocol >= 2:
                total = event.input_tokens + event.output_tokens
                await emit(
                    Usage(
                        session_id=sid,
                        input_tokens=event.input_tokens,
                        output_tokens=event.output_tokens,
                        total_tokens=total,
                    )
                )
        elif isinstance(event, RunEnded):
            if state.streamed:  # text Copilot streamed but never closed with a message
                state.texts.append("".join(state.streamed))
                state.streamed = []
            return
        elif isinstance(event, RunFailed):
            raise event.error


async def _journal_reply(
    chat: Any, turn_id: str, text: str, calls: tuple[ToolCall, ...], browser: Any
) -> None:
    """The reply in the journal as any model's: its text and its calls (secrets masked)."""
    raw = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments_json},
        }
        for c in calls
    ]
    masked = await masked_tool_calls(raw or None, list(calls), browser)
    chat.assistant(turn_id, text, tool_calls=masked)


async def _stop(run: CopilotRun) -> None:
    """Abort Copilot's loop and wait (briefly) for it to say it stopped, so its last events do
    not reach the chat's next turn."""
    await run.abort()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(ABORT_WAIT_S):
            while True:
                event = await run.next()
                if isinstance(event, ToolWanted) and not event.reply.done():
                    event.reply.cancel()
                if isinstance(event, RunEnded | RunFailed):
                    return


def _recap(messages: list[dict[str, Any]]) -> str:
    """Earlier turns of the chat, as words: Copilot's session for it is new."""
    lines = ["(Earlier in this conversation:)"]
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role in ("user", "assistant") and isinstance(content, str) and content.strip():
            who = "User" if role == "user" else "You"
            lines.append(f"{who}: {content.strip()[:2000]}")
    return "\n".join(lines) if len(lines) > 1 else ""
