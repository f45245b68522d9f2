"""Connection: the actor at one link's door (a browser through a relay, or a local client).

It owns the protocol level the extension chose in its ``hello`` (v1 or v2) and parses every inbound
frame once at the edge (:func:`messages.wire.parse_inbound`). Then it hands each message to the
part of the agent it is for (:class:`AgentFront`, handed down at construction): sessions, turns,
chats, the model side, settings, the user's answers. Answers to browser calls and CDP events go to
the link's CDPProxy (:mod:`actors.browser.cdp_proxy`), by message. Everything it sends goes
through the link's :class:`~actors.link.link_writer.LinkWriter` (1 MiB, whole frames).

Without an agent (a bare link, in tests) it still answers ``hello``, ``session.start`` (with the
initial push of section 3b) and ``ping``, and ends every ``chat.send`` with ``chat.error`` +
``status.error``.

Malformed frames: v2 ``error{INVALID_MESSAGE}`` naming the field; v1 logged. Unknown types are
logged and ignored (section 1).

A crash or stop tells the CDPProxy the connection is lost (its calls fail: page-changing ones are
``unknown``), then the agent (turns end with ``CONNECTION_LOST``, sessions are dropped). It is a
temporary child of its link's supervisor: a crashed Connection is not restarted — its link closes,
and the relay reconnects and registers its panels again (protocol.md section 6).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.agent.agent_config import AgentConfig
from actors.agent.asking import UserAsking
from actors.agent.chats import Chats
from actors.agent.images import ImageStore
from actors.agent.links import LinkHandle
from actors.agent.model_side import ModelSide
from actors.agent.sessions import Sessions
from actors.agent.tool_calls import ToolCalls
from actors.agent.turn_launch import TurnLauncher
from actors.browser.proxy_messages import (
    Answered,
    ConnectionLost,
    DownloadArrived,
    EventArrived,
    ProxyMsg,
)
from actors.browser.tabs import BrowserCalls
from actors.link.link_writer import ConnectionInfo, LinkWriter
from actors.runtime.actor import Actor
from actors.runtime.errors import ActorError
from actors.runtime.live_ref import LiveRef
from actors.runtime.ref import Overflow
from messages.codec import MAX_OUTBOUND_FRAME, decode_message
from messages.errors import ErrorCode, InvalidMessage, UnknownMessageType
from messages.wire import parse_inbound
from messages.wire_clients import ToolsListResult
from messages.wire_inbound import (
    ApprovalResponse,
    AuthSignin,
    CdpEvent,
    ChatCancel,
    ChatDelete,
    ChatHistory,
    ChatList,
    ChatSend,
    ClientHandTab,
    ClientStop,
    ClientTakeTab,
    ConfigGet,
    ConfigSet,
    DaemonRestart,
    DoctorRun,
    DownloadDone,
    DownloadStarted,
    Hello,
    HistoryClear,
    ImageGet,
    ModelsListRequest,
    ModelsSet,
    Ping,
    Pong,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
    ToolsListRequest,
    UserAnswer,
)
from messages.wire_outbound import (
    AuthStatus,
    ChatListResult,
    ConfigResult,
    DoctorCheck,
    DoctorResult,
    ErrorMessage,
    HelloAck,
    ImageData,
    ModelInfo,
    ModelsCurrent,
    ModelsList,
    SdkReady,
    SessionReady,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentFront:
    """The parts of the agent a Connection hands messages to."""

    sessions: Sessions
    turns: TurnLauncher
    chats: Chats
    models: ModelSide
    config: AgentConfig
    asking: UserAsking
    tools: ToolCalls
    images: ImageStore


__all__ = ["SERVER_CAPABILITIES", "SERVER_PROTOCOLS", "AgentFront", "Connection", "Inbound"]

log = logging.getLogger(__name__)

#: Extension protocol levels this host speaks (protocol.md: v1 and v2).
SERVER_PROTOCOLS = (1, 2)
SERVER_CAPABILITIES = (
    "chat.queue",
    "approvals",
    "user.ask",
    "cdp.cancel",
    "control.release",
    "cdp.targetSessions",
    "downloads",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Inbound:
    """One extension frame that arrived over the link (its JSON bytes)."""

    payload: bytes


class Connection(Actor[Inbound]):
    mailbox_size = 512
    overflow = Overflow.WAIT

    def __init__(
        self,
        *,
        info: ConnectionInfo,
        writer: LinkWriter,
        proxy: LiveRef[ProxyMsg],
        server_version: str,
        front: AgentFront | None = None,
        model_id: Callable[[], str] = lambda: "",
    ) -> None:
        self.info = info
        self._writer = writer
        self._proxy = proxy
        self._server_version = server_version
        self._front = front
        self._model_id = model_id
        self.link = LinkHandle(info=info, writer=writer, calls=BrowserCalls(proxy))

    async def on_start(self) -> None:
        if self._front is not None:
            self._front.sessions.link_opened(self.link)

    async def on_stop(self) -> None:
        await self._closed()

    async def on_failure(self, exc: BaseException) -> None:
        await self._closed()

    async def _closed(self) -> None:
        # The proxy first: a page-changing call in flight is "unknown" before its turn ends.
        try:
            await self._proxy.ask(ConnectionLost(), timeout=2.0)
        except (ActorError, LookupError, TimeoutError):
            log.info("link %d: its CDPProxy was already gone", self.info.link_id)
        if self._front is not None:
            await self._front.sessions.link_closed(self.link)

    async def send(self, msg: Any) -> bool:
        return await self._writer.send(msg)

    async def _protocol_error(self, code: ErrorCode, message: str, **extra: Any) -> None:
        if self.info.protocol >= 2:
            await self.send(ErrorMessage(code=code, message=message, **extra))
        else:
            log.warning("link %d: %s: %s", self.info.link_id, code.value, message)

    async def handle(self, msg: Inbound) -> Any:
        self.link.last_active = time.monotonic()
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
            await self._proxy.tell(Answered(result=parsed))
        elif isinstance(parsed, CdpEvent):
            await self._proxy.tell(EventArrived(event=parsed))
        elif isinstance(parsed, DownloadStarted | DownloadDone):
            if self.info.reports_downloads:  # v2 only: a v1 wire has no download.* (section 4)
                await self._proxy.tell(DownloadArrived(download=parsed))
        elif self._front is None:
            await self._bare(parsed)
        else:
            await self._to_agent(self._front, parsed)
        return None

    async def _to_agent(self, front: AgentFront, parsed: Any) -> None:
        link = self.link
        if isinstance(parsed, SessionStart):
            await front.sessions.session_start(link, parsed)
        elif isinstance(parsed, SessionEnd):
            await front.sessions.session_end(link, parsed.session_id)
        elif isinstance(parsed, ChatSend):
            await front.turns.chat_send(link, parsed)
        elif isinstance(parsed, ToolCall):
            await front.turns.tool_call(link, parsed)
        elif isinstance(parsed, ToolsListRequest):
            await self.send(
                ToolsListResult(
                    session_id=parsed.session_id,
                    tools=front.tools.specs(
                        parsed.session_id, host_tools=front.config.settings.mcp_host_tools
                    ),
                )
            )
        elif isinstance(parsed, ClientStop):
            await front.sessions.client_stop(link, parsed)
        elif isinstance(parsed, ClientHandTab):
            await front.sessions.hand_tab(link, parsed)
        elif isinstance(parsed, ClientTakeTab):
            await front.sessions.take_tab(link, parsed)
        elif isinstance(parsed, ChatCancel):
            await front.turns.chat_cancel(link, parsed.session_id, parsed.turn_id)
        elif isinstance(parsed, ModelsListRequest):
            await self.send(ModelsList(models=await front.models.list_models()))
        elif isinstance(parsed, ModelsSet):
            front.models.set_model(parsed.id)
            await self.send(ModelsCurrent(id=front.models.model_id))
        elif isinstance(parsed, AuthSignin):
            await front.config.sign_in(self.link)
        elif isinstance(parsed, ChatList):
            await front.chats.list(link)
        elif isinstance(parsed, ChatHistory):
            await front.chats.history(link, parsed)
        elif isinstance(parsed, ChatDelete):
            await front.chats.delete(link, parsed.id)
        elif isinstance(parsed, HistoryClear):
            await front.chats.clear(link, parsed.session_id)
        elif isinstance(parsed, ConfigGet):
            values, schema = await front.config.get()
            await self.send(ConfigResult(values=values, config_schema=schema))
        elif isinstance(parsed, ConfigSet):
            try:
                values, schema = await front.config.set(dict(parsed.values))
            except ValueError as exc:
                await self._protocol_error(
                    ErrorCode.INVALID_MESSAGE, str(exc), request_type="config.set"
                )
                return
            await self.send(ConfigResult(values=values, config_schema=schema))
        elif isinstance(parsed, ImageGet):
            await self._send_image(front.images, parsed)
        elif isinstance(parsed, DaemonRestart):
            log.warning("link %d: restart asked for by the options page", self.info.link_id)
            front.config.restart()
        elif isinstance(parsed, DoctorRun):
            checks = await front.config.doctor()
            await self.send(DoctorResult(checks=[DoctorCheck(**c) for c in checks]))
        elif isinstance(parsed, ApprovalResponse):
            front.asking.approval_response(parsed)
        elif isinstance(parsed, UserAnswer):
            front.asking.user_answer(parsed)
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

    async def _send_image(self, images: ImageStore, get: ImageGet) -> None:
        """``image.get``: the image in pieces that each fit a frame, or ``missing``."""
        chunks = images.chunks(get.session_id, get.image_id)
        if chunks is None:
            await self.send(
                ImageData(session_id=get.session_id, image_id=get.image_id, missing=True)
            )
            return
        for index, (mime, data) in enumerate(chunks):
            await self.send(
                ImageData(
                    session_id=get.session_id,
                    image_id=get.image_id,
                    mime=mime,
                    index=index,
                    count=len(chunks),
                    data=data,
                )
            )

    async def _bare(self, parsed: Any) -> None:
        """Answers of a link without an agent (see the module docstring)."""
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
        self.info.client = hello.client
        self.info.browser = hello.browser or ""
        if self.info.protocol >= 2:
            self.info.capabilities = frozenset(hello.capabilities or ())
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
            await self._writer.end_turn_with_error(
                send.session_id,
                ErrorCode.UNKNOWN_SESSION,
                f"session {send.session_id} is not registered on this connection",
            )
            return
        await self._writer.end_turn_with_error(
            send.session_id,
            ErrorCode.INTERNAL,
            "this daemon does not run agent turns yet (the agent is not installed)",
        )
