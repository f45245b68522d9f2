"""Host -> extension wire messages (protocol.md sections 3 and 4), as frozen pydantic models.

The browser requests (``cdp.send``, ``tab.*``, ``cdp.cancel``, ``control.release``) are in
:mod:`messages.wire_browser`; :data:`OutboundMessage` is the union of every direction's type.

Construct them with snake_case names; :func:`messages.wire.dump_outbound` writes camelCase and
leaves out fields that are None. Extra fields are refused so a typo fails in our tests, not in
the panel. List fields take any sequence (a list or a tuple). v2-only fields are optional: leave
them None for a v1 client (a v1 client never receives a v2-only message, protocol.md
introduction).

Size limits (section 5) are the sender's job: these models do not trim anything.
"""

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from messages.errors import ErrorCode, V1ChatErrorCode
from messages.wire_base import OutboundModel
from messages.wire_browser import (
    CdpCancel,
    CdpSend,
    ControlRelease,
    TabActivate,
    TabClose,
    TabGetActive,
    TabList,
    TabNew,
)
from messages.wire_clients import ClientsList, ToolCallResult, ToolsListResult
from messages.wire_inbound import Ping, Pong

__all__ = [
    "ActivityEvent",
    "ApprovalRequest",
    "AskOption",
    "AssistantRow",
    "AuthStatus",
    "ChatDeleteResult",
    "ChatDelta",
    "ChatDone",
    "ChatError",
    "ChatHistoryResult",
    "ChatListResult",
    "ChatQueued",
    "ChatReplaced",
    "ChatSummary",
    "ChatToolCall",
    "ChatToolResult",
    "ConfigResult",
    "DoctorCheck",
    "DoctorResult",
    "ErrorMessage",
    "EventActivity",
    "HelloAck",
    "HistoryRow",
    "ImageData",
    "ImageInfo",
    "ModelInfo",
    "ModelsCurrent",
    "ModelsList",
    "OutboundMessage",
    "SdkReady",
    "SessionReady",
    "ToolRow",
    "Usage",
    "UserAsk",
    "UserRow",
]


ActivityEvent = Literal[
    "llm_call_start",
    "llm_call_end",
    "tool_start",
    "tool_end",
    "reasoning",
    "status.thinking",
    "status.idle",
    "status.error",
]

# --- v1, section 3 (v2 additions of section 4 as optional fields) --------------------------------


class HelloAck(OutboundModel):
    type: Literal["hello.ack"] = "hello.ack"
    protocol: int
    server_version: str
    capabilities: Sequence[str] | None = None  # v2
    max_message_bytes: int | None = None  # v2


class SessionReady(OutboundModel):
    type: Literal["session.ready"] = "session.ready"
    session_id: str
    model: str | None
    capabilities: Sequence[str] = ()


class ChatDelta(OutboundModel):
    """Streamed assistant text; split long text over several frames (section 5)."""

    type: Literal["chat.delta"] = "chat.delta"
    session_id: str
    text: str


class ChatToolCall(OutboundModel):
    type: Literal["chat.tool_call"] = "chat.tool_call"
    session_id: str
    call_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class ImageInfo(OutboundModel):
    """v2: an image a tool produced, fetched by the panel with ``image.get``."""

    image_id: str
    mime: str
    bytes: int  # of its base64


class ChatToolResult(OutboundModel):
    type: Literal["chat.tool_result"] = "chat.tool_result"
    session_id: str
    call_id: str
    ok: bool
    summary: str | None = None
    duration_ms: int | None = None
    outcome: Literal["ok", "error", "unknown"] | None = None  # v2
    images: Sequence[ImageInfo] | None = None  # v2: e.g. a screenshot, shown inline


class ImageData(OutboundModel):
    """v2, the answer to ``image.get``: one piece (``index`` of ``count``) of the image's base64;
    ``missing``: the image is gone (the store keeps the newest ones) or is not this session's."""

    type: Literal["image.data"] = "image.data"
    session_id: str
    image_id: str
    mime: str = ""
    index: int = 0
    count: int = 0
    data: str = ""
    missing: bool | None = None


class ChatReplaced(OutboundModel):
    """v2: ``chat.send{replaces}`` dropped that turn from the chat (its history and the model's
    context). Nothing it did is undone: ``page_changed`` says whether it changed a page."""

    type: Literal["chat.replaced"] = "chat.replaced"
    session_id: str
    turn_id: str
    page_changed: bool


class ChatDone(OutboundModel):
    """End of a turn: ``text`` is all the turn's assistant text (section 3)."""

    type: Literal["chat.done"] = "chat.done"
    session_id: str
    text: str
    tool_calls: Sequence[dict[str, Any]] = ()
    turn_id: str | None = None  # v2: which chat.send this ends (a panel drops a second end)


class ChatError(OutboundModel):
    """The turn failed or was refused. v1 clients get a V1ChatErrorCode, v2 an ErrorCode."""

    type: Literal["chat.error"] = "chat.error"
    session_id: str
    message: str
    code: ErrorCode | V1ChatErrorCode | None = None
    turn_id: str | None = None  # v2: which chat.send this ends (a panel drops a second end)


