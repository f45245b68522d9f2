"""One tool call of a turn, from its card in the panel to its record in the journal."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from actors.agent.images import image_parts
from actors.agent.turn_parts import TurnDeps, TurnState
from actors.agent.turn_queue import TurnTicket
from actors.agent.wire_shapes import trim_args
from actors.browser.tool_worker import ToolResultView
from actors.tools.masking import secret_view
from messages.wire_base import OutboundModel
from messages.wire_outbound import ChatToolCall, ChatToolResult, EventActivity, ImageInfo

__all__ = ["run_tool_step"]


async def run_tool_step(
    deps: TurnDeps,
    ticket: TurnTicket,
    state: TurnState,
    chat: Any,
    emit: Callable[[OutboundModel], Awaitable[bool]],
    browser: Any,
    call: Any,
) -> ToolResultView:
    """One tool call of a turn: shown (secrets masked), journaled before it runs, run by the
    ToolWorker, journaled after, shown again with its outcome. Returns what it did."""
    sid = ticket.session_id
    args = call.arguments if call.arguments is not None else {}
    masked = await secret_view(call.name, args, browser)  # what the panel and journal see
    shown = trim_args(masked)
    await emit(ChatToolCall(session_id=sid, call_id=call.id, tool=call.name, args=shown))
    await emit(EventActivity(session_id=sid, event="tool_start", tool=call.name, args=shown))
    page_changing = deps.tools.is_page_changing(call.name)
    chat.tool_call(ticket.turn_id, call.id, call.name, masked, page_changing)
    if call.arguments is None:
        result = deps.tools.bad_arguments(call.name, call.arguments_error or "not a JSON object")
    else:
        state.in_flight = (call.id, call.name, page_changing, time.monotonic())
        result = await deps.tools.run(ticket, browser, call.name, args, call.id, shown=masked)
        state.in_flight = None
    chat.tool_result(
        ticket.turn_id,
        call.id,
        result.outcome,
        result.summary,
        result.content_text,
        keep=not deps.tools.reads_secrets(call.name),
    )
    state.tool_calls.append({"callId": call.id, "tool": call.name, "ok": result.outcome == "ok"})
    images = None
    if ticket.protocol >= 2:  # a screenshot: the panel fetches it (image.get) to show it inline
        kept = [
            deps.images.put(sid, mime, data) for mime, data in image_parts(result.content_for_model)
        ]
        refs = [ImageInfo(image_id=r.image_id, mime=r.mime, bytes=r.size) for r in kept if r]
        images = refs or None
    tool_result = ChatToolResult(
        session_id=sid,
        call_id=call.id,
        ok=result.outcome == "ok",
        summary=result.summary,
        duration_ms=result.duration_ms,
        outcome=result.outcome if ticket.protocol >= 2 else None,
        images=images,
    )
    if not await emit(tool_result):
        state.undelivered.append(tool_result)
    await emit(
        EventActivity(
            session_id=sid, event="tool_end", tool=call.name, duration_ms=result.duration_ms
        )
    )
    return result
