"""Asking the user during a turn (v2): approvals, ``ask_user``, and ``take_control``.

A turn that asks gives up its scheduling slot while it waits (architecture.md section 2) and gets
it back when the answer comes; no answer within the approval timeout counts as a refusal
(protocol.md section 4). What is remembered (``allow_session``, ``allow_site``) is the
:class:`actors.agent.prompts.PromptBroker`'s.

- **Approvals** are asked before guarded tools when the approval mode says so. A v1 panel cannot
  answer: the host's v1 mode alone decides, and a mode that asks refuses (section 3b). Text typed
  into secret fields is masked in what the panel is shown.
- **ask_user** puts a question in the panel and returns the answer (or a dismissal).
- **take_control**: the first time a local CLI client takes a tab of a browser, that browser's
  latest v2 panel is asked (section 6); a browser with no v2 panel is left to the config. An MCP
  client's consent (below) stands for it.
- **An MCP client's consent**: the first time a client (by its ``clientInfo`` name) joins, the
  browser's panel is asked: allow once (this connection), for this session of the daemon, always
  (``[mcp] allowed_clients``) or deny. An MCP client's guarded actions are asked in that panel too,
  and of the client itself only when the config lets it (``[mcp] elicit_clients``: a client that
  answered for itself would approve its own actions); the first answer wins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from actors.agent.links import LinkHandle, Links, Outbox
from actors.agent.prompts import PromptBroker
from actors.agent.route_table import RouteTable, SessionEntry
from actors.agent.turn_queue import TurnTicket
from actors.agent.turn_scheduler import Reclaim, SchedulerMsg, YieldSlot
from actors.agent.wire_shapes import trim_args
from actors.runtime.live_ref import LiveRef
from actors.tools.catalog import ToolCatalog
from actors.tools.masking import mask_secret_args
from actors.tools.pinned_tab import TurnBrowser
from actors.tools.tool_def import ApprovalRequestInfo
from actors.tools.user_tools import AskUserArgs
from messages.errors import BrowyError, ErrorCode
from messages.wire_inbound import ApprovalResponse, UserAnswer
from messages.wire_outbound import ApprovalRequest, AskOption, EventActivity, UserAsk

__all__ = ["UserAsking"]


class UserAsking:
    def __init__(
        self,
        *,
        prompts: PromptBroker,
        catalog: ToolCatalog,
        table: RouteTable,
        links: Links,
        outbox: Outbox,
        scheduler: LiveRef[SchedulerMsg],
        timeout_s: Callable[[], float],
        elicit_clients: Callable[[], frozenset[str]] = frozenset,
    ) -> None:
        self.prompts = prompts
        #: MCP clients also asked about their own guarded actions (``[mcp] elicit_clients``).
        self._elicit_clients = elicit_clients
        self._catalog = catalog
        self._table = table
        self._links = links
        self._outbox = outbox
        self._scheduler = scheduler
        self._timeout_s = timeout_s
        # (local client link, browser link) pairs whose take_control the browser's user allowed.
        self._control_granted: set[tuple[int, int]] = set()
        # MCP clients allowed for this daemon's life (by name), and links allowed once.
        self._clients_allowed: set[str] = set()
        self._links_allowed: set[int] = set()

    async def _waiting(self, ticket: TurnTicket, fut: asyncio.Future[Any]) -> Any:
        """Wait for the user's answer with the turn's scheduling slot given up."""
        await self._scheduler.tell_again(YieldSlot(turn_id=ticket.turn_id))
        try:
            async with asyncio.timeout(self._timeout_s()):
                return await fut
        finally:
            await self._scheduler.tell_again(Reclaim(turn_id=ticket.turn_id))

    def _panel_of(self, browser_link: int) -> SessionEntry | None:
        """The browser connection's most recent v2 panel (side panel or DevTools panel)."""
        panels = [
            e
            for e in self._table.sessions_of(browser_link)
            if e.link.protocol >= 2 and e.session_id.startswith(("sp-", "dt-"))
        ]
        return panels[-1] if panels else None

    def _asked_where(self, entry: SessionEntry) -> tuple[LinkHandle | None, str] | None:
        """Where this session's approvals are asked: its own panel, or — an MCP client driving
        a browser — that browser's panel. None when there is nobody to ask."""
        client = self._links.get(entry.link.link_id)
        if client is None or client.info.role != "mcp":
            return None, entry.session_id  # the session's own panel (the outbox finds it)
        browser = self._links.get(entry.browser_link_id)
        panel = self._panel_of(browser.link_id) if browser is not None else None
        if browser is None or panel is None:
            return None
        return browser, panel.session_id

    async def approve(
        self,
        ticket: TurnTicket,
        browser: TurnBrowser | None,
        info: ApprovalRequestInfo,
        *,
        shown: dict[str, Any] | None = None,
    ) -> bool:
        entry = self._table.lookup(ticket.session_id)
        if entry is None or ticket.protocol < 2:
            return False
        where = self._asked_where(entry)
        if where is None:
            return False  # an MCP client, and no panel open to ask: refused
        link, ask_session = where
        origin = await browser.origin() if browser is not None else ""
        if info.remember and self.prompts.allowed(
            entry.scope, ticket.session_id, info.tool, origin
        ):
            return True
        # An MCP client the config lets answer too gets the same card (the first answer wins).
        client = self._links.get(entry.link.link_id) if link is not None else None
        elicit = client is not None and (client.info.client or "") in self._elicit_clients()
        approval_id, fut = self.prompts.open_approval(
            ask_session, also=ticket.session_id if elicit else None
        )
        risk = "high" if self._catalog.is_host_code(info.tool) else "page-changing"
        if shown is None:
            shown = mask_secret_args(info.tool, info.args, browser)
        request = ApprovalRequest(
            session_id=ask_session,
            approval_id=approval_id,
            tool=info.tool,
            args=trim_args(shown),
            summary=info.summary[:500] if shown is info.args else f"{info.tool} (secret)",
            risk=risk,
            origin=origin,
        )
        try:
            if link is None:
                await self._outbox.emit(ask_session, request)
            else:
                await link.send(request)
            if elicit and client is not None:
                await client.send(request.model_copy(update={"session_id": ticket.session_id}))
            decision = await self._waiting(ticket, fut)
        except TimeoutError:
            return False
        finally:
            self.prompts.close(approval_id)
        if info.remember:
            self.prompts.remember(entry.scope, ticket.session_id, info.tool, origin, decision)
        return bool(decision != "deny")

    async def progress(self, ticket: TurnTicket, text: str) -> None:
        """How a long tool call is going: ``event.activity{status.thinking, text}`` to the
        session (the panel's status line; an MCP client's progress notification)."""
        await self._outbox.emit(
            ticket.session_id,
            EventActivity(session_id=ticket.session_id, event="status.thinking", text=text[:300]),
        )

    async def ask_user(self, ticket: TurnTicket, args: AskUserArgs) -> tuple[Any, bool]:
        ask_id, fut = self.prompts.open_ask(ticket.session_id)
        options = [AskOption(label=o.label, value=o.value) for o in args.options or []]
        try:
            await self._outbox.emit(
                ticket.session_id,
                UserAsk(
                    session_id=ticket.session_id,
                    ask_id=ask_id,
                    kind=args.kind,
                    prompt=args.prompt,
                    options=options or None,
                    default_value=args.default_value,
                ),
            )
            result: tuple[Any, bool] = await self._waiting(ticket, fut)
            return result
        except TimeoutError:
            return None, True
        finally:
            self.prompts.close(ask_id)

    async def _ask_panel(
        self,
        browser: LinkHandle,
        panel: SessionEntry,
        tool: str,
        args: dict[str, Any],
        summary: str,
    ) -> str:
        """Put a high-risk question about a local client in *panel* (of *browser*) and wait for
        the decision; no answer within the approval timeout is ``deny``."""
        approval_id, fut = self.prompts.open_approval(panel.session_id)
        try:
            await browser.send(
                ApprovalRequest(
                    session_id=panel.session_id,
                    approval_id=approval_id,
                    tool=tool,
                    args=args,
                    summary=summary,
                    risk="high",
                    origin="",
                )
            )
            async with asyncio.timeout(self._timeout_s()):
                return str(await fut)
        except TimeoutError:
            return "deny"
        finally:
            self.prompts.close(approval_id)

    def client_allowed(self, client: LinkHandle) -> bool:
        """Was the MCP client on *client* allowed already (this connection, or by name)?"""
        return (client.info.client or "") in self._clients_allowed or (
            client.link_id in self._links_allowed
        )

    async def client_consent(
        self, client: LinkHandle, browser: LinkHandle, *, always: Callable[[str], None]
    ) -> str | None:
        """Ask the browser's user whether the MCP client on *client* may use it. Returns None
        when allowed, else why not (shown to the client). ``always(name)`` saves "always"."""
        name = client.info.client or "an MCP client"
        if self.client_allowed(client):
            return None
        panel = self._panel_of(browser.link_id)
        if panel is None:
            return (
                f"Open the Browy side panel in the browser to allow {name} (or set [daemon] "
                "allow_local_clients = true, or add it to [mcp] allowed_clients)."
            )
        decision = await self._ask_panel(
            browser,
            panel,
            "mcp_client",
            {"client": name},
            f"{name} wants to use this browser through Browy (MCP). Allow once, for this "
            "session, always, or deny.",
        )
        if decision == "deny":
            return f"The browser's user did not allow {name}."
        if decision == "allow_site":
            always(name)
        if decision in ("allow_site", "allow_session"):
            self._clients_allowed.add(name)
        self._links_allowed.add(client.link_id)
        return None

    def revoke_client(self, client: LinkHandle) -> None:
        """The user stopped this MCP client: it must be allowed again (unless the config allows
        it)."""
        self._clients_allowed.discard(client.info.client or "")
        self._links_allowed.discard(client.link_id)

    async def tab_consent(self, client: LinkHandle, browser: LinkHandle, tab_id: int) -> bool:
        """Ask the browser's user whether the MCP client may use one of the user's own tabs (not
        one it opened or was handed). No panel to ask, no answer in time, or deny: no."""
        panel = self._panel_of(browser.link_id)
        if panel is None:
            return False
        name = client.info.client or "an MCP client"
        decision = await self._ask_panel(
            browser,
            panel,
            "mcp_tab",
            {"client": name, "tabId": tab_id},
            f"{name} wants to use one of your tabs (tab {tab_id}).",
        )
        return decision != "deny"

    async def take_control(self, client_link: int, browser_conn: LinkHandle, tab_id: int) -> None:
        """Ask the browser's user before a local client first drives one of its tabs.

        Raises APPROVAL_DENIED when the user says no (or does not answer in time). An MCP client
        is not asked again: its consent (:meth:`client_consent`, or the config that allows it)
        is what lets it drive the browser's tabs."""
        key = (client_link, browser_conn.info.link_id)
        if key in self._control_granted:
            return
        client = self._links.get(client_link)
        if client is not None and client.info.role == "mcp":
            return
        panel = self._panel_of(browser_conn.info.link_id)
        if panel is not None:
            role = client.info.role if client is not None else "cli"
            decision = await self._ask_panel(
                browser_conn,
                panel,
                "take_control",
                {"client": role, "tabId": tab_id},
                f"A local {role} client wants to drive this browser's tab",
            )
            if decision == "deny":
                raise BrowyError(
                    "The browser's user did not allow this client to take control.",
                    code=ErrorCode.APPROVAL_DENIED,
                )
        self._control_granted.add(key)

    def approval_response(self, msg: ApprovalResponse) -> None:
        self.prompts.answer(msg.approval_id, msg.session_id, msg.decision)

    def user_answer(self, msg: UserAnswer) -> None:
        self.prompts.answer(msg.ask_id, msg.session_id, (msg.value, bool(msg.cancelled)))
