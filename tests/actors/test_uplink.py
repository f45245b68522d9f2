"""The Uplink under a supervisor: a crash restarts it without losing the panels' registrations."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from actors.link_stream import LinkStream
from actors.relay_core import LinkState, RelayCore
from actors.runtime import Actor, Ref
from actors.stdio_framer import WriteFrame
from actors.uplink import FromExtension, Uplink, UplinkMsg
from supervisors.policy import RestartType
from supervisors.supervisor import ChildSpec, Supervisor


class Collector(Actor[WriteFrame]):
    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()

    async def handle(self, msg: WriteFrame) -> Any:
        self.frames.append(orjson.loads(msg.payload))
        self.arrived.set()
        return True


async def test_a_restarted_uplink_ends_the_turn_in_flight_and_keeps_the_registrations() -> None:
    core = RelayCore()
    core.from_extension(orjson.dumps({"type": "hello", "client": "extension", "protocol": 1}))
    core.from_extension(orjson.dumps({"type": "session.start", "sessionId": "sp-1"}))
    core.link_up(now=0.0)
    core.from_extension(orjson.dumps({"type": "chat.send", "sessionId": "sp-1", "text": "x"}))
    assert core.state is LinkState.LINKED
    collector = Collector()
    connects = asyncio.Event()
    never: asyncio.Future[LinkStream] = asyncio.get_running_loop().create_future()

    async def connect() -> LinkStream:
        connects.set()
        return await never  # the daemon is away: stays in the outage

    sup: Supervisor | None = None

    def make() -> Uplink:
        assert sup is not None
        framer: Ref[WriteFrame] = sup.ref("framer")
        return Uplink(
            core=core,
            framer=lambda: framer,
            self_ref=lambda: sup.ref("uplink"),
            connect=connect,
            start_daemon=lambda: None,
            on_give_up=lambda reason: None,
        )

    sup = Supervisor(
        "relay",
        [
            ChildSpec("framer", start=lambda: collector, restart=RestartType.TEMPORARY),
            ChildSpec("uplink", start=make),
        ],
    )
    await sup.start()
    try:
        # The first incarnation found the core linked (as after a crash): the turn in flight
        # gets its definite end, and it reconnects.
        async with asyncio.timeout(2):
            await connects.wait()
            while len(collector.frames) < 2:
                collector.arrived.clear()
                await collector.arrived.wait()
        assert [f["type"] for f in collector.frames] == ["chat.error", "event.activity"]
        assert core.state is LinkState.OUTAGE
        assert core.live_sessions == ["sp-1"]
        # Crash it: the supervisor restarts it, and the registrations are still there.
        first = sup.child("uplink")
        uplink: Ref[UplinkMsg] = sup.ref("uplink")
        start2 = b'{"type": "session.start", "sessionId": "sp-2"}'
        await uplink.ask(FromExtension(payload=start2), timeout=2)  # handled before we go on
        first_core_sessions = core.live_sessions
        await first.stop()  # a stop of the incarnation; PERMANENT children come back
        restarted = await sup.wait_child("uplink", after=first, timeout=2)
        assert restarted is not first
        assert core.live_sessions == first_core_sessions == ["sp-1", "sp-2"]
    finally:
        never.cancel()
        await sup.stop()
