"""The agent's settings, and what reads or writes them for the panels and the options page.

- :class:`AgentSettings`: what the daemon's agent side runs with (from ``config.toml``).
- :class:`HostServices`: what the options page reaches through the daemon (v2 ``config.*``,
  ``doctor.run``), implemented by the process layer.
- :class:`AgentConfig`: ``config.get`` / ``config.set`` (a saved change applies at once: new turns
  use the new model and policies), ``doctor.run``, the ``auth.status`` broadcast after a provider
  check, and the push a session gets when it is ready (``sdk.ready``, ``auth.status``, the models).

One :class:`AgentConfig` per daemon (:func:`actors.agent.agent.build_agent`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from actors.agent.links import LinkHandle, Links
from actors.agent.model_side import ModelSide, SignsIn
from actors.agent.route_table import RouteTable
from actors.agent.turn_scheduler import SchedulerMsg, SetLimit
from actors.model.copilot_cli import DeviceCode
from actors.model.types import ModelSettings
from actors.runtime.live_ref import LiveRef
from actors.tools.catalog import ToolSettings
from actors.tools.tool_def import ApprovalMode
from messages.wire_outbound import AuthStatus, ModelsCurrent, ModelsList, SdkReady

__all__ = ["AgentConfig", "AgentSettings", "HostServices", "approval_mode", "tool_settings"]

log = logging.getLogger(__name__)


class HostServices(Protocol):
    """What the options page reaches through the daemon (v2 ``config.*``, ``doctor.run``).

    Implemented by the process layer (:mod:`nativehost.daemon.settings`), which knows the config
    file; ``set`` raises ``ValueError`` with a message naming the field and writes nothing then.
    """

    def get(self) -> tuple[dict[str, Any], dict[str, Any]]: ...

    def set(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]: ...

    async def doctor(self) -> list[dict[str, Any]]: ...

    def allow_mcp_client(self, name: str) -> None:
        """Remember that the user allowed the MCP client *name* for good (``[mcp]``)."""
        ...

    def restart(self) -> None:
        """Restart the host (v2 ``daemon.restart``): this daemon exits soon, the relays start
        the next one."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    home: Path
    model: ModelSettings | None
    turn_concurrency: int = 4
    same_session: str = "queue"
    max_iterations: int = 25
    allow_host_code: bool = False
    approval_mode: str = "page-changing"
    v1_approval_mode: str = "never"
    approval_timeout_s: float = 300.0
    #: May local clients (``browy run``/``chat``, MCP) drive a connected browser? (section 6)
    allow_local_clients: bool = False
    #: Tools the host's config disables for every session (on top of the panels' toggles).
    disabled_tools: frozenset[str] = frozenset()
    #: Host tools the host's config switches on for every session (``[tools]``).
    enabled_host_tools: frozenset[str] = frozenset()
    #: Cookie and storage reads: "ask" every time (v1: refused), or "allow" (config ``[tools]``).
    secret_reads: str = "ask"
    #: MCP clients the user allowed for good (``[mcp] allowed_clients``, by clientInfo name).
    mcp_clients: frozenset[str] = frozenset()
    #: Host-side tools offered to MCP clients besides the browser's (``[mcp] host_tools``).
    mcp_host_tools: frozenset[str] = frozenset()
    #: MCP clients asked about their own guarded actions too (``[mcp] elicit_clients``).
    mcp_elicit_clients: frozenset[str] = frozenset()
    version: str = "0.1.0"


