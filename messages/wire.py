"""The wire vocabulary: every v1 and v2 message of protocol.md sections 2-4, parsed at the edge.

Inbound (extension -> host)::

    try:
        msg = parse_inbound(frame.payload)      # bytes from the codec, or an already-decoded dict
    except UnknownMessageType:
        ...                                     # log and ignore (section 1)
    except InvalidMessage as exc:
        ...                                     # v2: error{code: INVALID_MESSAGE, message:
                                                #     exc.wire_message}; v1: log. Then go on.
    match msg:
        case ChatSend(): ...

Outbound (host -> extension)::

    frame = encode_frame(dump_outbound(ChatDelta(session_id=sid, text=chunk)))

The models live in :mod:`messages.wire_inbound` and :mod:`messages.wire_outbound`; this module
holds the cached validators and the two functions at the edge.
"""

import re
from typing import Any, Final

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from messages.codec import decode_message
from messages.errors import InvalidMessage, LocalError, UnknownMessageType
from messages.wire_inbound import InboundMessage, Pong
from messages.wire_outbound import OutboundMessage

__all__ = [
    "INBOUND_ADAPTER",
    "INBOUND_TYPES",
    "OUTBOUND_ADAPTER",
    "OUTBOUND_TYPES",
    "dump_outbound",
    "parse_inbound",
    "pong_for",
]

#: Cached validators, built once at import (building one costs milliseconds).
INBOUND_ADAPTER: Final[TypeAdapter[InboundMessage]] = TypeAdapter(InboundMessage)
OUTBOUND_ADAPTER: Final[TypeAdapter[OutboundMessage]] = TypeAdapter(OutboundMessage)


def _union_tags(adapter: TypeAdapter[Any]) -> frozenset[str]:
    schema = adapter.json_schema()
    mapping: dict[str, str] = schema["discriminator"]["mapping"]
    return frozenset(mapping)


#: Every ``type`` string of each direction.
INBOUND_TYPES: Final = _union_tags(INBOUND_ADAPTER)
OUTBOUND_TYPES: Final = _union_tags(OUTBOUND_ADAPTER)


def _field_path(loc: tuple[int | str, ...]) -> str:
    # pydantic's loc starts with the union tag ("chat.send", "sessionId"); the tag is not a field.
    return ".".join(str(part) for part in loc[1:])


def parse_inbound(obj: dict[str, Any] | bytes) -> InboundMessage:
    """Validate one extension message: a frame payload (bytes) or a decoded JSON object.

    Raises :class:`UnknownMessageType` (a subclass of :class:`InvalidMessage`) for a ``type``
    this host does not know: log and ignore it. Raises :class:`InvalidMessage` for anything else
    that is wrong; ``exc.field`` is the camelCase path of the first bad field (``"sessionId"``,
    ``"params.x"``) and ``exc.wire_message`` reads ``"sessionId: Input should be a valid
    string"``, safe to send back in ``error.message``.
    """
    data = decode_message(obj) if isinstance(obj, bytes) else obj
    kind = data.get("type")
    if not isinstance(kind, str):
        # decode_message already checked bytes; this is for dicts built elsewhere.
        raise InvalidMessage("type", "field required" if kind is None else "must be a string")
    if kind not in INBOUND_TYPES:
        raise UnknownMessageType(kind)
    try:
        return INBOUND_ADAPTER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        raise InvalidMessage(_field_path(first["loc"]), first["msg"]) from None


def dump_outbound(msg: BaseModel) -> bytes:
    """Serialise a host -> extension model to the JSON bytes of one frame (without the prefix).

    camelCase names, None fields left out. Frame it with :func:`messages.codec.encode_frame`,
    which refuses frames over 1 MiB. Lone surrogates (page text and model output can carry
    them; UTF-8 cannot) are replaced with U+FFFD rather than failing the message. Raises
    :class:`LocalError` if the content still cannot be encoded.
    """
    obj = msg.model_dump(mode="json", by_alias=True, exclude_none=True)
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        pass
    try:
        return orjson.dumps(_without_surrogates(obj))
    except orjson.JSONEncodeError as exc:
        raise LocalError(f"cannot encode {type(msg).__name__}: {exc}") from exc


_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


_PING_PREFIX = b'{"type":"ping",'


def pong_for(payload: bytes) -> Pong | None:
    """The answer to a frame that is just a ``ping``, for the link's reader to send without a
    trip through the Connection's mailbox (a keepalive says the link and the loop are alive; it
    is not the extension's activity); None for anything else, which goes to the Connection."""
    if not payload.startswith(_PING_PREFIX):
        return None
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    ping_id = obj.get("id") if isinstance(obj, dict) and len(obj) == 2 else None
    if isinstance(ping_id, bool) or not isinstance(ping_id, str | int):
        return None
    return Pong(id=ping_id)
