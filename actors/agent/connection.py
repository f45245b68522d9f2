"""Connection: one link to the daemon (a browser connection through a relay, or a CLI client).

It owns the protocol level the extension chose in its ``hello`` (v1 or v2), parses every inbound
frame once at the edge (:func:`messages.wire.parse_inbound`), guards everything it sends — no
frame for Chrome exceeds 1,048,576 bytes (protocol.md section 5) — and owns the connection's
:class:`actors.browser.cdp_proxy.CdpProxy` (browser calls and their answers).

Everything about sessions and turns is the agent hub's (``supervisors.agent.AgentHub``, seen
through the :class:`ConnectionHub` protocol): the connection hands
each parsed message over. Without a hub (a bare link, in tests) it still answers ``hello``,
``session.start`` (with the initial push of section 3b) and ``ping``, and ends every
``chat.send`` with ``chat.error`` + ``status.error``.

Malformed frames: v2 ``error{INVALID_MESSAGE}`` naming the field; v1 logged. Unknown types are
logged and ignored (section 1).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from actors.browser.cdp_proxy import CdpProxy
from actors.link.link_stream import LinkStream
from actors.runtime.actor import Actor
from actors.runtime.ref import Overflow
from messages.codec import MAX_OUTBOUND_FRAME, decode_message
from messages.errors import (
    ErrorCode,
    InvalidMessage,
    LocalError,
    UnknownMessageType,
    v1_chat_error_code,
)
from messages.link import LinkData
from messages.wire import dump_outbound, parse_inbound
from messages.wire_inbound import (
    ApprovalResponse,
    AuthSignin,
    CdpEvent,
    ChatCancel,
    ChatDelete,
    ChatHistory,
    ChatList,
    ChatSend,
    ConfigGet,
    ConfigSet,
    DoctorRun,
    Hello,
    HistoryClear,
    ModelsListRequest,
    ModelsSet,
    Ping,
    Pong,
    SessionEnd,
    SessionStart,
    ToolResult,
    UserAnswer,
)
from messages.wire_outbound import (
    AuthStatus,
    ChatDeleteResult,
    ChatDone,
    ChatError,
    ChatHistoryResult,
    ChatListResult,
    ChatSummary,
    ConfigResult,
    DoctorCheck,
    DoctorResult,
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

if TYPE_CHECKING:
    from actors.agent.session_router import RouteTable
    from actors.store.chat_store import ChatStore


class ConnectionHub(Protocol):
    """What a connection hands its messages to (``supervisors.agent.ConnectionHub``)."""

    store: ChatStore

    @property
    def table(self) -> RouteTable: ...
    @property
    def model_id(self) -> str: ...
    def link_opened(self, conn: Connection) -> None: ...
    async def link_closed(self, conn: Connection) -> None: ...
    async def session_start(self, conn: Connection, start: SessionStart) -> None: ...
    async def session_end(self, conn: Connection, session_id: str) -> None: ...
    async def chat_send(self, conn: Connection, send: ChatSend) -> None: ...
    async def chat_cancel(self, conn: Connection, session_id: str, turn_id: str | None) -> None: ...
    def is_running(self, session_id: str) -> bool: ...
    async def list_models(self) -> list[ModelInfo]: ...
    def set_model(self, model_id: str) -> None: ...
    async def refresh_auth(self) -> AuthStatus: ...
    async def config_get(self) -> tuple[dict[str, Any], dict[str, Any]]: ...
    async def config_set(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]: ...
    async def doctor(self) -> list[dict[str, Any]]: ...
    def approval_response(self, conn: Connection, msg: ApprovalResponse) -> None: ...
    def user_answer(self, conn: Connection, msg: UserAnswer) -> None: ...


__all__ = ["SERVER_PROTOCOLS", "Connection", "ConnectionInfo", "Inbound"]

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
        hub: ConnectionHub | None = None,
    ) -> None:
        self.info = info
        self._stream = stream
        self._server_version = server_version
        self._model_id = model_id
        self.hub = hub
        self.last_active = time.monotonic()
        self._send_lock = asyncio.Lock()
        self.proxy = CdpProxy(self._send_model, protocol=1)

    async def _send_model(self, msg: BaseModel) -> bool:
        return await self.send(msg)  # type: ignore[arg-type]

    async def on_start(self) -> None:
        if self.hub is not None:
            self.hub.link_opened(self)

    async def on_stop(self) -> None:
        await self._closed()

    async def on_failure(self, exc: BaseException) -> None:
        await self._closed()

    async def _closed(self) -> None:
        if self.hub is not None:
            await self.hub.link_closed(self)
        else:
            self.proxy.connection_lost()

    # -- sending ----------------------------------------------------------------------------------

    async def send(self, msg: OutboundModel | Pong) -> bool:
        """Send one message to the extension; refuse (log, False) one that would not fit.

        Sends from several tasks (turns, the connection itself) are serialised by a lock, so
        frames never interleave and backpressure applies to each writer in turn.
        """
        try:
            payload = dump_outbound(msg)
        except LocalError:
            log.exception("link %d: could not encode a %s", self.info.link_id, type(msg).__name__)
            return False
        if len(payload) > MAX_OUTBOUND_FRAME and isinstance(msg, ChatDone):
            # chat.done carries the whole turn's text; keep its end within the limit.
            keep = MAX_OUTBOUND_FRAME // 2
            msg = msg.model_copy(update={"text": "[… earlier text trimmed]\n" + msg.text[-keep:]})
            payload = dump_outbound(msg)
        if len(payload) > MAX_OUTBOUND_FRAME:
            log.error(
                "link %d: refused a %d-byte %s (Chrome's limit is 1 MiB)",
                self.info.link_id,
                len(payload),
                getattr(msg, "type", "?"),
            )
            return False
        async with self._send_lock:
            try:
                self._stream.send(LinkData(payload))
                await self._stream.drain()
            except (ConnectionError, OSError, RuntimeError):
                return False
        return True

    async def _protocol_error(self, code: ErrorCode, message: str, **extra: Any) -> None:
        if self.info.protocol >= 2:
            await self.send(ErrorMessage(code=code, message=message, **extra))
        else:
            log.warning("link %d: %s: %s", self.info.link_id, code.value, message)

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

    # -- receiving --------------------------------------------------------------------------------

    async def handle(self, msg: Inbound) -> Any:
        self.last_active = time.monotonic()
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
        elif isinstance(parsed, Ping):
            await self.send(Pong(id=parsed.id))
        elif isinstance(parsed, ToolResult):
            self.proxy.on_tool_result(parsed)
        elif isinstance(parsed, CdpEvent):
            self.proxy.on_cdp_event(parsed)
        elif self.hub is None:
            await self._bare(parsed)
        else:
            await self._to_hub(self.hub, parsed)
        return None

    async def _to_hub(self, hub: ConnectionHub, parsed: Any) -> None:
        if isinstance(parsed, SessionStart):
            await hub.session_start(self, parsed)
        elif isinstance(parsed, SessionEnd):
            await hub.session_end(self, parsed.session_id)
        elif isinstance(parsed, ChatSend):
            await hub.chat_send(self, parsed)
        elif isinstance(parsed, ChatCancel):
            await hub.chat_cancel(self, parsed.session_id, parsed.turn_id)
        elif isinstance(parsed, ModelsListRequest):
            await self.send(ModelsList(models=await hub.list_models()))
        elif isinstance(parsed, ModelsSet):
            hub.set_model(parsed.id)
            await self.send(ModelsCurrent(id=hub.model_id))
        elif isinstance(parsed, AuthSignin):
            await self.send(await hub.refresh_auth())
        elif isinstance(parsed, ChatList):
            await self._chat_list(hub)
        elif isinstance(parsed, ChatHistory):
            await self._chat_history(hub, parsed)
        elif isinstance(parsed, ChatDelete):
            await self._chat_delete(hub, parsed.id)
        elif isinstance(parsed, HistoryClear):
            await self._history_clear(hub, parsed.session_id)
        elif isinstance(parsed, ConfigGet):
            values, schema = await hub.config_get()
            await self.send(ConfigResult(values=values, config_schema=schema))
        elif isinstance(parsed, ConfigSet):
            try:
                values, schema = await hub.config_set(dict(parsed.values))
            except ValueError as exc:
                await self._protocol_error(
                    ErrorCode.INVALID_MESSAGE, str(exc), request_type="config.set"
                )
                return
            await self.send(ConfigResult(values=values, config_schema=schema))
        elif isinstance(parsed, DoctorRun):
            checks = await hub.doctor()
            await self.send(DoctorResult(checks=[DoctorCheck(**c) for c in checks]))
        elif isinstance(parsed, ApprovalResponse):
            hub.approval_response(self, parsed)
        elif isinstance(parsed, UserAnswer):
            hub.user_answer(self, parsed)
        else:
            log.info("link %d: %s is not handled yet", self.info.link_id, parsed.type)
            if self.info.protocol >= 2:
                await self.send(
                    ErrorMessage(
                        code=ErrorCode.INTERNAL,
                        message=f"{parsed.type} is not supported by this host yet",
                        request_type=parsed.type,
                    )
                )

    @property
    def scope(self) -> str:
        return (
            self.info.install_id if self.info.protocol >= 2 and self.info.install_id else "default"
        )

    async def _chat_list(self, hub: ConnectionHub) -> None:
        chats = hub.store.list_chats(self.scope)
        await self.send(
            ChatListResult(
                chats=[
                    ChatSummary(
                        id=c.id,
                        summary=c.summary or None,
                        start_time=c.created_ms,
                        modified_time=c.modified_ms,
                    )
                    for c in chats
                ]
            )
        )

    async def _chat_history(self, hub: ConnectionHub, req: ChatHistory) -> None:
        v2 = self.info.protocol >= 2
        page = hub.store.history(
            self.scope,
            req.id,
            before=req.before if v2 else None,
            limit=req.limit if v2 else None,
        )
        # The store shapes rows for the wire; validate them once into the outbound model.
        result = ChatHistoryResult.model_validate(
            {"id": req.id, "messages": page.rows, "hasMore": page.has_more if v2 else None}
        )
        await self.send(result)

    async def _chat_delete(self, hub: ConnectionHub, chat_id: str) -> None:
        ok = False if hub.is_running(chat_id) else hub.store.delete(self.scope, chat_id)
        await self.send(ChatDeleteResult(id=chat_id, ok=ok))

    async def _history_clear(self, hub: ConnectionHub, session_id: str) -> None:
        entry = hub.table.lookup(session_id)
        if entry is None or entry.link.link_id != self.info.link_id:
            return
        if not hub.is_running(session_id):
            hub.store.delete(self.scope, session_id)

    async def _bare(self, parsed: Any) -> None:
        """Answers of a link without an agent hub (see the module docstring)."""
        if isinstance(parsed, SessionStart):
            await self._on_session_start(parsed)
        elif isinstance(parsed, SessionEnd):
            self.info.sessions.pop(parsed.session_id, None)
        elif isinstance(parsed, ChatSend):
            await self._on_chat_send(parsed)
        elif isinstance(parsed, ModelsListRequest):
            await self.send(ModelsList(models=self._models()))
        elif isinstance(parsed, ChatList):
            await self.send(ChatListResult(chats=[]))
        else:
            log.info("link %d: %s is not handled without an agent", self.info.link_id, parsed.type)

    async def _on_hello(self, hello: Hello) -> None:
        common = [p for p in SERVER_PROTOCOLS if p <= hello.protocol]
        if not common:
            self.info.protocol = 2  # the error frame is a v2 message; v1 never gets here
            await self.send(
                ErrorMessage(
                    code=ErrorCode.PROTOCOL_MISMATCH,
                    message=f"this host speaks protocols {SERVER_PROTOCOLS}, "
                    f"the extension {hello.protocol}",
                )
            )
            return
        self.info.protocol = max(common)
        self.info.install_id = hello.install_id
        self.proxy.protocol = self.info.protocol
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
            await self.end_turn_with_error(
                send.session_id,
                ErrorCode.UNKNOWN_SESSION,
                f"session {send.session_id} is not registered on this connection",
            )
            return
        await self.end_turn_with_error(
            send.session_id,
            ErrorCode.INTERNAL,
            "this daemon does not run agent turns yet (the agent is not installed)",
        )
