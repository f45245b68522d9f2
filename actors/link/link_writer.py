"""LinkWriter: the daemon's output to one link — one extension connection or local client.

Everything the daemon sends to a browser goes through the link's writer: turns (their deltas,
tool cards and ends), the CDPProxy (``cdp.send``, ``tab.*``, ``cdp.cancel``,
``control.release``) and the Connection (replies). It owns what every frame must respect:

- **1 MiB for Chrome.** No frame for Chrome exceeds 1,048,576 bytes (protocol.md section 5): a
  ``chat.done`` whose text is too long keeps its end; anything else too large is refused (logged,
  ``False``), and ``cdp.send`` raises :class:`~messages.errors.FrameTooLarge` to its caller, since
  a command is never trimmed. A local client (CLI, MCP) reads the link itself, not through
  Chrome: its frames may be up to :data:`LOCAL_CLIENT_MAX_FRAME` (a screenshot's image).
- **Whole frames, in order.** Sends from several tasks are serialised by a lock, so frames never
  interleave and backpressure (``drain``) applies to each writer in turn.

It is not an actor: a mailbox hop on every outbound frame would cost on the hot path (turns
stream deltas), and the lock already gives the ordering an actor would. ``info`` is the link's
:class:`ConnectionInfo`, which the Connection keeps current (the protocol level of ``hello``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from pydantic import BaseModel

from actors.link.link_stream import LinkStream
from messages.codec import MAX_OUTBOUND_FRAME
from messages.errors import ErrorCode, FrameTooLarge, LocalError, v1_chat_error_code
from messages.link import LinkData
from messages.wire import dump_outbound
from messages.wire_browser import CdpSend
from messages.wire_inbound import SessionStart
from messages.wire_outbound import ChatDone, ChatError, EventActivity

__all__ = ["LOCAL_CLIENT_MAX_FRAME", "ConnectionInfo", "LinkWriter"]

#: The largest frame for a local client's link (its reader is ours, not Chrome).
LOCAL_CLIENT_MAX_FRAME = 32 * 1024 * 1024

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ConnectionInfo:
    """What the rest of the daemon may read about a connection."""

    link_id: int
    role: str
    origin: str
    protocol: int = 1
    install_id: str | None = None
    #: The ``client`` of the extension's hello: "extension", or a local client's own name
    #: (an MCP client's ``clientInfo.name``).
    client: str = ""
    #: The capabilities its v2 hello announced (e.g. ``clients``, ``tab.groups``).
    capabilities: frozenset[str] = frozenset()
    #: The browser a relay's extension runs in (its v2 hello: chrome, edge, …), "" if unknown.
    browser: str = ""
    sessions: dict[str, SessionStart] = field(default_factory=dict)

    @property
    def max_frame(self) -> int:
        """What the other end may be sent in one frame."""
        return MAX_OUTBOUND_FRAME if self.role == "relay" else LOCAL_CLIENT_MAX_FRAME

    @property
    def v2(self) -> bool:
        return self.protocol >= 2

    @property
    def target_sessions(self) -> bool:
        """May ``cdp.send`` name a child session (``targetSessionId``)? v2 with the capability."""
        return self.v2 and "cdp.targetSessions" in self.capabilities

    @property
    def reports_downloads(self) -> bool:
        """Does the browser send ``download.*``? v2 with the capability ``downloads``."""
        return self.v2 and "downloads" in self.capabilities

    @property
    def scope(self) -> str:
        """Where this connection's chats live: its install (v2), else ``default``."""
        return self.install_id if self.protocol >= 2 and self.install_id else "default"


class LinkWriter:
    """Sends wire models on one link, each under Chrome's 1 MiB limit, never interleaved."""

    def __init__(self, info: ConnectionInfo, stream: LinkStream) -> None:
        self.info = info
        self._stream = stream
        self._lock = asyncio.Lock()

    async def send(self, msg: BaseModel) -> bool:
        """Send one message to the extension; refuse (log, False) one that would not fit, or
        when the link is gone. ``cdp.send`` that would not fit raises ``FrameTooLarge``."""
        try:
            payload = dump_outbound(msg)
        except LocalError:
            log.exception("link %d: could not encode a %s", self.info.link_id, type(msg).__name__)
            return False
        limit = self.info.max_frame
        if len(payload) > limit and isinstance(msg, ChatDone):
            # chat.done carries the whole turn's text; keep its end within the limit.
            keep = MAX_OUTBOUND_FRAME // 2
            msg = msg.model_copy(update={"text": "[… earlier text trimmed]\n" + msg.text[-keep:]})
            payload = dump_outbound(msg)
        if len(payload) > limit:
            if isinstance(msg, CdpSend):
                raise FrameTooLarge(f"{len(payload)} bytes")
            log.error(
                "link %d: refused a %d-byte %s (its limit is %d bytes)",
                self.info.link_id,
                len(payload),
                getattr(msg, "type", "?"),
                limit,
            )
            return False
        async with self._lock:
            try:
                self._stream.send(LinkData(payload))
                await self._stream.drain()
            except (ConnectionError, OSError, RuntimeError):
                return False
        return True

    async def end_turn_with_error(
        self, session_id: str, code: ErrorCode, message: str, turn_id: str | None = None
    ) -> None:
        """End a turn that never ran: ``chat.error`` then ``status.error`` (section 3b)."""
        v2 = self.info.protocol >= 2
        wire_code = code if v2 else v1_chat_error_code(code)
        await self.send(
            ChatError(
                session_id=session_id,
                message=message,
                code=wire_code,
                turn_id=turn_id if v2 else None,
            )
        )
        await self.send(EventActivity(session_id=session_id, event="status.error"))
