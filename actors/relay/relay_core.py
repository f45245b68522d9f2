"""The relay's rules, as a pure state machine (protocol.md section 6).

The relay sits between Chrome's native port and the daemon's link. It reads only ``type``,
``sessionId`` and (for ``hello``) ``protocol`` of each frame; everything else is forwarded as the
same bytes. This module holds every rule about *what* to forward, hold back or answer, and does no
I/O: the StdioFramer and Uplink actors feed it events and carry out the actions it returns.

States (a table, like h11's)::

    CONNECTING --link_up--> LINKED --link_down--> OUTAGE --link_up--> LINKED
        |                                            |
        +------------------- give_up ----------------+--> CLOSED

Rules:

- CONNECTING (before the first handshake): what the extension sends is held in a bounded buffer,
  then forwarded in order once the link is up — a cold start loses nothing. A message that does
  not fit in the buffer is answered as during an outage.
- LINKED: frames flow both ways. ``hello``, ``session.start`` and ``session.end`` are noted so the
  registrations can be restored after a reconnect.
- OUTAGE (the link dropped): Chrome's port stays open. A ``chat.send`` gets ``chat.error`` (v1
  ``internal``, v2 ``CONNECTION_LOST``) then ``event.activity status.error``, so no panel stays
  busy; other v2 requests get ``error{code: CONNECTION_LOST}``; v2 ``ping`` is answered here;
  answers to host requests (``tool.result``, ``cdp.event``) are dropped, since the daemon failed
  those requests when the link went. Registrations made during the outage are noted.
- After a reconnect the registrations held are sent again — the ``hello`` and each live
  ``session.start`` — and only their direct replies are swallowed (``hello.ack``, each
  ``session.ready`` and the initial push of protocol.md section 3b). Registrations the extension
  made during the outage, or forwarded before it but not answered when the link dropped, have not
  been answered yet, so their replies are forwarded. Expected replies that never come stop being
  expected after ``SWALLOW_WINDOW_S``.
- A turn in flight when the link drops (a ``chat.send`` forwarded, its ``chat.done`` /
  ``chat.error`` not yet seen) is ended by the relay at once — ``chat.error`` then
  ``status.error`` — because the daemon that should end it can no longer reach this port. After
  the reconnect the relay tells the daemon which sessions' turns it ended
  (``LinkControl("turns_ended", {"sessions": [...]})``, sent before the registrations), so the
  daemon records those turns as ended instead of sending a second end (exactly one end per
  ``chat.send``, protocol.md section 3b). Each such end is followed by a :class:`NoteEnded`: the
  shell keeps a mark on disk (actors/relay/relay_marks.py) once the end is written, for a next
  daemon in case this relay dies before it can say so.
- Nothing is ever re-sent but registrations: a page-changing request of the old link is never
  replayed (protocol.md section 5, "No replay").
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass

import orjson

from messages.codec import peek

__all__ = [
    "INITIAL_PUSH_TYPES",
    "SWALLOW_WINDOW_S",
    "Action",
    "IllegalTransition",
    "LinkState",
    "NoteEnded",
    "RelayCore",
    "ToDaemon",
    "ToDaemonControl",
    "ToExtension",
]

#: Broadcasts the daemon sends after every ``session.ready`` (protocol.md section 3b).
INITIAL_PUSH_TYPES = ("sdk.ready", "auth.status", "models.current", "models.list")
#: How long after a reconnect the replies to re-sent registrations are still expected.
SWALLOW_WINDOW_S = 10.0

_REGISTRATION_TYPES = frozenset({"hello", "session.start", "session.end"})
#: What gets no answer during an outage: answers to host requests, events (a download's news is
#: lost with the link: the next daemon connection starts with no downloads), and no-reply asks.
_SILENT_DURING_OUTAGE = frozenset(
    {"tool.result", "cdp.event", "download.started", "download.done", "pong", "history.clear"}
)


class LinkState(enum.Enum):
    CONNECTING = "connecting"
    LINKED = "linked"
    OUTAGE = "outage"
    CLOSED = "closed"


_TRANSITIONS: dict[tuple[LinkState, str], LinkState] = {
    (LinkState.CONNECTING, "link_up"): LinkState.LINKED,
    (LinkState.CONNECTING, "link_down"): LinkState.CONNECTING,
    (LinkState.CONNECTING, "give_up"): LinkState.CLOSED,
    (LinkState.LINKED, "link_down"): LinkState.OUTAGE,
    (LinkState.LINKED, "give_up"): LinkState.CLOSED,
    (LinkState.OUTAGE, "link_up"): LinkState.LINKED,
    (LinkState.OUTAGE, "link_down"): LinkState.OUTAGE,
    (LinkState.OUTAGE, "give_up"): LinkState.CLOSED,
    (LinkState.CLOSED, "give_up"): LinkState.CLOSED,
}


class IllegalTransition(RuntimeError):
    """An event that the current state does not allow: a bug in the caller."""


@dataclass(frozen=True, slots=True)
class ToDaemon:
    """Send these bytes (the extension's JSON, untouched) over the link."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class ToDaemonControl:
    """Send this control operation over the link (between our own processes)."""

    op: str
    args: dict[str, object]


@dataclass(frozen=True, slots=True)
class ToExtension:
    """Write these bytes (one JSON object) to Chrome as one native frame."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class NoteEnded:
    """The relay ended this session's cut turn: once the end is written to Chrome, keep a mark
    that a later daemon can find (actors/relay/relay_marks.py)."""

    session_id: str
    turn_id: str | None


Action = ToDaemon | ToDaemonControl | ToExtension | NoteEnded


class RelayCore:
    """Decides what the relay forwards, holds, answers and swallows. See the module docstring."""

    def __init__(self, *, max_buffer_bytes: int = 8 * 1024 * 1024, max_buffer_frames: int = 2000):
        self.state = LinkState.CONNECTING
        self._max_buffer_bytes = max_buffer_bytes
        self._max_buffer_frames = max_buffer_frames
        self._buffer: list[bytes] = []
        self._buffer_bytes = 0
        self._hello: bytes | None = None
        # sessionId -> its latest session.start frame, in registration order.
        self._sessions: dict[str, bytes] = {}
        # Registrations noted during an outage: their replies are the extension's, not ours.
        self._fresh: set[str] = set()
        self._fresh_hello = False
        # Registrations forwarded whose direct reply has not reached the extension yet (a link
        # that drops first leaves them unanswered: after the reconnect their replies go through).
        self._hello_answered = True
        self._unanswered: set[str] = set()
        self._swallow: Counter[tuple[str, str | None]] = Counter()
        self._swallow_until = 0.0
        # Sessions with a chat.send forwarded whose end has not come back yet (-> its turnId).
        self._open_turns: dict[str, str | None] = {}
        # Sessions whose cut turn the relay ended during the outage (told to the daemon later).
        self._ended_by_relay: set[str] = set()
        self.protocol = 1

    # -- events ---------------------------------------------------------------------------------

    def _move(self, event: str) -> None:
        try:
            self.state = _TRANSITIONS[(self.state, event)]
        except KeyError:
            raise IllegalTransition(f"{event} in state {self.state.value}") from None

    def from_extension(self, payload: bytes) -> list[Action]:
        """A frame arrived from Chrome. Returns what to do with it."""
        head = peek(payload)
        kind = head.type
        if kind == "hello":
            self._hello = payload
            self._hello_answered = False
            self.protocol = head.protocol if head.protocol is not None else 1
            if self.state is LinkState.OUTAGE:
                self._fresh_hello = True
        elif kind == "session.start" and head.session_id is not None:
            self._sessions.pop(head.session_id, None)
            self._sessions[head.session_id] = payload
            self._unanswered.add(head.session_id)
            if self.state is LinkState.OUTAGE:
                self._fresh.add(head.session_id)
        elif kind == "session.end" and head.session_id is not None:
            self._sessions.pop(head.session_id, None)
            self._fresh.discard(head.session_id)
            self._unanswered.discard(head.session_id)

        if self.state is LinkState.LINKED:
            if kind == "chat.send" and head.session_id is not None:
                self._open_turns[head.session_id] = head.turn_id
            return [ToDaemon(payload)]
        if self.state is LinkState.CONNECTING and self._fits(payload):
            self._buffer.append(payload)
            self._buffer_bytes += len(payload)
            return []
        if kind in _REGISTRATION_TYPES:
            # Held as a registration; sent when the link is back.
            return []
        return self._outage_answer(kind, head.session_id, payload)

    def from_daemon(self, payload: bytes, *, now: float) -> list[Action]:
        """A frame arrived from the daemon. Returns it for Chrome unless it is a swallowed reply."""
        if self._open_turns:
            head = peek(payload)
            if head.type in ("chat.done", "chat.error") and head.session_id is not None:
                self._open_turns.pop(head.session_id, None)
        if self._swallow:
            if now > self._swallow_until:
                self._swallow.clear()
            else:
                head = peek(payload)
                key = (head.type or "", head.session_id if head.type == "session.ready" else None)
                if self._swallow[key] > 0:
                    self._swallow[key] -= 1
                    if self._swallow[key] == 0:
                        del self._swallow[key]
                    return []
        if self._unanswered or not self._hello_answered:
            head = peek(payload)
            if head.type == "hello.ack":
                self._hello_answered = True
            elif head.type == "session.ready" and head.session_id is not None:
                self._unanswered.discard(head.session_id)
        return [ToExtension(payload)]

    def link_up(self, *, now: float) -> list[Action]:
        """The link's handshake completed. Returns the frames to send first, in order."""
        first = self.state is LinkState.CONNECTING
        self._move("link_up")
        if first:
            out: list[Action] = [ToDaemon(p) for p in self._buffer]
            self._buffer.clear()
            self._buffer_bytes = 0
            return out
        out = []
        self._swallow.clear()
        if self._ended_by_relay:
            out.append(ToDaemonControl("turns_ended", {"sessions": sorted(self._ended_by_relay)}))
            self._ended_by_relay.clear()
        if self._hello is not None:
            out.append(ToDaemon(self._hello))
            if not self._fresh_hello:
                self._swallow[("hello.ack", None)] += 1
        for session_id, start in self._sessions.items():
            out.append(ToDaemon(start))
            if session_id in self._fresh:
                continue
            self._swallow[("session.ready", session_id)] += 1
            for kind in INITIAL_PUSH_TYPES:
                self._swallow[(kind, None)] += 1
        self._fresh.clear()
        self._fresh_hello = False
        self._swallow_until = now + SWALLOW_WINDOW_S
        return out

    def link_down(self) -> list[Action]:
        """The link dropped (or a connect attempt failed). Chrome's port stays open.

        Returns the definite ends of the turns that were in flight on the lost link.
        """
        self._move("link_down")
        self._swallow.clear()
        # Registrations the lost link never answered are as good as new: their replies after
        # the reconnect are the extension's (a hello.ack swallowed here would leave its hello
        # unanswered until its timer kills this relay).
        if self._hello is not None and not self._hello_answered:
            self._fresh_hello = True
        self._fresh |= self._unanswered & self._sessions.keys()
        out: list[Action] = []
        for session_id in sorted(self._open_turns):
            turn_id = self._open_turns[session_id]
            out += self._turn_end(session_id, turn_id)
            out.append(NoteEnded(session_id, turn_id))
            self._ended_by_relay.add(session_id)
        self._open_turns.clear()
        return out

    def give_up(self) -> list[Action]:
        """The reconnect bound ran out: the relay exits and the extension reconnects itself."""
        self._move("give_up")
        return []

    # -- helpers ----------------------------------------------------------------------------------

    @property
    def live_sessions(self) -> list[str]:
        return list(self._sessions)

    def _fits(self, payload: bytes) -> bool:
        return (
            len(self._buffer) < self._max_buffer_frames
            and self._buffer_bytes + len(payload) <= self._max_buffer_bytes
        )

    def _outage_answer(
        self, kind: str | None, session_id: str | None, payload: bytes
    ) -> list[Action]:
        v2 = self.protocol >= 2
        if kind == "chat.send" and session_id is not None:
            return self._turn_end(session_id, peek(payload).turn_id)
        if not v2 or kind is None or kind in _SILENT_DURING_OUTAGE:
            return []
        if kind == "ping":
            # Keepalive is between the extension and "the host": the relay can answer it alone.
            try:
                ping_id = orjson.loads(payload).get("id")
            except (orjson.JSONDecodeError, AttributeError):
                ping_id = None
            return [_to_ext({"type": "pong", "id": ping_id})]
        error: dict[str, object] = {
            "type": "error",
            "code": "CONNECTION_LOST",
            "message": "The Browy daemon is not reachable; reconnecting.",
            "requestType": kind,
        }
        if session_id is not None:
            error["sessionId"] = session_id
        return [_to_ext(error)]

    def _turn_end(self, session_id: str, turn_id: str | None = None) -> list[Action]:
        error: dict[str, object] = {
            "type": "chat.error",
            "sessionId": session_id,
            "message": "The Browy daemon is not reachable; reconnecting. Try again.",
            "code": "CONNECTION_LOST" if self.protocol >= 2 else "internal",
        }
        if turn_id is not None and self.protocol >= 2:
            error["turnId"] = turn_id  # v2: the panel drops any later end of the same turn
        return [
            _to_ext(error),
            _to_ext({"type": "event.activity", "sessionId": session_id, "event": "status.error"}),
        ]


def _to_ext(obj: dict[str, object]) -> ToExtension:
    return ToExtension(orjson.dumps(obj))
