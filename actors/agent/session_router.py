"""SessionRouter: which connection each session lives on, and who may take a session over.

The rules (protocol.md sections 2, 3b and 4) are a pure :class:`RouteTable`; the
:class:`SessionRouter` actor serialises changes to it. Reads (``lookup``) are synchronous on the
event loop, so a turn finds its session's *current* connection at every send — when a panel
moves to a new connection its output follows it, and output for a session registered nowhere is
only journaled, never sent (section 3b, "Routing").

Registration rules:

- ``session.start`` registers (or re-registers) a session on the calling connection.
- The same id on another live connection of the **same install** (v2: same ``installId``; v1:
  same origin) moves the session to the new connection; the old one is told
  ``CONNECTION_REPLACED`` (v2) or simply stops receiving it (v1).
- From a **different install** it is refused: ``SESSION_CONFLICT`` (v2) /
  ``chat.error{code: internal}`` (v1). The session stays where it was.
- Tool toggles: in v1 the latest ``disabledTools``/``enabledHostTools`` of a connection apply to
  every session of that connection; in v2 each session keeps its own.
- A chat's id is the ``sessionId`` that created it; chats are scoped per install (v2
  ``installId``) or ``default`` (v1).

Rebuilding after a restart: the table is plain data owned by the daemon's agent hub and handed to
each incarnation, so a restarted router keeps every live registration. A restarted *daemon*
starts empty and fills again as the relays re-send their ``session.start`` (protocol.md
section 6).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field, replace
from typing import Any

from actors.runtime.actor import Actor
from actors.runtime.ref import Overflow

__all__ = [
    "DropLink",
    "LinkFacts",
    "Register",
    "RegisterOutcome",
    "RegisterResult",
    "RouteTable",
    "SessionEntry",
    "SessionRouter",
    "Unregister",
]

log = logging.getLogger(__name__)

DEFAULT_SCOPE = "default"


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkFacts:
    """What the router needs to know about a connection."""

    link_id: int
    origin: str
    protocol: int
    install_id: str | None

    @property
    def install_key(self) -> str:
        """Same key = same extension install (v2: installId; v1: origin)."""
        return f"install:{self.install_id}" if self.install_id else f"origin:{self.origin}"

    @property
    def scope(self) -> str:
        """Where this connection's chats live: per install (v2) or the shared v1 scope."""
        return self.install_id if self.protocol >= 2 and self.install_id else DEFAULT_SCOPE


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEntry:
    session_id: str
    link: LinkFacts
    capabilities: frozenset[str] = frozenset()
    model: str | None = None
    inspected_tab_id: int | None = None
    window_id: int | None = None
    disabled_tools: frozenset[str] = frozenset()
    enabled_host_tools: frozenset[str] = frozenset()
    #: For a local client's session (CLI, MCP): the browser connection its tools drive.
    browser_link_id: int | None = None

    @property
    def can_drive_tabs(self) -> bool:
        return "cdp.activeTab" in self.capabilities

    @property
    def scope(self) -> str:
        return self.link.scope


class RegisterOutcome(enum.Enum):
    REGISTERED = "registered"
    MOVED = "moved"  # taken over from another live connection of the same install
    CONFLICT = "conflict"  # held by a different install: refused


@dataclass(frozen=True, slots=True)
class RegisterResult:
    outcome: RegisterOutcome
    entry: SessionEntry
    previous_link: int | None = None


@dataclass(slots=True)
class _LinkState:
    facts: LinkFacts
    disabled_tools: frozenset[str] = frozenset()
    enabled_host_tools: frozenset[str] = frozenset()
    sessions: set[str] = field(default_factory=set)


class RouteTable:
    """The pure route table. Every method is synchronous and raises nothing on bad input."""

    def __init__(self) -> None:
        self._sessions: dict[str, SessionEntry] = {}
        self._links: dict[int, _LinkState] = {}

    def lookup(self, session_id: str) -> SessionEntry | None:
        return self._sessions.get(session_id)

    def sessions_of(self, link_id: int) -> list[SessionEntry]:
        state = self._links.get(link_id)
        if state is None:
            return []
        return [self._sessions[s] for s in sorted(state.sessions) if s in self._sessions]

    def register(
        self,
        link: LinkFacts,
        session_id: str,
        *,
        capabilities: tuple[str, ...] = (),
        model: str | None = None,
        inspected_tab_id: int | None = None,
        window_id: int | None = None,
        disabled_tools: tuple[str, ...] | None = None,
        enabled_host_tools: tuple[str, ...] | None = None,
        browser_link_id: int | None = None,
    ) -> RegisterResult:
        state = self._links.setdefault(link.link_id, _LinkState(facts=link))
        state.facts = link
        if link.protocol < 2:
            # v1: the latest toggles of a connection apply to all its sessions (section 3b).
            if disabled_tools is not None:
                state.disabled_tools = frozenset(disabled_tools)
            if enabled_host_tools is not None:
                state.enabled_host_tools = frozenset(enabled_host_tools)
            toggles = (state.disabled_tools, state.enabled_host_tools)
            for sid in state.sessions:
                if sid in self._sessions:
                    self._sessions[sid] = replace(
                        self._sessions[sid],
                        disabled_tools=toggles[0],
                        enabled_host_tools=toggles[1],
                    )
        else:
            toggles = (frozenset(disabled_tools or ()), frozenset(enabled_host_tools or ()))
        entry = SessionEntry(
            session_id=session_id,
            link=link,
            capabilities=frozenset(capabilities),
            model=model,
            inspected_tab_id=inspected_tab_id,
            window_id=window_id,
            disabled_tools=toggles[0],
            enabled_host_tools=toggles[1],
            browser_link_id=browser_link_id,
        )
        current = self._sessions.get(session_id)
        if current is not None and current.link.link_id != link.link_id:
            if current.link.install_key != link.install_key:
                return RegisterResult(RegisterOutcome.CONFLICT, current)
            old = self._links.get(current.link.link_id)
            if old is not None:
                old.sessions.discard(session_id)
            self._sessions[session_id] = entry
            state.sessions.add(session_id)
            return RegisterResult(RegisterOutcome.MOVED, entry, current.link.link_id)
        self._sessions[session_id] = entry
        state.sessions.add(session_id)
        return RegisterResult(RegisterOutcome.REGISTERED, entry)

    def unregister(self, link_id: int, session_id: str) -> SessionEntry | None:
        """Remove *session_id* if it is registered on *link_id* (another link's is left alone)."""
        current = self._sessions.get(session_id)
        if current is None or current.link.link_id != link_id:
            return None
        del self._sessions[session_id]
        state = self._links.get(link_id)
        if state is not None:
            state.sessions.discard(session_id)
        return current

    def drop_link(self, link_id: int) -> list[SessionEntry]:
        """The connection is gone: remove its sessions; returns them."""
        state = self._links.pop(link_id, None)
        if state is None:
            return []
        dropped = []
        for sid in sorted(state.sessions):
            entry = self._sessions.get(sid)
            if entry is not None and entry.link.link_id == link_id:
                del self._sessions[sid]
                dropped.append(entry)
        return dropped

    def links(self) -> list[LinkFacts]:
        return [s.facts for s in self._links.values()]

    def count(self) -> int:
        return len(self._sessions)


# -- the actor ------------------------------------------------------------------------------------


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
