"""DaemonServer: the daemon's listener, link handshake, connections, idle exit and shutdown.

- Listens on the Unix socket of :func:`nativehost.home.socket_path` (its directory 0700, the
  socket 0600) or, with ``link_transport = "tcp"``, on 127.0.0.1 with a random token written to
  ``run/link.json`` (0600) — architecture.md section 7.
- Accepts only the same user: the peer's uid (``SO_PEERCRED`` / ``LOCAL_PEERCRED``) must be ours;
  a TCP caller must present the token, compared in constant time.
- Handshake: the highest common link version, else ``LinkRefused(PROTOCOL_MISMATCH)``. A relay
  newer than this daemon makes it exit once idle, so the relay's next attempt starts a current
  daemon (the version-skew rule of protocol.md section 6).
- One :class:`actors.agent.connection.Connection` actor per relay link; ``cli`` links are answered
  with control operations (``status``, ``shutdown``).
- Exits when no link has been open for ``idle_exit_seconds`` (0: never), or on SIGTERM/SIGINT:
  the listener closes first, then every connection is stopped (failing what it holds).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import logging
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

import orjson

from actors.agent.connection import Connection, ConnectionInfo, Inbound
from actors.link.link_stream import LinkBroken, LinkStream, peer_uid
from actors.model.openai_gateway import ModelSettings
from actors.runtime.actor import ActorRef, Ref, spawn
from actors.store.chat_store import ChatStore
from messages.errors import ErrorCode
from messages.link import (
    LINK_VERSION_MAX,
    LINK_VERSION_MIN,
    LinkControl,
    LinkData,
    LinkHello,
    LinkRefused,
    LinkWelcome,
)
from nativehost.config import load_config
from nativehost.config_schema import Config
from nativehost.daemon.settings import HostSettings
from nativehost.home import ensure_private_dir, run_dir, socket_path
from nativehost.link import tcp_endpoint_path
from supervisors.agent import AgentHub, AgentSettings

__all__ = ["DaemonServer", "model_settings"]

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_S = 5.0


def model_settings(home: Path, config: Config) -> ModelSettings | None:
    """The gateway's settings from ``[model]`` (and the environment), or None if not configured."""
    model = config.model
    base_url = model.base_url
    if base_url is None and model.provider == "anthropic":
        base_url = "https://api.anthropic.com"
    if not base_url or not model.model:
        return None
    try:
        key = model.resolve_api_key(home)
    except Exception as exc:  # a named key file that cannot be read: reported as unauth
        log.error("model key: %s", exc)
        key = None
    return ModelSettings(
        provider=model.provider,
        base_url=base_url,
        api_key=key,
        model=model.model,
        stream_idle_timeout=min(model.request_timeout, 120.0),
    )


def agent_settings(home: Path, config: Config, version: str) -> AgentSettings:
    """The agent's settings from the validated config."""
    return AgentSettings(
        home=home,
        model=model_settings(home, config),
        turn_concurrency=config.daemon.turn_concurrency,
        allow_host_code=config.tools.allow_host_code,
        approval_mode=config.tools.approval_mode,
        v1_approval_mode=config.tools.v1_approval_mode,
        allow_local_clients=config.daemon.allow_local_clients,
        disabled_tools=frozenset(config.tools.disabled_tools),
        version=version,
    )


