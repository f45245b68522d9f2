"""The stored chats as a panel asks for them: ``chat.list``, ``chat.history``, ``chat.delete``,
``history.clear`` (protocol.md sections 2-4; v2 pages long histories with ``before``/``limit``).

A chat that has a turn running or waiting is never deleted (``chat.delete.result{ok: false}``).
"""

from __future__ import annotations

from actors.agent.links import LinkHandle
from actors.agent.route_table import RouteTable
from actors.agent.turn_scheduler import TurnBoard
from actors.store.chat_store import ChatStore
from messages.wire_inbound import ChatHistory
from messages.wire_outbound import (
    ChatDeleteResult,
    ChatHistoryResult,
    ChatListResult,
    ChatSummary,
)

__all__ = ["Chats"]


class Chats:
    def __init__(self, *, store: ChatStore, table: RouteTable, board: TurnBoard) -> None:
        self.store = store
        self._table = table
        self._board = board

    async def list(self, conn: LinkHandle) -> None:
        chats = self.store.list_chats(conn.info.scope)
        await conn.send(
            ChatListResult(
                chats=[
                    ChatSummary(
                        id=c.id,
                        summary=c.summary or None,
                        start_time=c.created_ms,
                        modified_time=c.modified_ms,
                    )
                    for c in chats
                ]
            )
        )

    async def history(self, conn: LinkHandle, req: ChatHistory) -> None:
        v2 = conn.info.v2
        page = self.store.history(
            conn.info.scope,
            req.id,
            before=req.before if v2 else None,
            limit=req.limit if v2 else None,
        )
        rows = (
            page.rows if v2 else [{k: v for k, v in r.items() if k != "turnId"} for r in page.rows]
        )
        # The store shapes rows for the wire; validate them once into the outbound model.
        result = ChatHistoryResult.model_validate(
            {"id": req.id, "messages": rows, "hasMore": page.has_more if v2 else None}
        )
        await conn.send(result)

    async def delete(self, conn: LinkHandle, chat_id: str) -> None:
        ok = (
            False
            if self._board.is_running(chat_id)
            else self.store.delete(conn.info.scope, chat_id)
        )
        await conn.send(ChatDeleteResult(id=chat_id, ok=ok))

    async def clear(self, conn: LinkHandle, session_id: str) -> None:
        """``history.clear``: delete the session's stored chat (no reply)."""
        entry = self._table.lookup(session_id)
        if entry is None or entry.link.link_id != conn.link_id:
            return
        if not self._board.is_running(session_id):
            self.store.delete(conn.info.scope, session_id)