class AgentConfig:
    def __init__(
        self,
        settings: AgentSettings,
        *,
        services: HostServices | None,
        reload_settings: Callable[[], AgentSettings] | None,
        models: ModelSide,
        table: RouteTable,
        links: Links,
        scheduler: LiveRef[SchedulerMsg],
        own: Callable[[Coroutine[Any, Any, Any], str], None],
    ) -> None:
        self.settings = settings
        self.services = services
        self._reload_settings = reload_settings
        self._models = models
        self._table = table
        self._links = links
        self._scheduler = scheduler
        self._own = own  # runs a coroutine as a task the agent owns (awaited on stop)
        self._signing_in = False

    @property
    def tools(self) -> ToolSettings:
        """The tool settings now in force (read by the tool catalog at each use)."""
        return tool_settings(self.settings)

    async def check_auth(self) -> None:
        """Ask the provider once at start; broadcast the answer (``auth.status`` is a broadcast)."""
        try:
            status = await self._models.refresh_auth()
        except Exception:  # reported as unknown, never raised into the daemon
            log.exception("the provider check failed")
            return
        await self._broadcast(status)

    async def _broadcast(self, status: AuthStatus) -> None:
        for link in self._links.all():
            if link.is_browser or self._table.sessions_of(link.link_id):
                await link.send(status)

    async def sign_in(self, conn: LinkHandle) -> None:
        """``auth.signin``: the provider's own sign-in when it has one (GitHub Copilot's device
        flow: ``auth.status`` then carries the URL and code for the panel's banner, and the
        answer once it is done); otherwise the provider is asked again."""
        gateway = self._models.signs_in()
        if gateway is None:
            await conn.send(await self._models.refresh_auth())
            return
        if not self._signing_in:
            self._signing_in = True
            self._own(self._device_sign_in(gateway), "sign-in")
        await conn.send(self._models.auth)

    async def _device_sign_in(self, gateway: SignsIn) -> None:
        async def show(device: DeviceCode) -> None:
            self._models.auth = AuthStatus(state="unauth", detail=device.instructions())
            await self._broadcast(self._models.auth)

        try:
            if (await self._models.refresh_auth()).state != "ready":  # signed in elsewhere?
                await gateway.sign_in(show)
        except Exception:  # a sign-in that could not run is reported by the check below
            log.exception("the provider's sign-in failed")
        finally:
            self._signing_in = False
        await self.check_auth()

    def apply(self, settings: AgentSettings) -> None:
        """The config changed (options page): new turns use the new model and policies."""
        previous, self.settings = self.settings, settings
        if settings.turn_concurrency != previous.turn_concurrency:
            self._own(
                self._scheduler.tell_again(SetLimit(limit=settings.turn_concurrency)), "set-limit"
            )
        if self._models.reconfigure(settings.model):
            self._own(self.check_auth(), "auth-check")

    async def get(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if self.services is None:
            return {}, {}
        return self.services.get()

    async def set(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Validate and save (raises ValueError naming the field), then apply."""
        if self.services is None:
            raise ValueError("this host has no settings")
        result = self.services.set(values)
        if self._reload_settings is not None:
            self.apply(self._reload_settings())
        return result

    async def doctor(self) -> list[dict[str, Any]]:
        return await self.services.doctor() if self.services is not None else []

    def restart(self) -> bool:
        """Ask the process layer to restart the daemon; False if it cannot."""
        if self.services is None:
            return False
        self.services.restart()
        return True

    def remember_mcp_client(self, name: str) -> None:
        """The user allowed *name* for good: saved in the config, applied at once."""
        if self.services is not None:
            try:
                self.services.allow_mcp_client(name)
            except Exception:  # the decision still holds for this daemon's life
                log.exception("could not save the MCP client %r as allowed", name)
        self.settings = replace(self.settings, mcp_clients=self.settings.mcp_clients | {name})

    async def initial_push(self, conn: LinkHandle) -> None:
        # Section 3b: sdk.ready is ok whenever the daemon is up; the provider's state goes in
        # auth.status only, and session.ready never waits for the provider.
        await conn.send(SdkReady(ok=True))
        await conn.send(self._models.auth)
        await conn.send(ModelsCurrent(id=self._models.model_id))
        await conn.send(ModelsList(models=self._models.known()))


def tool_settings(settings: AgentSettings) -> ToolSettings:
    """The tool side of the agent's settings."""
    return ToolSettings(
        allow_host_code=settings.allow_host_code,
        approval_mode=approval_mode(settings.approval_mode),
        v1_approval_mode=approval_mode(settings.v1_approval_mode),
        disabled_tools=settings.disabled_tools,
        enabled_host_tools=settings.enabled_host_tools,
        secret_reads=settings.secret_reads,
    )


def approval_mode(value: str) -> ApprovalMode:
    if value == "always":
        return "always"
    if value == "page-changing":
        return "page-changing"
    return "never"
