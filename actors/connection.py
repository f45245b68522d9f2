"""Connection: one link to the daemon (a browser connection through a relay, or a CLI client).

It owns the protocol level the extension chose in its ``hello`` (v1 or v2), parses every inbound
frame once at the edge (:func:`messages.wire.parse_inbound`), and guards everything it sends: no
frame for Chrome exceeds 1,048,576 bytes (protocol.md section 5).

What it answers today (the session router, turn scheduler and tools build on it):

- ``hello`` -> ``hello.ack`` with the highest protocol both speak (v2 adds ``capabilities`` and
  ``maxMessageBytes``); a client that speaks no common protocol gets ``PROTOCOL_MISMATCH``.
- ``session.start`` -> ``session.ready``, then the initial push of section 3b: ``sdk.ready{ok:
  true}``, ``auth.status``, ``models.current``, ``models.list`` — never waiting on the provider.
- ``session.end`` drops the session; ``ping`` -> ``pong``.
- ``chat.send`` always ends with exactly one ``chat.error`` then ``status.error`` (section 3b) —
  for a session not registered here, and (until the agent is wired in) for every turn.
- Malformed frames: v2 ``error{INVALID_MESSAGE}`` naming the field; v1 logged. Unknown types are
  logged and ignored (section 1).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actors.link_stream import LinkStream
from actors.runtime import Actor, Overflow
from messages.codec import MAX_OUTBOUND_FRAME, decode_message
from messages.errors import ErrorCode, InvalidMessage, UnknownMessageType, v1_chat_error_code
from messages.link import LinkData
from messages.wire import dump_outbound, parse_inbound
from messages.wire_inbound import ChatSend, Hello, Ping, Pong, SessionEnd, SessionStart
from messages.wire_outbound import (
    AuthStatus,
    ChatError,
    ChatListResult,
    ErrorMessage,
    EventActivity,
    HelloAck,
    ModelInfo,
    ModelsCurrent,
    ModelsList,
    OutboundModel,
    SdkReady,
    SessionReady,
)

__all__ = ["Connection", "ConnectionInfo", "Inbound", "SERVER_PROTOCOLS"]

log = logging.getLogger(__name__)

#: Extension protocol levels this host speaks (protocol.md: v1 and v2).
SERVER_PROTOCOLS = (1, 2)
SERVER_CAPABILITIES = ("chat.queue", "approvals", "user.ask", "cdp.cancel", "control.release")


@dataclass(frozen=True, slots=True, kw_only=True)
class Inbound:
    """One extension frame that arrived over the link (its JSON bytes)."""

    payload: bytes


@dataclass(slots=True)
class ConnectionInfo:
    """What the rest of the daemon may read about a connection."""

    link_id: int
    role: str
    origin: str
    protocol: int = 1
    install_id: str | None = None
    sessions: dict[str, SessionStart] = field(default_factory=dict)


class Connection(Actor[Inbound]):
    mailbox_size = 512
    overflow = Overflow.WAIT

    def __init__(
        self,
        *,
        info: ConnectionInfo,
        stream: LinkStream,
        server_version: str,
        model_id: Callable[[], str] = lambda: "",
    ) -> None:
        self.info = info
        self._stream = stream
        self._server_version = server_version
        self._model_id = model_id

    # -- sending ----------------------------------------------------------------------------------

    async def send(self, msg: OutboundModel | Pong) -> bool:
        """Send one message to the extension; refuse (log, False) one that would not fit."""
        payload = dump_outbound(msg)
        if len(payload) > MAX_OUTBOUND_FRAME:
            log.error(
                "link %d: refused a %d-byte %s (Chrome's limit is 1 MiB)",
                self.info.link_id,
                len(payload),
                getattr(msg, "type", "?"),
            )
            return False
        self._stream.send(LinkData(payload))
        with contextlib.suppress(ConnectionError, OSError):
            await self._stream.drain()
        return True

    async def _protocol_error(self, code: ErrorCode, message: str, **extra: Any) -> None:
        if self.info.protocol >= 2:
            await self.send(ErrorMessage(code=code.value, message=message, **extra))
        else:
            log.warning("link %d: %s: %s", self.info.link_id, code.value, message)

    async def _end_turn_with_error(self, session_id: str, code: ErrorCode, message: str) -> None:
        wire_code = code.value if self.info.protocol >= 2 else v1_chat_error_code(code)
        await self.send(ChatError(session_id=session_id, message=message, code=wire_code))
        await self.send(EventActivity(session_id=session_id, event="status.error"))

    # -- receiving --------------------------------------------------------------------------------

    async def handle(self, msg: Inbound) -> Any:
        try:
            obj = decode_message(msg.payload)
            parsed = parse_inbound(obj)
        except UnknownMessageType as exc:
            log.info("link %d: ignored unknown message type: %s", self.info.link_id, exc)
            return None
        except InvalidMessage as exc:
            await self._protocol_error(ErrorCode.INVALID_MESSAGE, exc.wire_message)
            return None
        if isinstance(parsed, Hello):
            await self._on_hello(parsed)
        elif isinstance(parsed, SessionStart):
            await self._on_session_start(parsed)
        elif isinstance(parsed, SessionEnd):
            self.info.sessions.pop(parsed.session_id, None)
        elif isinstance(parsed, Ping):
            await self.send(Pong(id=parsed.id))
        elif isinstance(parsed, ChatSend):
            await self._on_chat_send(parsed)
        elif parsed.type == "models.list":
            await self.send(ModelsList(models=self._models()))
        elif parsed.type == "chat.list":
            await self.send(ChatListResult(chats=[]))
        else:
            log.info("link %d: %s is not handled yet", self.info.link_id, parsed.type)
        return None

    async def _on_hello(self, hello: Hello) -> None:
        common = [p for p in SERVER_PROTOCOLS if p <= hello.protocol]
        if not common:
            self.info.protocol = 2  # the error frame is a v2 message; v1 never gets here
            await self.send(
                ErrorMessage(
                    code=ErrorCode.PROTOCOL_MISMATCH.value,
                    message=f"this host speaks protocols {SERVER_PROTOCOLS}, "
                    f"the extension {hello.protocol}",
                )
            )
            return
        self.info.protocol = max(common)
        self.info.install_id = hello.install_id
        if self.info.protocol >= 2:
            await self.send(
                HelloAck(
                    protocol=self.info.protocol,
                    server_version=self._server_version,
                    capabilities=list(SERVER_CAPABILITIES),
                    max_message_bytes=MAX_OUTBOUND_FRAME,
                )
            )
        else:
            await self.send(HelloAck(protocol=1, server_version=self._server_version))

    async def _on_session_start(self, start: SessionStart) -> None:
        self.info.sessions[start.session_id] = start
        model = self._model_id()
        await self.send(
            SessionReady(
                session_id=start.session_id, model=model, capabilities=list(start.capabilities)
            )
        )
        # The initial push (section 3b). sdk.ready is ok whatever the provider's state.
        await self.send(SdkReady(ok=True))
        await self.send(
            AuthStatus(state="unknown", detail="no model provider is connected to this daemon yet")
        )
        await self.send(ModelsCurrent(id=model))
        await self.send(ModelsList(models=self._models()))

    def _models(self) -> list[ModelInfo]:
        model = self._model_id()
        return [ModelInfo(id=model, name=model)] if model else []

    async def _on_chat_send(self, send: ChatSend) -> None:
        if send.session_id not in self.info.sessions:
            await self._end_turn_with_error(
                send.session_id,
                ErrorCode.UNKNOWN_SESSION,
                f"session {send.session_id} is not registered on this connection",
            )
            return
        await self._end_turn_with_error(
            send.session_id,
            ErrorCode.INTERNAL,
            "this daemon does not run agent turns yet (the agent is not installed)",
        )
