"""Cross-origin frames: an isolated world in each, reached through the right CDP session.

The snapshot's world in the top document cannot read a cross-origin ``<iframe>`` (a payment form, a
sign-in box, a chat widget); it numbers each one (a *slot*) and says where its content box is
(``snapshot.js``). :class:`Frames` finds the frame behind a slot and runs the same script in an
isolated world of it, whose element numbers start at ``slot * FRAME_BASE + 1``:

- a cross-origin frame of the same site runs in the tab's own renderer: ``Page.createIsolatedWorld``
  with its ``frameId`` on the tab's session (any protocol);
- a frame of another site runs in another renderer (site isolation): it is a target of its own.
  The tab's session auto-attaches to such targets (``Target.setAutoAttach{autoAttach: true,
  flatten: true}``; ``Target.attachedToTarget`` names each one's ``sessionId``, and its
  ``targetId`` is the frame's id) and the world lives in that child session — over our extension,
  ``cdp.send{targetSessionId}`` (protocol.md section 4, capability ``cdp.targetSessions``). A
  connection without child sessions (protocol 1) cannot reach it: the snapshot says so.

The frame id of a slot comes from ``DOM.describeNode`` of its ``<iframe>``. Input always goes to
the tab's session at top-viewport coordinates (the frame's offset added), so it is trusted and the
browser routes it to the frame.

Frames inside a cross-origin frame (a card issuer's check inside a payment form) are walked the
same way, :data:`MAX_DEPTH` levels down: the frame's world lists them with slots of its own, the
top document gives each a slot of the tab's numbering (``__browy.nestedSlot``, which remembers
which frame and local slot it stands for), and the world is made through the session of the
frame it is in — auto-attaching to that session's children when it is of yet another site. A
frame's offset is the sum of the boxes on its way down.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from actors.tools.cdp import CdpError, CdpSession, ErrorCode, is_context_gone
from actors.tools.page_types import _SNAPSHOT_JS, _WORLD_NAME

__all__ = ["FRAME_BASE", "MAX_DEPTH", "MAX_FRAMES", "FrameWorld", "Frames", "slot_of"]

log = logging.getLogger(__name__)

#: Element numbers of frame slot k start at k * FRAME_BASE + 1 (the top document's stay below).
FRAME_BASE = 100_000
_GROUP = "browy-frames"
#: How long a frame of another site may take to be attached after auto-attaching was asked for.
_ATTACH_WAIT_S = 2.5
_AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True}
#: How deep frames inside frames are walked (1: only the top document's own frames).
MAX_DEPTH = 3
#: At most this many cross-origin frames per snapshot (a page of ad frames stays cheap).
MAX_FRAMES = 24


def _sid(session: object) -> str | None:
    """A session's child-session id (None: the tab's own session)."""
    sid = getattr(session, "target_session", None)
    return str(sid) if sid else None


def slot_of(index: int) -> int:
    """The frame slot of an element number (0: the top document)."""
    return index // FRAME_BASE


@dataclass(slots=True)
class FrameWorld:
    """The isolated world of one cross-origin frame."""

    slot: int
    session: CdpSession
    frame_id: str
    other_site: bool  # out of process: reached through a child session
    context_id: int | None = None


@dataclass(slots=True)
class Frames:
    """The cross-origin frames of one tab's top document (see the module docstring). ``top`` is
    the tab's session; ``main_object(expr)`` evaluates in the top world and returns an object id."""

    top: CdpSession
    worlds: dict[int, FrameWorld] = field(default_factory=dict)
    #: child session of each out-of-process frame (targetId = frame id), from auto-attach events
    targets: dict[str, str] = field(default_factory=dict)
    #: the session whose auto-attach reported each target: a child session id (None: the tab's)
    attached_by: dict[str, str | None] = field(default_factory=dict)
    #: slot of a frame inside a frame -> (the slot of the frame it is in, its slot there); None
    #: for a frame of the top document's own
    nested: dict[int, tuple[int, int] | None] = field(default_factory=dict)
    #: counts the times a session's children were replaced (auto-attach switched off and on)
    generation: int = 0
    _attached: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def child_sessions(self) -> bool:
        return bool(getattr(self.top, "child_sessions", False)) and hasattr(self.top, "child")

    def forget(self) -> None:
        """The top document changed: its slots mean other frames now."""
        self.worlds.clear()
        self.nested.clear()
        self.targets.clear()
        self.attached_by.clear()

    async def world(self, slot: int, main_context: int) -> FrameWorld | str:
        """The world of frame ``slot`` (made if needed), or why it cannot be reached."""
        found = self.worlds.get(slot)
        if found is not None and found.context_id is not None:
            return found
        link = await self.parent_of(slot, main_context)
        outer: CdpSession = self.top
        if link is None:
            frame_id = await self._frame_id(
                self.top, main_context, f"__browy.frameEl({slot}, __browy.token)"
            )
        else:
            parent = await self.world(link[0], main_context)
            if isinstance(parent, str):
                return f"it is inside frame {link[0]}, and {parent}"
            if parent.context_id is None:
                raise CdpError(ErrorCode.STALE_REF, f"frame {link[0]} changed since the snapshot")
            outer = parent.session
            expr = f"__browy.frameEl({link[1]}, __browy.token)"
            frame_id = await self._frame_id(outer, parent.context_id, expr)
        if frame_id is None:
            raise CdpError(ErrorCode.STALE_REF, f"frame {slot} is gone")
        session: CdpSession | None = None
        other_site = False
        if await self._in_tree(outer, frame_id):
            session = outer
        elif not self.child_sessions:
            return "it runs in another process, which this connection cannot address"
        else:
            other_site = True
            target = await self._attach(outer, frame_id)
            if target is not None:
                session = self.top.child(target)  # type: ignore[attr-defined]
        if session is None:
            return "the browser did not attach to it"
        fw = FrameWorld(slot=slot, session=session, frame_id=frame_id, other_site=other_site)
        res = await session.send(
            "Page.createIsolatedWorld", {"frameId": frame_id, "worldName": _WORLD_NAME}
        )
        fw.context_id = int(res["executionContextId"])
        await self.evaluate(fw, _SNAPSHOT_JS)
        self.worlds[slot] = fw
        return fw

    async def parent_of(self, slot: int, main_context: int) -> tuple[int, int] | None:
        """(the frame it is in, its slot there) for a frame inside a frame; None for one of the
        top document's own (asked of the top document once: it keeps the numbering)."""
        if slot in self.nested:
            return self.nested[slot]
        link = await self._top_value(
            f"__browy.frameParent({int(slot)}, __browy.token)", main_context
        )
        self.nested[slot] = None if link is None else (int(link[0]), int(link[1]))
        return self.nested[slot]

    async def nested_slot(self, parent: int, local: int, main_context: int) -> int:
        """The tab-wide slot of the frame with slot ``local`` in frame ``parent``'s world."""
        expr = f"__browy.nestedSlot({int(parent)}, {int(local)}, __browy.token)"
        slot = int(await self._top_value(expr, main_context))
        self.nested[slot] = (parent, local)
        return slot

    async def box(self, slot: int, top_token: str, main_context: int) -> dict[str, float]:
        """Frame ``slot``'s content box in top-viewport pixels, now: STALE_REF if the top
        document is not ``top_token``'s any more, or a frame on the way down is gone."""
        link = await self.parent_of(slot, main_context)
        if link is None:
            box: dict[str, float] = await self._top_value(
                f"__browy.frameBox({int(slot)}, {json.dumps(top_token)})", main_context
            )
            return box
        outer = await self.box(link[0], top_token, main_context)
        parent = await self.world(link[0], main_context)  # made again by the next turn's tools
        if isinstance(parent, str):
            raise CdpError(ErrorCode.INTERNAL, f"frame {link[0]} cannot be reached: {parent}")
        inner = await self.evaluate(parent, f"__browy.frameBox({link[1]}, __browy.token)")
        return {**inner, "x": outer["x"] + inner["x"], "y": outer["y"] + inner["y"]}

    async def _top_value(self, expression: str, main_context: int) -> Any:
        try:
            res = await self.top.send(
                "Runtime.evaluate",
                {"expression": expression, "contextId": main_context, "returnByValue": True},
            )
        except CdpError as exc:
            if is_context_gone(exc):
                raise CdpError(ErrorCode.STALE_REF, "the page changed since the snapshot") from exc
            raise
        details = res.get("exceptionDetails")
        if details:
            text = str((details.get("exception") or {}).get("description") or details.get("text"))
            code = ErrorCode.STALE_REF if "STALE_REF" in text else ErrorCode.INTERNAL
            raise CdpError(code, text.splitlines()[0][:300])
        return res.get("result", {}).get("value")

    async def evaluate(
        self, fw: FrameWorld, expression: str, *, page_changing: bool = False
    ) -> Any:
        """Evaluate in ``fw``'s world; STALE_REF when the frame's document was replaced."""
        if fw.context_id is None:
            raise CdpError(ErrorCode.STALE_REF, "the frame changed since the snapshot")
        try:
            res = await fw.session.send(
                "Runtime.evaluate",
                {"expression": expression, "contextId": fw.context_id, "returnByValue": True,
                 "awaitPromise": True},
                page_changing=page_changing,
            )  # fmt: skip
        except CdpError as exc:
            if exc.code is ErrorCode.INTERNAL:  # the context (or the child session) is gone
                fw.context_id = None
                self.worlds.pop(fw.slot, None)
                raise CdpError(ErrorCode.STALE_REF, "the frame changed since the snapshot") from exc
            raise
        details = res.get("exceptionDetails")
        if details:
            exc_info = details.get("exception") or {}
            text = str(exc_info.get("description") or details.get("text") or "script error")
            code = ErrorCode.STALE_REF if "STALE_REF" in text else ErrorCode.INTERNAL
            raise CdpError(code, text.splitlines()[0][:300])
        return res.get("result", {}).get("value")

    async def _frame_id(self, session: CdpSession, context: int, expression: str) -> str | None:
        """The frame id of the ``<iframe>`` that ``expression`` gives in world ``context``."""
        res = await session.send(
            "Runtime.evaluate",
            {"expression": expression, "contextId": context, "objectGroup": _GROUP},
        )
        try:
            object_id = res.get("result", {}).get("objectId")
            if res.get("exceptionDetails") or not object_id:  # e.g. STALE_REF: it was removed
                return None
            node = (await session.send("DOM.describeNode", {"objectId": object_id}))["node"]
            frame = node.get("frameId")
            return str(frame) if frame else None
        finally:
            with contextlib.suppress(CdpError):
                await session.send("Runtime.releaseObjectGroup", {"objectGroup": _GROUP})

    async def _in_tree(self, session: CdpSession, frame_id: str) -> bool:
        """Is ``frame_id`` in ``session``'s own frame tree (the same renderer)?"""
        tree = (await session.send("Page.getFrameTree"))["frameTree"]
        stack = [tree]
        while stack:
            node = stack.pop()
            if node.get("frame", {}).get("id") == frame_id:
                return True
            stack.extend(node.get("childFrames", []))
        return False

    async def _target_of(self, frame_id: str, wait_s: float) -> str | None:
        """The child session of frame ``frame_id`` once its attach event came (it normally comes
        before the answer to ``Target.setAutoAttach``; a frame attached later is waited for)."""
        deadline = asyncio.get_running_loop().time() + wait_s
        while frame_id not in self.targets:
            self._attached.clear()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._attached.wait()
        return self.targets[frame_id]

    async def _attach(self, session: CdpSession, frame_id: str) -> str | None:
        """Auto-attach to ``session``'s out-of-process frames (the tab's, or a frame's) and
        return ``frame_id``'s child session. The events are listened to only meanwhile. A frame
        attached before without us hearing of it (another snapshot of this attachment) is
        reported again by switching auto-attach off and on — which gives every child of
        ``session`` a new session, so the ones cached are dropped."""
        if frame_id in self.targets:
            return self.targets[frame_id]

        def on_event(method: str, params: dict[str, Any]) -> None:
            self._on_event(session, method, params)

        unsubscribe = session.subscribe(on_event)  # type: ignore[attr-defined]
        if inspect.isawaitable(unsubscribe):
            unsubscribe = await unsubscribe
        try:
            # Attach events come before the answer (our extension forwards them first), so no
            # event yet means auto-attach was on already: switch it off and on at once.
            for attempt, wait_s in enumerate((0.0, _ATTACH_WAIT_S)):
                if attempt:
                    await session.send("Target.setAutoAttach", _AUTO_ATTACH | {"autoAttach": False})
                    self._drop_children_of(_sid(session))
                await session.send("Target.setAutoAttach", _AUTO_ATTACH)
                found = await self._target_of(frame_id, wait_s)
                if found is not None:
                    return found
            return None
        finally:
            unsubscribe()

    def _drop_children_of(self, parent: str | None) -> None:
        """Auto-attach of session ``parent`` (None: the tab's) was switched off: the sessions of
        its children, and of theirs, are gone, and so are the worlds made in them."""
        dead: set[str] = set()
        frontier: list[str | None] = [parent]
        while frontier:
            by = frontier.pop()
            for target in [t for t, b in self.attached_by.items() if b == by]:
                child = self.targets.pop(target, None)
                del self.attached_by[target]
                if child is not None and child not in dead:
                    dead.add(child)
                    frontier.append(child)
        for slot in [k for k, fw in self.worlds.items() if _sid(fw.session) in dead]:
            del self.worlds[slot]
        self.generation += 1

    def _on_event(self, session: CdpSession, method: str, params: dict[str, Any]) -> None:
        if method == "Target.attachedToTarget":
            info = params.get("targetInfo", {})
            if info.get("type") == "iframe":
                target = str(info.get("targetId"))
                self.targets[target] = str(params.get("sessionId"))
                self.attached_by[target] = _sid(session)
                self._attached.set()
        elif method == "Target.detachedFromTarget":
            gone = str(params.get("sessionId"))
            for target, child in list(self.targets.items()):
                if child == gone:
                    del self.targets[target]
                    self.attached_by.pop(target, None)
                    for fw in list(self.worlds.values()):
                        if fw.frame_id == target:
                            fw.context_id = None