class DaemonServer:
    def __init__(
        self, home: Path, config: Config, *, version: str, store: ChatStore | None = None
    ) -> None:
        self.home = home
        self.config = config
        self.version = version
        self._ids = itertools.count(1)
        self._links: dict[int, tuple[ConnectionInfo, ActorRef[Inbound] | None]] = {}
        self._stop = asyncio.Event()
        self._activity = asyncio.Event()
        self._exit_when_idle = False
        self._started = time.monotonic()
        self._token = secrets.token_urlsafe(32)
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.hub = AgentHub(
            agent_settings(home, config, version),
            store=store,
            services=HostSettings(home),
            reload_settings=self._reload,
        )
        self.hub.services = HostSettings(home, tuple(self.hub.tools.registry.names()))

    def _prune(self) -> None:
        """Retention (``[retention]``): drop the chats beyond the newest N and older than D days.
        Runs at start, before any turn, so no running chat can be touched."""
        retention = self.config.retention
        if retention.max_chats <= 0 and retention.max_age_days <= 0:
            return
        try:
            dropped = self.hub.store.prune(
                max_chats=retention.max_chats or 1_000_000,
                max_age_days=retention.max_age_days or 36_500,
            )
        except Exception:  # retention must never keep the daemon from starting
            log.exception("pruning old chats failed")
            return
        if dropped:
            log.info("retention: removed %d old chat(s)", dropped)

    def connection_refs(self) -> list[Ref[Inbound]]:
        """The live connections' actor refs (for the fault-injection harness)."""
        return [ref for _, ref in self._links.values() if ref is not None]

    def _reload(self) -> AgentSettings:
        """Read config.toml again (after the options page saved it) with this process's env."""
        self.config = load_config(self.home)
        return agent_settings(self.home, self.config, self.version)

    # -- lifecycle --------------------------------------------------------------------------------

    async def serve(self) -> int:
        """Serve until stopped; returns the process exit code."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._stop.set)
        await self.hub.start()
        self._prune()
        self.hub.relay_marks.prune()  # marks of panels that never came back
        await self._listen()
        log.info("browyd %s pid %d serving %s", self.version, os.getpid(), self.home)
        idle = asyncio.ensure_future(self._idle_watch())
        stopped = asyncio.ensure_future(self._stop.wait())
        agent = asyncio.ensure_future(self.hub.wait_stopped())
        code = 0
        try:
            await asyncio.wait({stopped, agent}, return_when=asyncio.FIRST_COMPLETED)
            if agent.done():
                # The agent's supervisor gave up (more restarts than its intensity allows): fail
                # upward — the daemon exits and the relays start a fresh one (section 6).
                log.error("the agent supervision tree stopped: %r; exiting", agent.exception())
                code = 1
        finally:
            idle.cancel()
            stopped.cancel()
            agent.cancel()
            with contextlib.suppress(BaseException):
                await agent
            await self._shutdown()
        return code

    async def _listen(self) -> None:
        ensure_private_dir(run_dir(self.home))
        if self.config.daemon.link_transport == "tcp":
            self._server = await asyncio.start_server(self._on_client, "127.0.0.1", 0)
            port = self._server.sockets[0].getsockname()[1]
            endpoint = tcp_endpoint_path(self.home)
            tmp = endpoint.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(orjson.dumps({"port": port, "token": self._token, "pid": os.getpid()}))
            os.replace(tmp, endpoint)
            return
        path = socket_path(self.home)
        ensure_private_dir(path.parent)
        # We hold the daemon lock, so a socket file left here is a dead daemon's.
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._on_client, str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)

    async def _idle_watch(self) -> None:
        limit = self.config.daemon.idle_exit_seconds
        while True:
            self._activity.clear()
            if self._links or (limit <= 0 and not self._exit_when_idle):
                await self._activity.wait()
                continue
            wait_s = 0.2 if self._exit_when_idle else limit
            try:
                async with asyncio.timeout(wait_s):
                    await self._activity.wait()
            except TimeoutError:
                if not self._links:
                    log.info("idle for %.1f s; exiting", wait_s)
                    self._stop.set()
                    return

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for info, ref in list(self._links.values()):
            if ref is not None:
                with contextlib.suppress(Exception):
                    await ref.stop(timeout=2.0)
            log.info("link %d closed by shutdown", info.link_id)
        with contextlib.suppress(Exception):
            await self.hub.stop()
        for task in list(self._handlers):
            task.cancel()
        for task in list(self._handlers):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
        with contextlib.suppress(OSError):
            if self.config.daemon.link_transport == "tcp":
                tcp_endpoint_path(self.home).unlink()
            else:
                socket_path(self.home).unlink()

    # -- links ------------------------------------------------------------------------------------

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        stream = LinkStream(reader, writer)
        try:
            await self._serve_link(stream, writer)
        except (LinkBroken, ConnectionError, OSError, TimeoutError) as exc:
            log.info("link ended: %s", exc)
        finally:
            self._handlers.discard(task)
            stream.close()

    def _refuse(self, stream: LinkStream, code: ErrorCode, message: str) -> None:
        log.warning("refused a link: %s: %s", code.value, message)
        stream.send(LinkRefused(code=code.value, message=message))

    async def _serve_link(self, stream: LinkStream, writer: asyncio.StreamWriter) -> None:
        uid = peer_uid(writer)
        is_tcp = self.config.daemon.link_transport == "tcp"
        if not is_tcp and uid != os.getuid():
            self._refuse(stream, ErrorCode.ORIGIN_FORBIDDEN, "the link is open to its user only")
            await stream.drain()
            return
        async with asyncio.timeout(HANDSHAKE_TIMEOUT_S):
            hello = await stream.recv()
        if not isinstance(hello, LinkHello):
            self._refuse(stream, ErrorCode.INVALID_MESSAGE, "the first link frame must be hello")
            await stream.drain()
            return
        if is_tcp and not hmac.compare_digest((hello.token or "").encode(), self._token.encode()):
            self._refuse(stream, ErrorCode.ORIGIN_FORBIDDEN, "bad link token")
            await stream.drain()
            return
        version = min(LINK_VERSION_MAX, hello.max_version)
        if version < max(LINK_VERSION_MIN, hello.min_version):
            if hello.role == "relay" and hello.min_version > LINK_VERSION_MAX:
                self._exit_when_idle = True  # a newer relay: make way for a newer daemon
                self._activity.set()
            self._refuse(
                stream,
                ErrorCode.PROTOCOL_MISMATCH,
                f"link versions {hello.min_version}-{hello.max_version} requested; this daemon "
                f"({self.version}) speaks {LINK_VERSION_MIN}-{LINK_VERSION_MAX}"
                + (" and will exit when idle" if self._exit_when_idle else ""),
            )
            await stream.drain()
            return
        stream.send(
            LinkWelcome(version=version, daemon_version=self.version, daemon_pid=os.getpid())
        )
        await stream.drain()
        link_id = next(self._ids)
        info = ConnectionInfo(link_id=link_id, role=hello.role, origin=hello.origin)
        await self._serve_messages(info, stream)

    def _track(self, info: ConnectionInfo, ref: ActorRef[Inbound] | None) -> None:
        self._links[info.link_id] = (info, ref)
        self._activity.set()

    def _untrack(self, info: ConnectionInfo) -> None:
        self._links.pop(info.link_id, None)
        self._activity.set()

    async def _serve_messages(self, info: ConnectionInfo, stream: LinkStream) -> None:
        """One link's frames: extension (or CLI) messages to its Connection, controls answered.

        A ``relay`` link carries a browser; a ``cli``/``mcp`` link carries a local client whose
        sessions may drive a connected browser when the config allows it (protocol.md section 6).
        """
        conn = Connection(info=info, stream=stream, server_version=self.version, hub=self.hub)
        ref = await spawn(conn, name=f"connection-{info.link_id}")
        # A connection that dies (a crash) ends its link at once: the relay sees the drop,
        # ends its panels' open turns and reconnects, and the kept ends reach the panels when
        # they register again. A link left open would leave them waiting (protocol.md 6).
        ref.add_done_callback(lambda _outcome: stream.close())
        self._track(info, ref)
        log.info("link %d: %s for %s", info.link_id, info.role, info.origin or "a local client")
        try:
            while True:
                env = await stream.recv()
                if env is None:
                    break
                if isinstance(env, LinkData):
                    await ref.tell(Inbound(payload=env.payload))
                elif isinstance(env, LinkControl):
                    await self._on_control(info, stream, env)
        finally:
            self._untrack(info)
            with contextlib.suppress(Exception):
                await ref.stop(timeout=2.0)
            log.info("link %d: closed", info.link_id)

    async def _on_control(self, info: ConnectionInfo, stream: LinkStream, env: LinkControl) -> None:
        if env.op == "turns_ended" and info.role == "relay":
            sessions = env.args.get("sessions", [])
            if isinstance(sessions, list):
                self.hub.turns_ended_by_relay([s for s in sessions if isinstance(s, str)])
            return
        if info.role == "relay":
            log.warning("link %d: ignored control %r from a relay", info.link_id, env.op)
            return
        stream.send(LinkControl(op=env.op, args=self._control(env.op)))
        await stream.drain()

    def _control(self, op: str) -> dict[str, Any]:
        if op == "status":
            relays = [i for i, _ in self._links.values() if i.role == "relay"]
            return {
                "pid": os.getpid(),
                "version": self.version,
                "uptime_s": round(time.monotonic() - self._started, 1),
                "links": len(relays),
                "clients": len(self._links) - len(relays),
                "sessions": self.hub.table.count(),
            }
        if op == "shutdown":
            self._stop.set()
            return {"ok": True}
        return {"error": f"unknown operation {op!r}"}
