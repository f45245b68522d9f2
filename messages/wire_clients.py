"""Host -> local client wire messages (protocol.md section 4): what a local client (``browy
mcp``) is told about its tools and their calls; and what a browser's panels are told about the
MCP clients driving that browser (``clients.list``).

Part of :data:`messages.wire_outbound.OutboundMessage`; same conventions as
:mod:`messages.wire_outbound`.
"""

from collections.abc import Sequence
from typing import Any, Literal

from messages.wire_base import OutboundModel

__all__ = ["ClientInfo", "ClientsList", "ToolCallResult", "ToolSpec", "ToolsListResult"]


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


class ClientInfo(OutboundModel):
    """One MCP client driving the browser: its id (its session), its name, whether a call of
    it is running, and the tabs it holds (opened, or handed to it)."""

    client_id: str
    name: str
    busy: bool
    tabs: Sequence[int]


class ClientsList(OutboundModel):
    """v2, capability ``clients``: the MCP clients driving this panel's browser (sent when they
    change, and when the panel registers)."""

    type: Literal["clients.list"] = "clients.list"
    session_id: str
    clients: Sequence[ClientInfo]
