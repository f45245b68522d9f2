"""What a turn is made of: its request, what it works with, and what it keeps while it runs.

- :class:`TurnRequest`: the ticket, the user's words, the chat's scope — or, for a local client's
  ``tool.call``, one :class:`ToolRequest` to run without the model;
- :class:`TurnDeps`: the agent's parts a turn uses, handed down at construction
  (:mod:`actors.agent.agent`);
- :class:`TurnState`: the turn's text so far, its tool calls, the call in flight.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from actors.agent.clients import Clients
from actors.agent.end_delivery import EndDelivery
from actors.agent.images import ImageStore
from actors.agent.links import Outbox
from actors.agent.model_side import ModelSide
from actors.agent.tool_calls import ToolCalls
from actors.agent.turn_browsers import TurnBrowsers
from actors.agent.turn_queue import TurnTicket
from actors.agent.turn_scheduler import SchedulerMsg, TurnBoard
from actors.runtime.live_ref import LiveRef
from actors.store.chat_store import ChatStore
from messages.errors import ErrorCode
from messages.wire_base import OutboundModel

__all__ = ["ToolRequest", "TurnDeps", "TurnRequest", "TurnState"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnDeps:
    """What a turn works with, handed down at construction (:mod:`actors.agent.agent`)."""

    store: ChatStore
    outbox: Outbox
    ends: EndDelivery
    board: TurnBoard
    scheduler: LiveRef[SchedulerMsg]
    browsers: TurnBrowsers
    tools: ToolCalls
    models: ModelSide
    max_iterations: Callable[[], int]
    #: Let a local client's session drive tabs, asking the browser's user the first time
    #: (:meth:`~actors.agent.sessions.Sessions.grant_browser`): None, or (code, why not).
    grant_browser: Callable[[str], Awaitable[tuple[ErrorCode, str] | None]]
    #: Host-side tools offered to local clients (``[mcp] host_tools``).
    host_tools: Callable[[], frozenset[str]]
    #: The MCP clients bound to browsers: their own tabs, what the panels show.
    clients: Clients
    #: Images tools produced, kept for the panels to fetch (``image.get``).
    images: ImageStore


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRequest:
    """A turn without the model: run this one tool (``tool.call`` of a local client)."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    ticket: TurnTicket
    text: str
    scope: str
    tool: ToolRequest | None = None


@dataclass(slots=True)
class TurnState:
    texts: list[str] = field(default_factory=list)
    streamed: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tab_id: int | None = None
    #: The tool call running now: (call id, tool name, page-changing, started at).
    in_flight: tuple[str, str, bool, float] | None = None
    #: Tool results that found no panel (the connection was going): sent with the turn's end.
    undelivered: list[OutboundModel] = field(default_factory=list)
