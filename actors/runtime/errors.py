"""The actor runtime's errors: what a sender learns when a message could not be handled.

Each error names the actor only; the exception text carries nothing internal, so it may reach
a log line or a wire error without leaking a crash's detail (kept in ``ActorCrashed.cause``).

Errors::

    ActorError
     +-- ActorStopped     the actor is stopping or stopped (definite: the message was not handled)
     +-- AskTimeout       no answer before the deadline (outcome unknown)
     +-- StaleActorRef    the ref names an incarnation that has been replaced
     +-- MailboxFull      overflow policy FAIL (or a tell's own timeout under WAIT)
     +-- ActorCrashed     the actor crashed while or before handling the message
"""

from __future__ import annotations

__all__ = [
    "ActorCrashed",
    "ActorError",
    "ActorStopped",
    "AskTimeout",
    "MailboxFull",
    "StaleActorRef",
]


class ActorError(Exception):
    """Base of the runtime's errors; ``actor_name`` names the actor, the text nothing internal."""

    def __init__(self, actor_name: str, detail: str) -> None:
        super().__init__(f"actor {actor_name!r}: {detail}")
        self.actor_name = actor_name


class ActorStopped(ActorError):
    """The actor is stopping or stopped; the message was not handled."""


class AskTimeout(ActorError):
    """No answer before the deadline; the actor may still handle the message later."""


class StaleActorRef(ActorError):
    """The ref's incarnation was replaced (restarted); look the name up again."""


class MailboxFull(ActorError):
    """The mailbox is full and the overflow policy (or the tell's timeout) says fail."""


class ActorCrashed(ActorError):
    """The actor crashed; ``cause`` is the exception (kept in-process, never sent on the wire)."""

    def __init__(self, actor_name: str, cause: BaseException | None) -> None:
        super().__init__(actor_name, "crashed")
        self.cause = cause
        self.__cause__ = cause
