"""SessionRouter: the actor that serialises changes to the route table.

The rules are the pure :class:`~actors.agent.route_table.RouteTable` (protocol.md sections 2, 3b
and 4: registration, moves within an install, conflicts across installs, tool toggles). Reads
(``lookup``) are synchronous on the event loop, so a turn finds its session's *current*
connection at every send — when a panel moves to a new connection its output follows it, and
output for a session registered nowhere is only journaled, never sent (section 3b, "Routing").

Rebuilding after a restart: the table is plain data owned by the agent and handed to each
incarnation, so a restarted router keeps every live registration. A restarted *daemon* starts
empty and fills again as the relays re-send their ``session.start`` (protocol.md section 6).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from actors.agent.route_table import LinkFacts, RegisterOutcome, RouteTable
from actors.runtime.actor import Actor
from actors.runtime.ref import Overflow

__all__ = ["DropLink", "Register", "RouterMsg", "SessionRouter", "Unregister"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Register:
    link: LinkFacts
    session_id: str
    capabilities: tuple[str, ...] = ()
    model: str | None = None
    inspected_tab_id: int | None = None
    window_id: int | None = None
    disabled_tools: tuple[str, ...] | None = None
    enabled_host_tools: tuple[str, ...] | None = None
    browser_link_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unregister:
    link_id: int
    session_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DropLink:
    link_id: int


RouterMsg = Register | Unregister | DropLink


class SessionRouter(Actor[RouterMsg]):
    """Serialises changes to the :class:`RouteTable`; ``table.lookup`` is read directly."""

    mailbox_size = 1024
    overflow = Overflow.WAIT

    def __init__(self, table: RouteTable | None = None) -> None:
        # The table may outlive this incarnation (the hub passes one in): a restarted router
        # keeps every live registration, so no panel has to register again.
        self.table = table if table is not None else RouteTable()

    async def handle(self, msg: RouterMsg) -> Any:
        if isinstance(msg, Register):
            result = self.table.register(
                msg.link,
                msg.session_id,
                capabilities=msg.capabilities,
                model=msg.model,
                inspected_tab_id=msg.inspected_tab_id,
                window_id=msg.window_id,
                disabled_tools=msg.disabled_tools,
                enabled_host_tools=msg.enabled_host_tools,
                browser_link_id=msg.browser_link_id,
            )
            if result.outcome is RegisterOutcome.MOVED:
                log.info("session %s moved from link %s", msg.session_id, result.previous_link)
            return result
        if isinstance(msg, Unregister):
            return self.table.unregister(msg.link_id, msg.session_id)
        return self.table.drop_link(msg.link_id)
