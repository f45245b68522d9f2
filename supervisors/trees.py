"""The supervision trees, one per process, in one place.

The daemon (``browyd``)::

    browyd                 rest_for_one, 0 restarts: a subtree that gives up ends the daemon
    ├── logger             thread (Logger)           permanent
    ├── journal            thread (JournalSyncer)    permanent
    ├── agent              one_for_one, 5 restarts in 10 s
    │   ├── session-router    actor                  permanent
    │   ├── turn-scheduler    actor                  permanent
    │   ├── tool-worker       actor                  permanent
    │   └── turns             one_for_one            permanent
    │       └── turn:<id>        task                temporary, one per running turn
    ├── links              one_for_one
    │   └── link-<n>          one_for_one, 3 in 5 s   temporary, one per open link
    │       ├── cdp-proxy-<n>    actor (CDPProxy)    permanent
    │       └── connection-<n>   actor (Connection)  temporary: its end closes the link
    ├── listener           actor (the socket)        permanent
    └── heap               task                      permanent: hands freed memory back each minute

The relay (one per Chrome native port)::

    relay                  one_for_one, 5 restarts in 10 s
    ├── logger             thread (Logger)           permanent
    ├── stdio-framer       actor (StdioFramer)       temporary: a broken stream ends the relay
    └── uplink             actor (Uplink)            permanent, restarted with backoff

Start order is dependency order; a supervisor stops its children in reverse. Why the daemon's
root restarts nothing: every subtree below it keeps state the others rely on (the agent's route
table and turns, the links that feed them), so a subtree that exhausted its own restarts is best
replaced by a fresh daemon — the relays start one within about a second and every panel
registers again, and the journal settles each cut turn (protocol.md section 6). The agent's
restart intensity is what the fault harness checks (``browy chaos``, the ``supervised``
invariant).

Each function here builds a tree from factories handed to it (the process layer wires them:
:mod:`nativehost.daemon.server`, :mod:`nativehost.relay.main`); nothing here knows what the
parts do, and nothing here imports the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from actors.runtime.actor import Actor
from actors.runtime.backoff import Backoff
from actors.runtime.live_ref import LiveRef
from actors.runtime.logger import LogSink
from actors.runtime.threaded import ThreadedRef, spawn_threaded
from supervisors.children import ChildSpec, TaskChild
from supervisors.introspection import SupervisionEvent
from supervisors.policy import RestartIntensity, RestartType, Strategy
from supervisors.supervisor import Supervisor

if TYPE_CHECKING:
    from actors.store.journal_syncer import SyncJob

__all__ = [
    "AGENT_INTENSITY",
    "LINK_INTENSITY",
    "AgentActors",
    "DaemonTree",
    "Observer",
    "TurnsSupervisor",
    "link_tree",
    "relay_tree",
]

log = logging.getLogger(__name__)

Observer = Callable[[SupervisionEvent], None]
ActorFactory = Callable[[], Actor[Any]]

#: The agent's restart intensity: more restarts than this and the daemon exits.
AGENT_INTENSITY = (5, 10.0)
#: One link's: a CDPProxy that keeps crashing closes its link (the relay reconnects).
LINK_INTENSITY = (3, 5.0)
#: How long an fsync may take before the journal's ask gives up (the turn still ends).
FSYNC_TIMEOUT_S = 60.0


class TurnsSupervisor:
    """The ``turns`` supervisor of the agent: each running turn is a temporary task child.

    A separate supervisor from the agent's, so the scheduler launching a turn never waits on the
    supervisor that may be stopping the scheduler itself (a deadlock with one for both)."""

    def __init__(self, observer: Observer | None = None) -> None:
        self._observer = observer
        self.current: Supervisor | None = None

    async def start(self) -> Supervisor:
        sup = Supervisor("turns", [], strategy=Strategy.ONE_FOR_ONE, observer=self._observer)
        self.current = sup
        return await sup.start()

    async def start_turn(
        self, name: str, run: Callable[[], Coroutine[Any, Any, None]]
    ) -> asyncio.Task[None]:
        """Start ``run`` as a temporary task child; return its task (the scheduler cancels it)."""
        if self.current is None:
            raise LookupError("the turns supervisor is not running")
        child = await self.current.start_child(
            ChildSpec(name, task=run, restart=RestartType.TEMPORARY, shutdown_timeout=5.0)
        )
        assert isinstance(child, TaskChild)
        task: asyncio.Task[None] = child.task  # type: ignore[assignment]
        return task


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentActors:
    """The agent's actors, as the tree starts them: a factory per incarnation, in start order,
    and the live refs the agent's parts reach them by (the tree binds them)."""

    factories: Sequence[tuple[str, ActorFactory]]
    refs: Sequence[LiveRef[Any]]


