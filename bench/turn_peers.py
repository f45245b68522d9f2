"""The peers' side of ``bench_turns``: relays speaking protocol 2 that start sessions, send
``chat.send`` and settle each turn from the frames they read (moved out of
:mod:`bench.bench_turns`)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from tests.helpers.daemon_harness import DaemonHarness, LinkPeer

__all__ = ["TURN_TIMEOUT"]

TURN_TIMEOUT = 60.0


@dataclass
class _Turn:
    sent: float
    started: asyncio.Future[float]
    done: asyncio.Future[float]
    ended: asyncio.Future[tuple[float, str]]
    kinds: list[str] = field(default_factory=list)


class _Router:
    """Reads one peer's frames and settles the waiting turn of each session."""

    def __init__(self, peer: LinkPeer) -> None:
        self.peer = peer
        self.turns: dict[str, _Turn] = {}
        self.task = asyncio.ensure_future(self._run())

    def expect(self, session_id: str) -> _Turn:
        loop = asyncio.get_running_loop()
        turn = _Turn(
            time.perf_counter(), loop.create_future(), loop.create_future(), loop.create_future()
        )
        self.turns[session_id] = turn
        return turn

    async def _run(self) -> None:
        inbox = self.peer.inbox
        while (msg := await inbox.get()) is not None:
            now = time.perf_counter()
            turn = self.turns.get(msg.get("sessionId", ""))
            if turn is None:
                continue
            kind = msg["type"]
            turn.kinds.append(kind)
            if kind == "event.activity":
                event = msg.get("event")
                if event == "status.thinking" and not turn.started.done():
                    turn.started.set_result(now)
                elif event in ("status.idle", "status.error") and turn.done.done():
                    turn.ended.set_result((now, event))
            elif kind in ("chat.done", "chat.error") and not turn.done.done():
                turn.done.set_result(now)
        for turn in self.turns.values():
            for fut in (turn.started, turn.done, turn.ended):
                if not fut.done():
                    fut.set_exception(EOFError("the daemon closed the link"))

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def _one_turn(peer: LinkPeer, router: _Router, sid: str, text: str) -> _Turn:
    turn = router.expect(sid)
    await peer.send({"type": "chat.send", "sessionId": sid, "text": text})
    async with asyncio.timeout(TURN_TIMEOUT):
        await turn.ended
    return turn


async def _connect(h: DaemonHarness, count: int) -> list[LinkPeer]:
    peers = []
    for n in range(count):
        peer = await h.peer()
        await peer.hello(2, install_id=f"install-{n}")
        peers.append(peer)
    return peers


async def _start_sessions(peer: LinkPeer, sids: list[str]) -> None:
    for sid in sids:  # LinkPeer.start, with room for a loaded machine
        await peer.send({"type": "session.start", "sessionId": sid, "capabilities": []})
        await peer.until("models.list", timeout=TURN_TIMEOUT)
