"""A turn's tools: what its model is offered, and each call, run by the ToolWorker.

- **definitions**: the tools a session may use — the panel's toggles plus the host config's
  (:class:`actors.tools.catalog.ToolCatalog`), with or without the browser tools.
- **run**: one call, as a :class:`~actors.browser.tool_worker.RunTool` to the ToolWorker (the only
  place tools run), with approvals and ``ask_user`` (v2) asked through
  :class:`actors.agent.asking.UserAsking`. If the turn is cancelled while it waits, the worker is
  told to stop the run; the turn reports the call itself (``unknown`` if it changed the page).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from actors.agent.asking import UserAsking
from actors.agent.route_table import RouteTable
from actors.agent.turn_browsers import TurnBrowsers
from actors.agent.turn_queue import TurnTicket
from actors.browser.tool_worker import (
    CancelTool,
    RunTicket,
    RunTool,
    ToolResultView,
    WorkerMsg,
)
from actors.runtime.errors import ActorError
from actors.runtime.live_ref import LiveRef
from actors.tools.catalog import ToolCatalog
from actors.tools.pinned_tab import TurnBrowser
from actors.tools.tool_def import ApprovalRequestInfo
from actors.tools.user_tools import AskUserArgs
from messages.wire_clients import ToolSpec

__all__ = ["START_TIMEOUT_S", "ToolCalls"]

#: How long a call waits for the ToolWorker to take it (it answers as soon as the run started).
START_TIMEOUT_S = 10.0
#: Local clients' sessions whose offered host tools are remembered (the most recent ones).
_CLIENTS_KEPT = 256


class ToolCalls:
    def __init__(
        self,
        *,
        table: RouteTable,
        catalog: ToolCatalog,
        worker: LiveRef[WorkerMsg],
        asking: UserAsking,
        browsers: TurnBrowsers,
    ) -> None:
        self._table = table
        self.catalog = catalog
        self._worker = worker
        self._asking = asking
        self._browsers = browsers
        #: The host tools each local client's session was offered (``[mcp] host_tools``, as
        #: :meth:`specs` listed them): they count as switched on for its calls.
        self._client_host: dict[str, frozenset[str]] = {}

    def _toggles(self, session_id: str) -> tuple[frozenset[str], frozenset[str], int]:
        entry = self._table.lookup(session_id)
        if entry is None:
            return frozenset(), frozenset(), 1
        client = self._client_host.get(session_id, frozenset())
        return entry.disabled_tools, entry.enabled_host_tools | client, entry.link.protocol

    def definitions(self, session_id: str, *, browser: bool) -> list[dict[str, Any]]:
        disabled, host, protocol = self._toggles(session_id)
        policy = self.catalog.policy(disabled, host, protocol)
        return self.catalog.definitions(policy, browser=browser, protocol=protocol)

    def specs(self, session_id: str, *, host_tools: frozenset[str]) -> list[ToolSpec]:
        """The tools a local client's session may call, as it lists them (``tools.list``): the
        browser's (the first that needs a tab asks the user, :meth:`Sessions.grant_browser`) and
        the host-side ones in *host_tools*."""
        self._client_host.pop(session_id, None)
        self._client_host[session_id] = host_tools
        while len(self._client_host) > _CLIENTS_KEPT:
            del self._client_host[next(iter(self._client_host))]
        disabled, host, _ = self._toggles(session_id)
        return self.catalog.client_specs(self.catalog.policy(disabled, host, 2), host_tools)

    def is_page_changing(self, name: str) -> bool:
        return self.catalog.is_page_changing(name)

    def reads_secrets(self, name: str) -> bool:
        tool = self.catalog.registry.get(name)
        return bool(tool and tool.reads_secrets)

    def bad_arguments(self, name: str, problem: str) -> ToolResultView:
        return ToolResultView(
            outcome="error",
            summary=f"{name}: bad arguments",
            content_for_model=f"INVALID_MESSAGE: the arguments of {name} are not a JSON object "
            f"({problem}). Call it again with valid JSON arguments.",
        )

    async def run(
        self,
        ticket: TurnTicket,
        browser: TurnBrowser | None,
        name: str,
        args: dict[str, Any],
        call_id: str,
        *,
        shown: dict[str, Any] | None = None,
    ) -> ToolResultView:
        """Run one call through the ToolWorker. ``shown``: the arguments as the user may see
        them (secrets masked), for an approval card."""
        disabled, host, _ = self._toggles(ticket.session_id)
        if browser is None and self.catalog.needs_browser(name):
            # Not offered to this session, asked for anyway: refused before any approval.
            return ToolResultView(
                outcome="error",
                summary=f"{name}: this session may not drive tabs",
                content_for_model=f"error NO_CAPABILITY: {name} needs a browser tab, and this "
                "session may not drive one. Use the tools you were given.",
            )

        async def approve(info: ApprovalRequestInfo) -> bool:
            return await self._asking.approve(ticket, browser, info, shown=shown)

        async def ask(question: AskUserArgs) -> tuple[Any, bool]:
            return await self._asking.ask_user(ticket, question)

        async def progress(text: str) -> None:
            await self._asking.progress(ticket, text)

        run_ticket = RunTicket(asyncio.get_running_loop().create_future())
        run = RunTool(
            session_id=ticket.session_id,
            call_id=call_id,
            name=name,
            args=args,
            policy=self.catalog.policy(disabled, host, ticket.protocol),
            browser=browser,
            lock_link=self._browsers.browser_link(ticket),
            ticket=run_ticket,
            approve=approve,
            ask_user=ask if ticket.protocol >= 2 else None,
            progress=progress,
        )
        try:
            await self._worker.ask(run, timeout=START_TIMEOUT_S)
        except (ActorError, LookupError):
            run_ticket.abandoned = True  # the ticket rule: then read ``started``
            if not run_ticket.started:
                return ToolResultView(
                    outcome="error",
                    summary="not run: the host's tool worker is restarting",
                    content_for_model=f"error INTERNAL: {name} was not run (the host's tool "
                    "worker was restarting). It is safe to try again.",
                )
        try:
            return await run_ticket.reply
        except asyncio.CancelledError:
            with contextlib.suppress(ActorError, LookupError):
                self._worker.tell_nowait(CancelTool(session_id=ticket.session_id, call_id=call_id))
            raise
