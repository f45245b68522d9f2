"""Host -> local client wire messages (protocol.md section 4): what a local client (``browy
mcp``) is told about its tools and their calls.

Part of :data:`messages.wire_outbound.OutboundMessage`; same conventions as
:mod:`messages.wire_outbound`.
"""

from collections.abc import Sequence
from typing import Any, Literal

from messages.wire_base import OutboundModel

__all__ = ["ToolCallResult", "ToolSpec", "ToolsListResult"]


class ToolCallResult(OutboundModel):
    """v2, local clients: what one ``tool.call`` did — its outcome (``unknown``: a page-changing
    call that was sent but not answered; never repeated), the full content the tool returned
    (text, or parts with images), its summary and, when it failed, the stable code."""

    type: Literal["tool.call.result"] = "tool.call.result"
    session_id: str
    turn_id: str
    call_id: str
    outcome: Literal["ok", "error", "unknown"]
    content: str | list[dict[str, Any]]
    summary: str
    code: str | None = None
    #: The tab the client works in after the call (sent back as ``session.start``'s
    #: ``inspectedTabId`` when it reconnects).
    tab_id: int | None = None


class ToolSpec(OutboundModel):
    """One tool as a local client lists it: the registry's schema, a title and what it does."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    destructive: bool
    open_world: bool


class ToolsListResult(OutboundModel):
    type: Literal["tools.list.result"] = "tools.list.result"
    session_id: str
    tools: Sequence[ToolSpec]
