"""Extension -> host wire messages (protocol.md sections 2 and 4), as frozen pydantic models.

Field names are snake_case in Python and camelCase on the wire (``session_id`` <-> ``sessionId``);
both spellings are accepted when constructing a model. Unknown extra fields are ignored: a newer
extension may send more. v2-only fields are optional on the shared v1 models.

Import from :mod:`messages.wire`, which adds the parsing entry point.
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "ApprovalResponse",
    "AuthSignin",
    "CdpEvent",
    "ChatCancel",
    "ChatDelete",
    "ChatHistory",
    "ChatList",
    "ChatSend",
    "ClientHandTab",
    "ClientStop",
    "ClientTakeTab",
    "ConfigGet",
    "ConfigSet",
    "DaemonRestart",
    "DoctorRun",
    "DownloadDone",
    "DownloadStarted",
    "Hello",
    "HistoryClear",
    "ImageGet",
    "InboundMessage",
    "InboundModel",
    "ModelsListRequest",
    "ModelsSet",
    "Ping",
    "Pong",
    "SessionEnd",
    "SessionStart",
    "ToolCall",
    "ToolResult",
    "ToolsListRequest",
    "UserAnswer",
]


class InboundModel(BaseModel):
    """Base of the inbound models: frozen, camelCase on the wire, extra fields ignored."""

    model_config = ConfigDict(
        frozen=True, extra="ignore", populate_by_name=True, alias_generator=to_camel
    )


# --- v1, section 2 (v2 additions of section 4 as optional fields) --------------------------------


class Hello(InboundModel):
    """Handshake. v1: ``client``, ``protocol: 1``; v2 adds the install and its capabilities."""

    type: Literal["hello"] = "hello"
    client: str
    protocol: int
    extension_version: str | None = None  # v2
    install_id: str | None = None  # v2: scopes chats and settings to a browser profile
    capabilities: tuple[str, ...] | None = None  # v2; unknown ones are ignored
    browser: str | None = None  # v2: chrome | chromium | edge | brave | vivaldi | "" (unknown)


class SessionStart(InboundModel):
    """Register (or re-register) a panel's session on this connection."""

    type: Literal["session.start"] = "session.start"
    session_id: str
    capabilities: tuple[str, ...] = ()  # "cdp.activeTab": the session may drive tabs
    model: str | None = None
    inspected_tab_id: int | None = None
    # None: not sent. Section 3b: the latest lists sent apply to every session of the connection.
    disabled_tools: tuple[str, ...] | None = None
    enabled_host_tools: tuple[str, ...] | None = None
    window_id: int | None = None  # v2: "active tab" means this window's
    browser: str | None = None  # v2, local clients: drive the browser of this name (doctor's)


class SessionEnd(InboundModel):
    type: Literal["session.end"] = "session.end"
    session_id: str


class ChatSend(InboundModel):
    """Run one agent turn; section 3b says how every turn must end."""

    type: Literal["chat.send"] = "chat.send"
    session_id: str
    text: str
    turn_id: str | None = None  # v2: client-minted; a resend never starts a second turn
    #: v2: regenerate or edit — this turn replaces the chat's last turn (``chat.replaced``).
    replaces: str | None = None


class ToolCall(InboundModel):
    """v2, local clients (MCP): run one tool as a turn of its own — no model — on the session's
    tab; answered by ``tool.call.result``, then the turn's end as for ``chat.send``."""

    type: Literal["tool.call"] = "tool.call"
    session_id: str
    turn_id: str | None = None  # client-minted; a resend never runs the tool twice
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolsListRequest(InboundModel):
    """v2, local clients: the tools this session may call (``tools.list.result``)."""

    type: Literal["tools.list"] = "tools.list"
    session_id: str


class ClientStop(InboundModel):
    """v2, a panel: stop the MCP client ``client_id`` driving this browser — its running call is
    cancelled, and it must be allowed again."""

    type: Literal["client.stop"] = "client.stop"
    session_id: str
    client_id: str


class ClientHandTab(InboundModel):
    """v2, a panel: hand the tab ``tab_id`` to the MCP client ``client_id`` (it works there)."""

    type: Literal["client.hand_tab"] = "client.hand_tab"
    session_id: str
    client_id: str
    tab_id: int


class ClientTakeTab(InboundModel):
    """v2, a panel: take the tab ``tab_id`` back from the MCP client ``client_id`` (its call
    running there, if any, is cancelled; it is not told to the client's next call)."""

    type: Literal["client.take_tab"] = "client.take_tab"
    session_id: str
    client_id: str
    tab_id: int


class ChatCancel(InboundModel):
    type: Literal["chat.cancel"] = "chat.cancel"
    session_id: str
    turn_id: str | None = None  # v2