class DaemonTree:
    """The daemon's tree (see the module docstring)."""

    def __init__(
        self,
        *,
        agent: AgentActors,
        turns: TurnsSupervisor,
        listener: ActorFactory,
        log_sink: LogSink | None = None,
        set_sync: Callable[[Callable[[Callable[[], None]], Awaitable[None]]], None] | None = None,
        observer: Observer | None = None,
    ) -> None:
        self._agent = agent
        self._turns = turns
        self._observer = observer
        self._set_sync = set_sync
        self.journal: LiveRef[SyncJob] = LiveRef("journal")
        self.agent_sup: Supervisor | None = None
        self.links: Supervisor | None = None
        specs: list[ChildSpec] = []
        if log_sink is not None:
            specs.append(ChildSpec("logger", start=log_sink.spawn))
        specs += [
            ChildSpec("journal", start=self._start_journal),
            ChildSpec("agent", start=self._start_agent),
            ChildSpec("links", start=self._start_links),
            ChildSpec("listener", start=listener),
            # Last: it depends on nothing, and nothing is restarted after it.
            ChildSpec("heap", task=self._keep_heap_trimmed),
        ]
        self.root = Supervisor(
            "browyd",
            specs,
            strategy=Strategy.REST_FOR_ONE,
            intensity=RestartIntensity(0, 60.0),
            observer=observer,
        )
        self.journal.bind(self.root)

    async def _keep_heap_trimmed(self) -> None:
        # Imported here, as the journal below: the relay builds its tree from this module too,
        # and its cold start need not load ctypes.
        from actors.runtime.heap import keep_trimmed

        await keep_trimmed()

    async def _start_journal(self) -> ThreadedRef[SyncJob]:
        # Imported here: the relay builds its tree from this module too, and needs no journal.
        from actors.store.journal_syncer import JournalSyncer, SyncJob

        ref: ThreadedRef[SyncJob] = await spawn_threaded(
            JournalSyncer(), name="journal", daemon=True
        )

        async def run_job(job: Callable[[], None]) -> None:
            try:
                syncer = self.journal.now()
            except LookupError:
                # Restarting, or stopped (the store's last syncs at shutdown): a plain thread.
                await asyncio.to_thread(job)
                return
            await syncer.ask(SyncJob(job=job), timeout=FSYNC_TIMEOUT_S)

        if self._set_sync is not None:
            self._set_sync(run_job)
        return ref

    async def _start_agent(self) -> Supervisor:
        specs = [ChildSpec(name, start=factory) for name, factory in self._agent.factories]
        # Started last, so stopped first: every turn ends while the actors it uses still run.
        specs.append(ChildSpec("turns", start=self._turns.start))
        sup = Supervisor(
            "agent",
            specs,
            strategy=Strategy.ONE_FOR_ONE,
            intensity=RestartIntensity(*AGENT_INTENSITY),
            observer=self._observer,
        )
        for ref in self._agent.refs:
            ref.bind(sup)
        self.agent_sup = sup
        return await sup.start()

    async def _start_links(self) -> Supervisor:
        sup = Supervisor(
            "links",
            [],
            strategy=Strategy.ONE_FOR_ONE,
            intensity=RestartIntensity(1000, 1.0),  # its children are temporary
            observer=self._observer,
        )
        self.links = sup
        return await sup.start()

    async def open_link(self, sup: Supervisor) -> None:
        """Start a link's supervisor (:func:`link_tree`) as a temporary child of ``links``."""
        if self.links is None:
            raise LookupError("the links supervisor is not running")
        await self.links.start_child(
            ChildSpec(sup.name, start=sup.start, restart=RestartType.TEMPORARY)
        )

    async def close_link(self, name: str) -> None:
        """Stop a link's supervisor: its Connection, then its CDPProxy."""
        if self.links is not None:
            with contextlib.suppress(Exception):
                await self.links.terminate_child(name)


def link_tree(
    n: int,
    *,
    proxy: ActorFactory,
    connection: Callable[[LiveRef[Any]], Actor[Any]],
    observer: Observer | None = None,
) -> Supervisor:
    """Link ``n``'s supervisor: its CDPProxy (restarted) and its Connection (temporary: its end is
    the link's), which reaches the proxy by a live ref. The proxy starts first, so it stops last:
    the Connection tells it, as it stops, that the connection is lost."""
    proxy_ref: LiveRef[Any] = LiveRef(f"cdp-proxy-{n}")
    sup = Supervisor(
        f"link-{n}",
        [
            ChildSpec(f"cdp-proxy-{n}", start=proxy),
            ChildSpec(
                f"connection-{n}",
                start=lambda: connection(proxy_ref),
                restart=RestartType.TEMPORARY,
                shutdown_timeout=2.0,
            ),
        ],
        strategy=Strategy.ONE_FOR_ONE,
        intensity=RestartIntensity(*LINK_INTENSITY),
        observer=observer,
    )
    proxy_ref.bind(sup)
    return sup


def relay_tree(
    *,
    framer: ActorFactory,
    uplink: ActorFactory,
    log_sink: LogSink | None,
    backoff: Backoff,
    observer: Observer | None = None,
) -> Supervisor:
    """The relay's tree (see the module docstring)."""
    specs: list[ChildSpec] = []
    if log_sink is not None:
        specs.append(ChildSpec("logger", start=log_sink.spawn))
    specs += [
        ChildSpec("stdio-framer", start=framer, restart=RestartType.TEMPORARY),
        ChildSpec("uplink", start=uplink, restart=RestartType.PERMANENT, backoff=backoff),
    ]
    return Supervisor(
        "relay",
        specs,
        strategy=Strategy.ONE_FOR_ONE,
        intensity=RestartIntensity(5, 10.0),
        observer=observer,
    )
