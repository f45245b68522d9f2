"""A turn without the model: one tool run for a local client (``tool.call``, e.g. ``browy mcp``).

It is a turn like any other — queued by the TurnScheduler, journaled (``begin``, the call
*sent* before it runs, its result, the ``end``), ended exactly once, and never replayed: a
page-changing call cut by a cancel, a link drop or a crash is ``unknown`` — so a client's calls
get the guarantees of a panel's turns (protocol.md sections 4 and 6). Before the end it sends
``tool.call.result`` with the full content the tool returned (text, or parts with images).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from actors.agent.turn_parts import TurnDeps, TurnRequest, TurnState
from actors.agent.turn_step import run_tool_step
from actors.agent.wire_shapes import trim_args
from actors.model.types import ToolCall
from messages.errors import ErrorCode
from messages.wire_base import OutboundModel
from messages.wire_clients import ToolCallResult

__all__ = ["run_one_tool"]


async def run_one_tool(
    deps: TurnDeps,
    req: TurnRequest,
    state: TurnState,
    chat: Any,
    emit: Callable[[OutboundModel], Awaitable[bool]],
) -> None:
    """Run ``req.tool`` on the session's tab as this turn's one step."""
    assert req.tool is not None
    ticket = req.ticket
    name, args = req.tool.name, req.tool.args
    sid = ticket.session_id
    refusal = await _refusal(deps, sid, name, args)
    if refusal is not None:
        await _refuse(emit, req, state, *refusal)
        return
    browser = await deps.browsers.browser_for(ticket)
    client = deps.clients.get(sid)
    needs_tab = deps.tools.catalog.needs_browser(name) and name not in _NO_TAB_NEEDED
    if client is not None and needs_tab and (browser is None or browser.tab_id is None):
        await _refuse(emit, req, state, ErrorCode.NO_CAPABILITY.value, _NO_TAB)
        return
    shown = json.dumps(trim_args(args), ensure_ascii=False)
    chat.begin_turn(ticket.turn_id, f"{name} {shown}", None)
    call = ToolCall(
        id=f"call-{ticket.turn_id}",
        name=name,
        arguments_json=json.dumps(args),
        arguments=args,
    )
    # The journal's history shows it as an assistant's tool call, like a model's.
    chat.assistant(
        ticket.turn_id,
        "",
        tool_calls=[
            {
                "id": call.id,
                "type": "function",
                "function": {"name": name, "arguments": call.arguments_json},
            }
        ],
    )
    await deps.clients.set_busy(sid, True)
    try:
        result = await run_tool_step(deps, ticket, state, chat, emit, browser, call)
        if name == "new_tab" and result.outcome == "ok" and browser and browser.tab_id:
            await deps.clients.add_tab(sid, browser.tab_id)  # its own tab from now on
        for opened in result.opened_tabs:  # popups its action opened are its own too
            await deps.clients.add_tab(sid, opened)
    finally:
        deps.browsers.keep(sid, browser)
        await deps.clients.set_busy(sid, False)
    await emit(
        ToolCallResult(
            session_id=ticket.session_id,
            turn_id=ticket.turn_id,
            call_id=call.id,
            outcome=result.outcome,
            content=result.content_for_model,
            summary=result.summary,
            code=_code_of(result.content_text) if result.outcome != "ok" else None,
            tab_id=browser.tab_id if browser is not None else None,
        )
    )
    state.texts.append(result.summary)


#: Tools an MCP client may call before it has a tab of its own.
_NO_TAB_NEEDED = frozenset({"new_tab", "list_tabs", "switch_tab"})
_NO_TAB = (
    "this client has no tab yet: open one with new_tab (it opens in the background), or ask "
    "the user to hand you a tab from the Browy side panel"
)


async def _refuse(
    emit: Callable[[OutboundModel], Awaitable[bool]],
    req: TurnRequest,
    state: TurnState,
    code: str,
    text: str,
) -> None:
    """The call is not run: say why (``tool.call.result``); the turn then ends."""
    assert req.tool is not None
    ticket = req.ticket
    await emit(
        ToolCallResult(
            session_id=ticket.session_id,
            turn_id=ticket.turn_id,
            call_id=f"call-{ticket.turn_id}",
            outcome="error",
            content=f"error {code}: {text}",
            summary=f"{req.tool.name}: {text}"[:300],
            code=code,
        )
    )
    state.texts.append(f"{req.tool.name}: refused")


async def _refusal(
    deps: TurnDeps, session_id: str, name: str, args: dict[str, Any]
) -> tuple[str, str] | None:
    """Why *name* may not run for this client now — (code, text) — or None. A tool that needs
    a tab binds the session to a browser first, asking its user the first time; an MCP client
    asking for a tab that is not its own (``switch_tab``, ``close_tab``) asks the user too."""
    offered = {spec.name for spec in deps.tools.specs(session_id, host_tools=deps.host_tools())}
    if name not in offered:
        if deps.tools.catalog.registry.get(name) is None:
            return ErrorCode.INVALID_MESSAGE.value, f"there is no tool named {name!r}"
        return ErrorCode.TOOL_DISABLED.value, f"{name} is not offered to this client"
    if deps.tools.catalog.needs_browser(name):
        problem = await deps.grant_browser(session_id)
        if problem is not None:
            return problem[0].value, problem[1]
    tab = args.get("tab_id")
    if (
        name in ("switch_tab", "close_tab")
        and isinstance(tab, int)
        and deps.clients.get(session_id) is not None
        and not deps.clients.owns(session_id, tab)
        and not await deps.clients.ask_for_tab(session_id, tab)
    ):
        return ErrorCode.APPROVAL_DENIED.value, f"the browser's user did not let you use tab {tab}"
    return None


def _code_of(text: str) -> str | None:
    """The stable code of a failed tool's content (``error CODE: …``), if it has one."""
    if text.startswith("error "):
        head = text[len("error ") :].split(":", 1)[0]
        if head.isupper() and head.replace("_", "").isalpha():
            return head
    if text.startswith("INVALID_MESSAGE"):
        return "INVALID_MESSAGE"
    return None