class HistoryClear(InboundModel):
    type: Literal["history.clear"] = "history.clear"
    session_id: str


class ToolResult(InboundModel):
    """Answer to a host request (``cdp.send``, ``tab.*``), matched by ``call_id`` (section 5)."""

    type: Literal["tool.result"] = "tool.result"
    session_id: str
    call_id: str
    ok: bool
    result: Any = None  # cdp.send: {tabId, result}; tab.*: TabInfo, TabInfo[] or null
    error: str | None = None  # Chrome's error text


class CdpEvent(InboundModel):
    type: Literal["cdp.event"] = "cdp.event"
    session_id: str
    tab_id: int | None = None
    method: str
    params: dict[str, Any] = Field(default_factory=dict)
    target_session_id: str | None = None  # v2 cdp.targetSessions: from that child session


class _Download(InboundModel):
    # Section 4, capability ``downloads``: what ``chrome.downloads`` says of a download the
    # browser made (a page's blob: link, a form answered with a file). v2 only.
    download_id: int
    url: str = ""
    final_url: str = ""
    referrer: str = ""
    mime: str = ""
    start_time: str = ""


class DownloadStarted(_Download):
    """A download began (``chrome.downloads.onCreated``); its file is not written yet."""

    type: Literal["download.started"] = "download.started"


class DownloadDone(_Download):
    """A download ended: ``complete`` (``filename`` is the absolute path Chrome wrote, ``bytes``
    its size) or ``interrupted`` (``error`` is Chrome's InterruptReason)."""

    type: Literal["download.done"] = "download.done"
    state: Literal["complete", "interrupted"]
    filename: str = ""
    bytes: int = 0
    error: str | None = None


class AuthSignin(InboundModel):
    type: Literal["auth.signin"] = "auth.signin"


class ModelsListRequest(InboundModel):
    """``models.list`` from the extension (the host's reply has the same type: ``ModelsList``)."""

    type: Literal["models.list"] = "models.list"


class ModelsSet(InboundModel):
    type: Literal["models.set"] = "models.set"
    id: str


class ChatList(InboundModel):
    type: Literal["chat.list"] = "chat.list"


class ChatHistory(InboundModel):
    type: Literal["chat.history"] = "chat.history"
    id: str
    before: int | None = None  # v2: page backwards
    limit: int | None = None  # v2


class ChatDelete(InboundModel):
    type: Literal["chat.delete"] = "chat.delete"
    id: str


# --- v2 only, section 4 ---------------------------------------------------------------------------


class ApprovalResponse(InboundModel):
    type: Literal["approval.response"] = "approval.response"
    session_id: str
    approval_id: str
    decision: Literal["allow", "allow_session", "allow_site", "deny"]


class UserAnswer(InboundModel):
    type: Literal["user.answer"] = "user.answer"
    session_id: str
    ask_id: str
    value: Any = None
    cancelled: bool | None = None


class ConfigGet(InboundModel):
    type: Literal["config.get"] = "config.get"


class ConfigSet(InboundModel):
    type: Literal["config.set"] = "config.set"
    values: dict[str, Any]


class DoctorRun(InboundModel):
    type: Literal["doctor.run"] = "doctor.run"


class ImageGet(InboundModel):
    """v2, a panel: fetch an image a tool of this session produced (``image.data`` pieces)."""

    type: Literal["image.get"] = "image.get"
    session_id: str
    image_id: str


class DaemonRestart(InboundModel):
    """v2, the options page: restart the host (the daemon exits; the relays reconnect and start
    a new one). Turns in flight end ``CONNECTION_LOST``; nothing is replayed."""

    type: Literal["daemon.restart"] = "daemon.restart"


class Ping(InboundModel):
    """Keepalive; both directions use this model. Answer with a ``Pong`` of the same ``id``."""

    type: Literal["ping"] = "ping"
    id: str | int


class Pong(InboundModel):
    type: Literal["pong"] = "pong"
    id: str | int


InboundMessage = Annotated[
    Hello
    | SessionStart
    | SessionEnd
    | ChatSend
    | ToolCall
    | ToolsListRequest
    | ClientStop
    | ClientHandTab
    | ClientTakeTab
    | ChatCancel
    | HistoryClear
    | ToolResult
    | CdpEvent
    | DownloadStarted
    | DownloadDone
    | AuthSignin
    | ModelsListRequest
    | ModelsSet
    | ChatList
    | ChatHistory
    | ChatDelete
    | ApprovalResponse
    | UserAnswer
    | ConfigGet
    | ConfigSet
    | DoctorRun
    | DaemonRestart
    | ImageGet
    | Ping
    | Pong,
    Field(discriminator="type"),
]
"""Any extension -> host message, discriminated on ``type``."""
