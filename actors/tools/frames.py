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
browser routes it to the frame. Frames inside a cross-origin frame are not walked.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from dataclasses import dataclass, field
from typing import Any

from actors.tools.cdp import CdpError, CdpSession, ErrorCode
from actors.tools.page_types import _SNAPSHOT_JS, _WORLD_NAME

__all__ = ["FRAME_BASE", "FrameWorld", "Frames", "slot_of"]

log = logging.getLogger(__name__)

#: Element numbers of frame slot k start at k * FRAME_BASE + 1 (the top document's stay below).
FRAME_BASE = 100_000
_GROUP = "browy-frames"
#: How long a frame of another site may take to be attached after auto-attaching was asked for.
_ATTACH_WAIT_S = 2.5
_AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True}


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
    _attached: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def child_sessions(self) -> bool:
        return bool(getattr(self.top, "child_sessions", False)) and hasattr(self.top, "child")

    def forget(self) -> None:
        """The top document changed: its slots mean other frames now."""
        self.worlds.clear()

    async def world(self, slot: int, main_context: int) -> FrameWorld | str:
        """The world of frame ``slot`` (made if needed), or why it cannot be reached."""
        found = self.worlds.get(slot)
        if found is not None and found.context_id is not None:
            return found
        frame_id = await self._frame_id(slot, main_context)
        if frame_id is None:
            raise CdpError(ErrorCode.STALE_REF, f"frame {slot} is gone")
        session: CdpSession | None = None
        other_site = False
        if await self._in_tab_tree(frame_id):
            session = self.top
        elif not self.child_sessions:
            return "it runs in another process, which this connection cannot address"
        else:
            other_site = True
            target = await self._attach(frame_id)
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

    async def _frame_id(self, slot: int, main_context: int) -> str | None:
        res = await self.top.send(
            "Runtime.evaluate",
            {"expression": f"__browy.frameEl({int(slot)}, __browy.token)",
             "contextId": main_context, "objectGroup": _GROUP},
        )  # fmt: skip
        try:
            object_id = res.get("result", {}).get("objectId")
            if not object_id:
                return None
            node = (await self.top.send("DOM.describeNode", {"objectId": object_id}))["node"]
            frame = node.get("frameId")
            return str(frame) if frame else None
        finally:
            with contextlib.suppress(CdpError):
                await self.top.send("Runtime.releaseObjectGroup", {"objectGroup": _GROUP})

    async def _in_tab_tree(self, frame_id: str) -> bool:
        tree = (await self.top.send("Page.getFrameTree"))["frameTree"]
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

    async def _attach(self, frame_id: str) -> str | None:
        """Auto-attach to the tab's out-of-process frames and return ``frame_id``'s session. The
        events are listened to only meanwhile. A frame attached before without us hearing of it
        (another snapshot of this attachment) is reported again by switching auto-attach off
        and on — which gives every child a new session, so the cached ones are dropped."""
        if frame_id in self.targets:
            return self.targets[frame_id]
        unsubscribe = self.top.subscribe(self._on_event)  # type: ignore[attr-defined]
        if inspect.isawaitable(unsubscribe):
            unsubscribe = await unsubscribe
        try:
            # Attach events come before the answer (our extension forwards them first), so no
            # event yet means auto-attach was on already: switch it off and on at once.
            for attempt, wait_s in enumerate((0.0, _ATTACH_WAIT_S)):
                if attempt:
                    await self.top.send(
                        "Target.setAutoAttach", _AUTO_ATTACH | {"autoAttach": False}
                    )
                    self.targets.clear()
                    for slot in [k for k, fw in self.worlds.items() if fw.other_site]:
                        del self.worlds[slot]
                await self.top.send("Target.setAutoAttach", _AUTO_ATTACH)
                found = await self._target_of(frame_id, wait_s)
                if found is not None:
                    return found
            return None
        finally:
            unsubscribe()

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Target.attachedToTarget":
            info = params.get("targetInfo", {})
            if info.get("type") == "iframe":
                self.targets[str(info.get("targetId"))] = str(params.get("sessionId"))
                self._attached.set()
        elif method == "Target.detachedFromTarget":
            gone = str(params.get("sessionId"))
            for target, session in list(self.targets.items()):
                if session == gone:
                    del self.targets[target]
                    for fw in list(self.worlds.values()):
                        if fw.frame_id == target:
                            fw.context_id = None
