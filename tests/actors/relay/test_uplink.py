"""The Uplink: its connector (no daemon: start one, link, or give up once the budget is spent), and
under a supervisor a crash restarts it without losing the panels' registrations."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from actors.link.link_stream import LinkStream
from actors.relay.relay_core import LinkState, RelayCore
from actors.relay.stdio_framer import WriteFrame
from actors.relay.uplink import FromExtension, Uplink, UplinkMsg
from actors.runtime.actor import Actor, spawn
from actors.runtime.ref import Ref
from supervisors.children import ChildSpec
from supervisors.policy import RestartType
from supervisors.supervisor import Supervisor


class Collector(Actor[WriteFrame]):
    """The StdioFramer's place: records frames; ``writes=False`` plays a closed stdout."""

    def __init__(self, *, writes: bool = True) -> None:
        self.frames: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self.writes = writes

    async def handle(self, msg: WriteFrame) -> Any:
        self.frames.append(orjson.loads(msg.payload))
        self.arrived.set()
        return self.writes


def core_with_a_turn_in_flight() -> RelayCore:
    core = RelayCore()
    core.from_extension(orjson.dumps({"type": "hello", "client": "extension", "protocol": 1}))
    core.from_extension(orjson.dumps({"type": "session.start", "sessionId": "sp-1"}))
    core.link_up(now=0.0)
    core.from_extension(orjson.dumps({"type": "chat.send", "sessionId": "sp-1", "text": "x"}))
    assert core.state is LinkState.LINKED
    return core


async def test_a_restarted_uplink_ends_the_turn_in_flight_and_keeps_the_registrations() -> None:
    core = core_with_a_turn_in_flight()
    collector = Collector()
    noted: list[tuple[str, str | None, int]] = []  # (session, turn, frames written by then)
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
            note_ended=lambda sid, turn: noted.append((sid, turn, len(collector.frames))),
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
        # The mark for a later daemon was kept once both frames of the end were written.
        assert noted == [("sp-1", None, 2)]
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


async def test_no_mark_is_kept_for_an_end_that_could_not_be_written_to_chrome() -> None:
    core = core_with_a_turn_in_flight()
    collector = Collector(writes=False)  # stdout is closed: the panel never gets the end
    noted: list[str] = []
    connects = asyncio.Event()
    never: asyncio.Future[LinkStream] = asyncio.get_running_loop().create_future()

    async def connect() -> LinkStream:
        connects.set()
        return await never

    framer = await spawn(collector, name="framer")
    uplink: Ref[UplinkMsg] | None = None
    uplink = await spawn(
        Uplink(
            core=core,
            framer=lambda: framer,
            self_ref=lambda: uplink,  # type: ignore[arg-type,return-value]
            connect=connect,
            start_daemon=lambda: None,
            on_give_up=lambda reason: None,
            note_ended=lambda sid, turn: noted.append(sid),
        ),
        name="uplink",
    )
    try:
        async with asyncio.timeout(2):
            await connects.wait()  # on_start has carried out the link_down actions
        assert [f["type"] for f in collector.frames] == ["chat.error", "event.activity"]
        assert noted == []
    finally:
        never.cancel()
        await uplink.stop()
        await framer.stop()


class QuietStream:
    """A linked daemon that says nothing: ``recv`` waits until closed; sends are recorded."""

    def __init__(self) -> None:
        self.sent: list[object] = []
        self.got = asyncio.Event()
        self.closed = asyncio.Event()

    async def recv(self) -> None:
        await self.closed.wait()

    def send(self, env: object) -> None:
        self.sent.append(env)
        self.got.set()

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        self.closed.set()


async def spawn_uplink(
    connect: Any, *, budget_s: float
) -> tuple[Ref[UplinkMsg], Ref[WriteFrame], list[float], asyncio.Future[str]]:
    """An Uplink with a fresh core, its daemon starts recorded and its give-up as a future."""
    daemon_starts: list[float] = []
    gave_up: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    framer = await spawn(Collector(), name="framer")
    uplink: Ref[UplinkMsg] | None = None
    uplink = await spawn(
        Uplink(
            core=RelayCore(),
            framer=lambda: framer,
            self_ref=lambda: uplink,  # type: ignore[arg-type,return-value]
            connect=connect,
            start_daemon=lambda: daemon_starts.append(time.monotonic()),
            on_give_up=lambda reason: gave_up.done() or gave_up.set_result(reason),
            first_connect_budget_s=budget_s,
        ),
        name="uplink",
    )
    return uplink, framer, daemon_starts, gave_up


async def test_with_no_daemon_the_uplink_starts_one_and_links_once_it_answers() -> None:
    attempts = 0
    stream = QuietStream()

    async def connect() -> LinkStream:
        nonlocal attempts
        attempts += 1
        if attempts <= 3:  # the first try, then two more while the daemon starts
            raise ConnectionRefusedError("no daemon yet")
        return stream  # type: ignore[return-value]

    uplink, framer, daemon_starts, gave_up = await spawn_uplink(connect, budget_s=5.0)
    try:
        hello = orjson.dumps({"type": "hello", "client": "extension", "protocol": 1})
        await uplink.ask(FromExtension(payload=hello), timeout=2)  # held until linked
        async with asyncio.timeout(2):
            await stream.got.wait()  # linked: the held hello went to the daemon
        assert attempts == 4
        assert len(daemon_starts) == 1  # started at the second failure, not again within 3 s
        assert not gave_up.done()
    finally:
        await uplink.stop()
        await framer.stop()


async def test_the_uplink_gives_up_when_the_budget_is_spent() -> None:
    async def connect() -> LinkStream:
        raise ConnectionRefusedError("no daemon")

    started = time.monotonic()
    uplink, framer, daemon_starts, gave_up = await spawn_uplink(connect, budget_s=0.3)
    try:
        reason = await asyncio.wait_for(gave_up, 2)
        assert reason.startswith("no daemon after 0 s: ConnectionRefusedError")
        assert 0.3 <= time.monotonic() - started < 2
        assert len(daemon_starts) == 1  # at most one start every 3 s
    finally:
        await uplink.stop()
        await framer.stop()
