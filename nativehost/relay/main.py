"""The native messaging host process that Chrome starts (``com.browy.host``): a relay.

Chrome runs it with argv ``[path, "chrome-extension://<id>/"]`` and talks to it over stdin/stdout
(protocol.md section 1). It must start fast, so it imports little: no pydantic, no model SDKs.

Start-up order matters:

1. Protect the protocol stream: fd 1 is duplicated to a private descriptor that only the
   StdioFramer writes, then fd 1 itself is pointed at stderr, so a stray ``print`` — or a C
   library writing to fd 1 — cannot corrupt a frame (conventions.md item 8).
2. Check the caller's origin against the allowed list before anything else; a forbidden origin
   gets one ``error{code: ORIGIN_FORBIDDEN}`` frame and the process exits.
3. Start the Logger (the relay appends whole lines to ``logs/relay.log``; only the daemon rotates
   it, and the relay's Logger reopens the file when it finds it rotated),
   then the StdioFramer and the Uplink. EOF on stdin ends the process promptly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from actors.runtime.logger import LogSink

__all__ = ["main", "protect_stdout"]

log = logging.getLogger("nativehost.relay.main")


def protect_stdout() -> int:
    """Move the protocol stream off fd 1; return the private fd that carries frames from now on."""
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out_fd


def _spawn_daemon(home: Path) -> None:
    # Imported only when no daemon answers: the common start-up path never pays for it.
    from nativehost.daemon.process import spawn_detached

    spawn_detached(home)


def _env_seconds(name: str, default: float) -> float:
    """A duration from the environment (tests shorten the reconnect bounds), else *default*."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if 0 < value < 3600 else default


def _write_error_and_exit(out_fd: int, code: str, message: str) -> int:
    from messages.codec import encode_message

    with contextlib.suppress(OSError):
        os.write(out_fd, encode_message({"type": "error", "code": code, "message": message}))
    return 1


async def _serve(home: Path, origin: str, out_fd: int, log_sink: LogSink | None = None) -> int:
    """Run the relay's supervision tree until Chrome closes the port or the link gives up.

    The tree (:func:`supervisors.trees.relay_tree`): the Logger, the StdioFramer (temporary: a
    broken native stream cannot be resumed, so its end ends the relay) and the Uplink (permanent:
    restarted with backoff after a crash; the RelayCore outlives it). More restarts than the
    intensity allows ends the relay, and the extension's own reconnect starts a fresh one.
    """
    from actors.link.link_stream import LinkStream
    from actors.relay.relay_core import RelayCore
    from actors.relay.relay_marks import RelayMarks
    from actors.relay.stdio_framer import StdioFramer, WriteFrame
    from actors.relay.uplink import ExtensionClosed, FromExtension, Uplink, UplinkMsg
    from actors.runtime.backoff import FIRST_CONNECT_BUDGET_S, RECONNECT_BUDGET_S, link_backoff
    from actors.runtime.errors import ActorError
    from actors.runtime.ref import Ref
    from nativehost.link import open_link
    from supervisors.supervisor import Supervisor
    from supervisors.trees import relay_tree

    done = asyncio.Event()
    exit_code = 0
    core = RelayCore()
    sup: Supervisor | None = None

    def uplink_ref() -> Ref[UplinkMsg]:
        assert sup is not None
        return sup.ref("uplink")

    def framer_ref() -> Ref[WriteFrame]:
        assert sup is not None
        return sup.ref("stdio-framer")

    async def to_uplink(msg: UplinkMsg) -> None:
        assert sup is not None
        try:
            await uplink_ref().tell(msg)
        except (ActorError, LookupError):
            # Mid-restart: wait for the next incarnation, then deliver (nothing is dropped).
            await sup.wait_child("uplink", timeout=5.0)
            await uplink_ref().tell(msg)

    async def on_frame(payload: bytes) -> None:
        await to_uplink(FromExtension(payload=payload))

    async def on_eof(reason: str) -> None:
        log.info("stdin closed (%s); exiting", reason)
        with contextlib.suppress(Exception):
            await to_uplink(ExtensionClosed())
        done.set()

    def on_give_up(reason: str) -> None:
        nonlocal exit_code
        if reason != "extension closed the port":
            exit_code = 3
        done.set()

    async def connect() -> LinkStream:
        stream, welcome = await open_link(home, role="relay", origin=origin, timeout=3.0)
        log.info("linked to browyd pid %s (link v%d)", welcome.daemon_pid, welcome.version)
        return stream

    framer = StdioFramer(stdin=sys.stdin.buffer, stdout_fd=out_fd, on_frame=on_frame, on_eof=on_eof)
    marks = RelayMarks.for_home(home)  # turns this relay ends itself, for a later daemon

    def make_uplink() -> Uplink:
        return Uplink(
            core=core,
            framer=framer_ref,
            self_ref=uplink_ref,
            connect=connect,
            start_daemon=lambda: _spawn_daemon(home),
            on_give_up=on_give_up,
            first_connect_budget_s=_env_seconds("BROWY_RELAY_CONNECT_S", FIRST_CONNECT_BUDGET_S),
            reconnect_budget_s=_env_seconds("BROWY_RELAY_RECONNECT_S", RECONNECT_BUDGET_S),
            note_ended=marks.add,
        )

    sup = relay_tree(
        framer=lambda: framer,
        uplink=make_uplink,
        log_sink=log_sink,
        backoff=link_backoff(),  # the policy of the connector, too
    )
    await sup.start()
    framer.begin_reading()
    watcher = asyncio.ensure_future(sup.wait_stopped())
    waiter = asyncio.ensure_future(done.wait())
    # The framer is temporary: when it ends (a crash, or a broken stream), so does the relay.
    framer_end = asyncio.ensure_future(framer_ref().wait_stopped())
    try:
        finished, _ = await asyncio.wait(
            {watcher, waiter, framer_end}, return_when=asyncio.FIRST_COMPLETED
        )
        if watcher in finished and watcher.exception() is not None:
            log.error("the relay's supervisor gave up: %s", watcher.exception())
            exit_code = 4
    finally:
        waiter.cancel()
        framer_end.cancel()
        with contextlib.suppress(Exception):
            await sup.stop(timeout=2.0)
        watcher.cancel()
        with contextlib.suppress(BaseException):
            await watcher
    return exit_code


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    out_fd = protect_stdout()
    origin = argv[1] if len(argv) > 1 else ""

    from nativehost.home import browy_home, relay_log
    from nativehost.origins import read_allowed_origins

    home = browy_home()
    try:
        allowed = read_allowed_origins(home)
    except Exception:  # a broken config must not open the door: refuse everyone but us
        from nativehost.origins import OUR_EXTENSION_ID, origin_of

        allowed = [origin_of(OUR_EXTENSION_ID)]
    if origin not in allowed:
        return _write_error_and_exit(
            out_fd,
            "ORIGIN_FORBIDDEN",
            f"{origin or 'this caller'} is not allowed to use com.browy.host; "
            "run `browy install-host --extension-id <id>` to allow it",
        )

    from actors.runtime.logger import install_logging

    # Every relay appends to relay.log; the daemon rotates it, and this one follows (rotate=False).
    handle = install_logging(relay_log(home), rotate=False)
    log.info("relay pid %d for %s", os.getpid(), origin)
    try:
        return asyncio.run(_serve(home, origin, out_fd, handle.sink))
    finally:
        handle.close()


if __name__ == "__main__":
    sys.exit(main())
