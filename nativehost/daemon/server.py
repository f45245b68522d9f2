"""DaemonServer: the daemon's listener, link handshake, connections, idle exit and shutdown.

- Listens on the Unix socket of :func:`nativehost.home.socket_path` (its directory 0700, the
  socket 0600) or, with ``link_transport = "tcp"``, on 127.0.0.1 with a random token written to
  ``run/link.json`` (0600) — architecture.md section 7.
- Accepts only the same user: the peer's uid (``SO_PEERCRED`` / ``LOCAL_PEERCRED``) must be ours;
  a TCP caller must present the token, compared in constant time.
- Handshake: the highest common link version, else ``LinkRefused(PROTOCOL_MISMATCH)``. A relay
  newer than this daemon makes it exit once idle, so the relay's next attempt starts a current
  daemon (the version-skew rule of protocol.md section 6).
- The daemon's supervision tree (:class:`supervisors.trees.DaemonTree`): the Logger, the journal's
  syncer, the agent, the links (one supervisor per link: its CDPProxy and its Connection) and the
  Listener that owns the socket. ``cli`` links also get control operations (``status``,
  ``tree``, ``shutdown``).
- Exits when no link has been open for ``idle_exit_seconds`` (0: never), or on SIGTERM/SIGINT:
  the listener closes first, then every connection is stopped (failing what it holds).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import secrets
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from actors.agent.agent import build_agent
from actors.agent.agent_config import AgentSettings
from actors.agent.connection import Connection, Inbound
from actors.browser.cdp_proxy import CDPProxy
from actors.browser.proxy_messages import Subscriptions
from actors.link.link_stream import LinkBroken, LinkStream
from actors.link.link_writer import ConnectionInfo, LinkWriter
from actors.link.listener import Listener
from actors.runtime.actor import ActorRef
from actors.runtime.errors import ActorError
from actors.runtime.live_ref import LiveRef
from actors.runtime.logger import LogSink
from actors.runtime.redaction import redact
from actors.runtime.ref import Ref
from actors.store.chat_store import ChatStore
from messages.link import (
    LinkControl,
    LinkData,
)
from messages.wire import pong_for
from nativehost.config import load_config
from nativehost.config_schema import Config
from nativehost.daemon.agent_settings import agent_settings
from nativehost.daemon.link_door import NewerRelay, admit
from nativehost.daemon.settings import HostSettings
from nativehost.home import ensure_private_dir, run_dir, socket_path
from nativehost.link import tcp_endpoint_path
from supervisors.introspection import SupervisionEvent
from supervisors.supervisor import Supervisor
from supervisors.trees import AgentActors, DaemonTree, TurnsSupervisor, link_tree

__all__ = ["DaemonServer"]

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_S = 5.0


class DaemonServer:
    def __init__(
        self,
        home: Path,
        config: Config,
        *,
        version: str,
        store: ChatStore | None = None,
        log_sink: LogSink | None = None,
        observer: Callable[[SupervisionEvent], None] | None = None,
        on_relay_link: Callable[[], None] | None = None,
        first_link_within_s: float | None = None,
    ) -> None:
        """``on_relay_link`` is called once, when the first relay is welcomed (the process
        layer starts a standby then); with ``first_link_within_s``, a daemon that no link
        reached in that time exits (a standby that took over after a crash no relay came
        back from)."""
        self.home = home
        self._on_relay_link = on_relay_link
        self._first_link_within_s = first_link_within_s
        self._ever_linked = False
        self.config = config
        self.version = version
        self._ids = itertools.count(1)
        self._links: dict[int, tuple[ConnectionInfo, Supervisor | None]] = {}
        self._stop = asyncio.Event()
        self._activity = asyncio.Event()
        self._exit_when_idle = False
        self._started = time.monotonic()
        self._token = secrets.token_urlsafe(32)
        self._handlers: set[asyncio.Task[None]] = set()
        self._observer = observer
        chat_store = store or ChatStore(home / "sessions")
        if chat_store.redact is None:
            chat_store.redact = redact  # secrets never reach the journal, as the log
        turns = TurnsSupervisor(observer)
        self.agent = agent = build_agent(
            agent_settings(home, config, version),
            store=chat_store,
            start_turn=turns.start_turn,
            services=HostSettings(home),
            reload_settings=self._reload,
        )
        agent.config.services = HostSettings(
            home, tuple(agent.catalog.registry.names()), on_restart=self._restart_soon
        )

        def set_sync(run_job: Callable[[Callable[[], None]], Awaitable[None]]) -> None:
            chat_store.run_job = run_job

        self.tree = DaemonTree(
            agent=AgentActors(
                factories=[
                    ("session-router", agent.new_router),
                    ("turn-scheduler", agent.new_scheduler),
                    ("tool-worker", agent.new_worker),
                ],
                refs=[agent.router, agent.scheduler, agent.worker],
            ),
            turns=turns,
            listener=self._make_listener,
            log_sink=log_sink,
            set_sync=set_sync,
            observer=observer,
        )

    def _prune(self) -> None:
        """Retention (``[retention]``): drop the chats beyond the newest N and older than D days.
        Runs at start, before any turn, so no running chat can be touched."""
        retention = self.config.retention
        if retention.max_chats <= 0 and retention.max_age_days <= 0:
            return
        try:
            dropped = self.agent.store.prune(
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
        refs: list[Ref[Inbound]] = []
        for info, sup in list(self._links.values()):
            if sup is not None:
                with contextlib.suppress(LookupError):
                    refs.append(sup.ref(f"connection-{info.link_id}"))
        return refs

    def actor_refs(self) -> dict[str, Ref[Any]]:
        """The running incarnation of each agent actor and each link's CDPProxy, by name (for
        the fault harness); one in the middle of a restart is left out."""
        refs: dict[str, Ref[Any]] = {}
        agent = self.agent
        for live in (agent.router, agent.scheduler, agent.worker):
            with contextlib.suppress(LookupError):
                refs[live.name] = live.now()
        for info, sup in list(self._links.values()):
            if sup is not None:
                with contextlib.suppress(LookupError):
                    name = f"cdp-proxy-{info.link_id}"
                    refs[name] = sup.ref(name)
        return refs

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
        ensure_private_dir(run_dir(self.home))
        if self.config.daemon.link_transport != "tcp":
            ensure_private_dir(socket_path(self.home).parent)
        await self.tree.root.start()
        self.agent.open()
        self._prune()
        self.agent.relay_marks.prune()  # marks of panels that never came back
        log.info("browyd %s pid %d serving %s", self.version, os.getpid(), self.home)
        idle = asyncio.ensure_future(self._idle_watch())
        stopped = asyncio.ensure_future(self._stop.wait())
        tree = asyncio.ensure_future(self.tree.root.wait_stopped())
        code = 0
        try:
            await asyncio.wait({stopped, tree}, return_when=asyncio.FIRST_COMPLETED)
            if tree.done():
                # A subtree gave up (more restarts than its intensity allows): fail upward —
                # the daemon exits and the relays start a fresh one (section 6).
                log.error("the supervision tree stopped: %r; exiting", tree.exception())
                code = 1
        finally:
            idle.cancel()
            stopped.cancel()
            tree.cancel()
            with contextlib.suppress(BaseException):
                await tree
            await self._shutdown()
        return code

    def _make_listener(self) -> Listener:
        if self.config.daemon.link_transport == "tcp":
            return Listener(self._on_client, on_tcp_bound=self._write_endpoint)
        return Listener(self._on_client, socket_path=socket_path(self.home))

    def _write_endpoint(self, port: int) -> None:
        endpoint = tcp_endpoint_path(self.home)
        tmp = endpoint.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps({"port": port, "token": self._token, "pid": os.getpid()}))
        os.replace(tmp, endpoint)

    async def _idle_watch(self) -> None:
        limit = self.config.daemon.idle_exit_seconds
        while True:
            self._activity.clear()
            first = None if self._ever_linked else self._first_link_within_s
            if self._links or (limit <= 0 and not self._exit_when_idle and first is None):
                await self._activity.wait()
                continue
            wait_s = 0.2 if self._exit_when_idle else first if first is not None else limit
            try:
                async with asyncio.timeout(wait_s):
                    await self._activity.wait()
            except TimeoutError:
                if not self._links:
                    log.info("idle for %.1f s; exiting", wait_s)
                    self._stop.set()
                    return

    async def _shutdown(self) -> None:
        # The tree stops in reverse start order: the listener (no new links), the links (each
        # connection fails what it holds), the agent (every turn ends), the journal, the logger.
        with contextlib.suppress(Exception):
            await self.tree.root.stop(timeout=15.0)
        with contextlib.suppress(Exception):
            await self.agent.close()
        for task in list(self._handlers):
            task.cancel()
        for task in list(self._handlers):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.config.daemon.link_transport == "tcp":
            with contextlib.suppress(OSError):
                tcp_endpoint_path(self.home).unlink()

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

    async def _serve_link(self, stream: LinkStream, writer: asyncio.StreamWriter) -> None:
        hello = await admit(
            stream,
            writer,
            tcp_token=self._token if self.config.daemon.link_transport == "tcp" else None,
            daemon_version=self.version,
            timeout=HANDSHAKE_TIMEOUT_S,
        )
        if isinstance(hello, NewerRelay):
            self._exit_when_idle = True  # a newer relay: make way for a newer daemon
            self._activity.set()
            return
        if hello is None:
            return
        if hello.role == "relay" and self._on_relay_link is not None:
            on_relay_link, self._on_relay_link = self._on_relay_link, None
            on_relay_link()
        link_id = next(self._ids)
        info = ConnectionInfo(link_id=link_id, role=hello.role, origin=hello.origin)
        await self._serve_messages(info, stream)

    def _track(self, info: ConnectionInfo, sup: Supervisor | None) -> None:
        self._links[info.link_id] = (info, sup)
        self._ever_linked = True
        self._activity.set()

    def _untrack(self, info: ConnectionInfo) -> None:
        self._links.pop(info.link_id, None)
        self._activity.set()

    async def _serve_messages(self, info: ConnectionInfo, stream: LinkStream) -> None:
        """One link's frames: extension (or CLI) messages to its Connection, controls answered.

        A ``relay`` link carries a browser; a ``cli``/``mcp`` link carries a local client whose
        sessions may drive a connected browser when the config allows it (protocol.md section 6).
        """
        writer = LinkWriter(info, stream)
        subscriptions = Subscriptions()
        sup = link_tree(
            info.link_id,
            proxy=lambda: CDPProxy(info=info, writer=writer, subscriptions=subscriptions),
            connection=lambda proxy: Connection(
                info=info,
                writer=writer,
                proxy=proxy,
                server_version=self.version,
                front=self.agent.front,
                model_id=lambda: self.agent.models.model_id,
            ),
            observer=self._observer,
        )
        await self.tree.open_link(sup)
        connection: LiveRef[Inbound] = LiveRef(f"connection-{info.link_id}").bind(sup)
        # A connection that dies (a crash), or a link supervisor that gives up, ends its link at
        # once: the relay sees the drop, ends its panels' open turns and reconnects, and the
        # kept ends reach the panels when they register again (protocol.md 6).
        first = connection.now()
        if isinstance(first, ActorRef):
            first.add_done_callback(lambda _outcome: stream.close())
        watcher = asyncio.ensure_future(sup.wait_stopped())
        watcher.add_done_callback(lambda _task: stream.close())
        self._track(info, sup)
        log.info("link %d: %s for %s", info.link_id, info.role, info.origin or "a local client")
        try:
            while True:
                env = await stream.recv()
                if env is None:
                    break
                if isinstance(env, LinkData) and (pong := pong_for(env.payload)) is not None:
                    await writer.send(pong)  # a keepalive: answered here (messages.wire)
                elif isinstance(env, LinkData):
                    try:
                        await connection.tell(Inbound(payload=env.payload))
                    except (ActorError, LookupError):
                        break  # the connection is gone: its link ends
                elif isinstance(env, LinkControl):
                    await self._on_control(info, stream, env)
        finally:
            self._untrack(info)
            watcher.cancel()
            await self.tree.close_link(sup.name)
            log.info("link %d: closed", info.link_id)

    async def _on_control(self, info: ConnectionInfo, stream: LinkStream, env: LinkControl) -> None:
        if env.op == "turns_ended" and info.role == "relay":
            sessions = env.args.get("sessions", [])
            if isinstance(sessions, list):
                self.agent.ends.turns_ended_by_relay([s for s in sessions if isinstance(s, str)])
            return
        if info.role == "relay":
            log.warning("link %d: ignored control %r from a relay", info.link_id, env.op)
            return
        stream.send(LinkControl(op=env.op, args=self._control(env.op)))
        await stream.drain()

    def _restart_soon(self) -> None:
        """End this daemon in a moment (the frame that asked is handled first); a relay that is
        linked reconnects and starts the next one (``daemon.restart``)."""
        asyncio.get_running_loop().call_later(0.2, self._stop.set)

    def _control(self, op: str) -> dict[str, Any]:
        if op == "status":
            relays = [i for i, _ in self._links.values() if i.role == "relay"]
            return {
                "pid": os.getpid(),
                "version": self.version,
                "uptime_s": round(time.monotonic() - self._started, 1),
                "links": len(relays),
                "browsers": self.agent.links.browser_names(),
                "clients": len(self._links) - len(relays),
                "sessions": self.agent.table.count(),
            }
        if op == "tree":
            return {"tree": self.tree.root.describe()}
        if op == "shutdown":
            self._stop.set()
            return {"ok": True}
        return {"error": f"unknown operation {op!r}"}
