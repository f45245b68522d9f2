"""Stable error codes and the exception tree of the Browy host.

The codes are those of ``protocol.md`` section 4: they appear in ``error.code``, in tool errors and
in v2 ``chat.error.code``; a v1 client gets the v1 word from :func:`v1_chat_error_code` instead.

Exception tree::

    BrowyError(code, message)           .code: ErrorCode, .wire_message: str (safe for the peer)
    ├── PeerError                       the other side broke the protocol; report it and go on
    │   ├── InvalidMessage(field, message)      code INVALID_MESSAGE
    │   │   └── UnknownMessageType(type_name)   log and ignore (protocol.md section 1)
    │   ├── MessageTooLarge                     code MESSAGE_TOO_LARGE (inbound frame too long)
    │   ├── ProtocolMismatch                    code PROTOCOL_MISMATCH
    │   └── OriginForbidden                     code ORIGIN_FORBIDDEN
    └── LocalError                      our side failed; a bug or a limit we must not cross
        └── FrameTooLarge                       code MESSAGE_TOO_LARGE (outbound frame > 1 MiB)

``str(exc)`` may carry internal detail and belongs in the log. What goes on the wire is
``exc.wire_message`` (protocol.md section 4: internal exception text never goes on the wire).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = [
    "BrowyError",
    "ErrorCode",
    "FrameTooLarge",
    "InvalidMessage",
    "LocalError",
    "MessageTooLarge",
    "OriginForbidden",
    "PeerError",
    "ProtocolMismatch",
    "UnknownMessageType",
    "V1ChatErrorCode",
    "v1_chat_error_code",
]


class ErrorCode(StrEnum):
    """The stable error codes of protocol.md section 4 (value == name)."""

    PROTOCOL_MISMATCH = "PROTOCOL_MISMATCH"
    INVALID_MESSAGE = "INVALID_MESSAGE"
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
    ORIGIN_FORBIDDEN = "ORIGIN_FORBIDDEN"
    UNKNOWN_SESSION = "UNKNOWN_SESSION"
    SESSION_CONFLICT = "SESSION_CONFLICT"
    BUSY = "BUSY"
    CANCELLED = "CANCELLED"
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    WAIT_TIMEOUT = "WAIT_TIMEOUT"
    STALE_REF = "STALE_REF"
    DIALOG_OPEN = "DIALOG_OPEN"
    CONNECTION_LOST = "CONNECTION_LOST"
    CONNECTION_REPLACED = "CONNECTION_REPLACED"
    TOOL_DISABLED = "TOOL_DISABLED"
    APPROVAL_DENIED = "APPROVAL_DENIED"
    NOT_ALLOWED_URL = "NOT_ALLOWED_URL"
    NO_CAPABILITY = "NO_CAPABILITY"
    MODEL_ERROR = "MODEL_ERROR"
    AUTH = "AUTH"
    INTERNAL = "INTERNAL"


#: The words a v1 panel knows in ``chat.error.code`` (protocol.md section 3).
V1ChatErrorCode = Literal["aborted", "busy", "auth", "internal", "no_capability"]

# protocol.md section 4, "v2 code -> v1 chat.error.code". Every code not listed maps to "internal".
_V1_CHAT_ERROR_CODES: dict[ErrorCode, V1ChatErrorCode] = {
    ErrorCode.BUSY: "aborted",
    ErrorCode.AUTH: "auth",
    ErrorCode.NO_CAPABILITY: "no_capability",
    ErrorCode.CANCELLED: "aborted",
}


def v1_chat_error_code(code: ErrorCode) -> V1ChatErrorCode:
    """Return the word a v1 client expects in ``chat.error.code`` for ``code``.

    Only BUSY, AUTH, NO_CAPABILITY and CANCELLED have a v1 word of their own; everything else is
    ``"internal"`` and the caller should give a readable ``message`` with it.
    """
    return _V1_CHAT_ERROR_CODES.get(code, "internal")


class BrowyError(Exception):
    """Base of every error that carries a stable :class:`ErrorCode`.

    ``message`` is the detail for the log. Use :attr:`wire_message` for anything sent to a peer.
    """

    code: ErrorCode = ErrorCode.INTERNAL
    #: What the peer sees when the subclass does not say more; never derived from internal state.
    default_wire_message: str = "internal error"

    def __init__(self, message: str = "", *, code: ErrorCode | None = None) -> None:
        super().__init__(message or self.default_wire_message)
        self.message = message or self.default_wire_message
        if code is not None:
            self.code = code

    @property
    def wire_message(self) -> str:
        """A message safe to send to the peer: fixed text, never internal exception detail."""
        return self.default_wire_message


class PeerError(BrowyError):
    """The peer broke the protocol. Report it (v2 ``error`` frame; v1: log) and carry on."""


class InvalidMessage(PeerError):
    """A well-framed message whose content is bad (protocol.md section 1).

    ``field`` names the offending field as a dotted path (``""`` for the whole message, e.g. when
    it is not JSON). Its :attr:`wire_message` names the field and the problem, both of which come
    from the peer's own message and the schema, never from our internals.
    """

    code = ErrorCode.INVALID_MESSAGE
    default_wire_message = "invalid message"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.problem = message

    @property
    def wire_message(self) -> str:
        return self.message


class UnknownMessageType(InvalidMessage):
    """A message whose ``type`` this host does not know: log it and ignore it (section 1)."""

    def __init__(self, type_name: str) -> None:
        # repr() keeps control characters of a hostile type string out of the log line.
        super().__init__("type", f"unknown message type {type_name[:100]!r}")
        self.type_name = type_name


class MessageTooLarge(PeerError):
    """The peer declared a frame longer than our limit; the stream cannot be trusted: close it."""

    code = ErrorCode.MESSAGE_TOO_LARGE
    default_wire_message = "message too large"


class ProtocolMismatch(PeerError):
    """No protocol version both sides speak (section 4 handshake)."""

    code = ErrorCode.PROTOCOL_MISMATCH
    default_wire_message = "no common protocol version"


class OriginForbidden(PeerError):
    """The calling extension's origin is not in the allowed list (section 1); the host exits."""

    code = ErrorCode.ORIGIN_FORBIDDEN
    default_wire_message = "origin not allowed"


class LocalError(BrowyError):
    """Our own side failed (a bug, or a limit we must not cross). Log it; the peer gets INTERNAL."""


class FrameTooLarge(LocalError):
    """We were about to write a frame over the 1 MiB host -> browser limit (section 1).

    Nothing was written. The caller must split or trim the message (section 5) or fail the request.
    """

    code = ErrorCode.MESSAGE_TOO_LARGE
    default_wire_message = "message too large"