class EventActivity(OutboundModel):
    type: Literal["event.activity"] = "event.activity"
    session_id: str
    event: ActivityEvent
    tool: str | None = None
    args: dict[str, Any] | None = None
    duration_ms: int | None = None
    input_count: int | None = None
    text: str | None = None


class AuthStatus(OutboundModel):
    type: Literal["auth.status"] = "auth.status"
    state: Literal["ready", "unauth", "unknown"]
    detail: str | None = None


class SdkReady(OutboundModel):
    type: Literal["sdk.ready"] = "sdk.ready"
    ok: bool
    detail: str | None = None


class ModelInfo(OutboundModel):
    id: str
    name: str
    vendor: str | None = None


class ModelsList(OutboundModel):
    type: Literal["models.list"] = "models.list"
    models: Sequence[ModelInfo]


class ModelsCurrent(OutboundModel):
    type: Literal["models.current"] = "models.current"
    id: str


class ChatSummary(OutboundModel):
    id: str
    summary: str | None = None
    start_time: int  # ms since epoch
    modified_time: int


class ChatListResult(OutboundModel):
    type: Literal["chat.list.result"] = "chat.list.result"
    chats: Sequence[ChatSummary]  # newest first


class UserRow(OutboundModel):
    role: Literal["user"] = "user"
    text: str  # the user's own words, without the context the host added
    timestamp: int | None = None
    turn_id: str | None = None  # v2: the turn this row starts (to regenerate or edit it)


class AssistantRow(OutboundModel):
    role: Literal["assistant"] = "assistant"
    text: str
    timestamp: int | None = None


class ToolRow(OutboundModel):
    role: Literal["tool"] = "tool"
    name: str
    ok: bool
    summary: str | None = None
    timestamp: int | None = None


HistoryRow = Annotated[UserRow | AssistantRow | ToolRow, Field(discriminator="role")]


class ChatHistoryResult(OutboundModel):
    type: Literal["chat.history.result"] = "chat.history.result"
    id: str
    messages: Sequence[HistoryRow]
    has_more: bool | None = None  # v2


class ChatDeleteResult(OutboundModel):
    type: Literal["chat.delete.result"] = "chat.delete.result"
    id: str
    ok: bool


# --- v2 only, section 4 ---------------------------------------------------------------------------


class ChatQueued(OutboundModel):
    type: Literal["chat.queued"] = "chat.queued"
    session_id: str
    turn_id: str
    position: int


class ApprovalRequest(OutboundModel):
    type: Literal["approval.request"] = "approval.request"
    session_id: str
    approval_id: str
    tool: str
    args: dict[str, Any]
    summary: str
    risk: str
    origin: str


class AskOption(OutboundModel):
    label: str
    value: str


class UserAsk(OutboundModel):
    type: Literal["user.ask"] = "user.ask"
    session_id: str
    ask_id: str
    kind: Literal["input", "confirm", "choose"]
    prompt: str
    options: Sequence[AskOption] | None = None
    default_value: str | None = None


class Usage(OutboundModel):
    type: Literal["usage"] = "usage"
    session_id: str
    input_tokens: int
    output_tokens: int
    total_tokens: int


class ConfigResult(OutboundModel):
    type: Literal["config.result"] = "config.result"
    values: dict[str, Any]
    # "schema" would shadow a BaseModel attribute; the wire name stays "schema".
    config_schema: dict[str, Any] = Field(validation_alias="schema", serialization_alias="schema")


class DoctorCheck(OutboundModel):
    name: str
    ok: bool
    detail: str
    fix: str | None = None


class DoctorResult(OutboundModel):
    type: Literal["doctor.result"] = "doctor.result"
    checks: Sequence[DoctorCheck]


class ErrorMessage(OutboundModel):
    """``error``: a protocol-level refusal. ``message`` must be a safe text (``wire_message``)."""

    type: Literal["error"] = "error"
    code: ErrorCode
    message: str
    session_id: str | None = None
    request_type: str | None = None


OutboundMessage = Annotated[
    HelloAck
    | SessionReady
    | ChatDelta
    | ChatToolCall
    | ChatToolResult
    | ChatDone
    | ChatError
    | CdpSend
    | TabNew
    | TabActivate
    | TabList
    | TabGetActive
    | EventActivity
    | AuthStatus
    | SdkReady
    | ModelsList
    | ModelsCurrent
    | ChatListResult
    | ChatHistoryResult
    | ChatDeleteResult
    | ChatQueued
    | ToolCallResult
    | ToolsListResult
    | ClientsList
    | ChatReplaced
    | ImageData
    | TabClose
    | CdpCancel
    | ControlRelease
    | ApprovalRequest
    | UserAsk
    | Usage
    | ConfigResult
    | DoctorResult
    | ErrorMessage
    | Ping
    | Pong,
    Field(discriminator="type"),
]
"""Any host -> extension message, discriminated on ``type``."""
