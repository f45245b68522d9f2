"""PromptBroker: the approvals and questions a turn is waiting on, and what the user allowed.

Pure bookkeeping (no I/O but the small per-site file): each open prompt is a future keyed by its
id; an answer settles it once (a late, unknown or wrong-session answer is dropped, like a late
browser answer — protocol.md section 5, "Correlation").

What an approval decision means (protocol.md section 4):

- ``allow``: this call only.
- ``allow_session``: this tool, for the rest of this session (kept in memory).
- ``allow_site``: every guarded tool on this origin, for this extension install — remembered in
  ``BROWY_HOME/data/approvals.json`` (0600) so it survives restarts.
- ``deny``: the call is not run; the model is told ``APPROVAL_DENIED``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
from pathlib import Path
from typing import Any

__all__ = ["PromptBroker"]

log = logging.getLogger(__name__)


class PromptBroker:
    def __init__(self, sites_path: Path) -> None:
        self._sites_path = sites_path
        self._pending: dict[str, tuple[frozenset[str], asyncio.Future[Any]]] = {}
        self._session_tools: set[tuple[str, str]] = set()
        self._sites: dict[str, set[str]] = self._load()

    # -- remembered permissions -------------------------------------------------------------------

    def _load(self) -> dict[str, set[str]]:
        try:
            raw = json.loads(self._sites_path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(raw, dict):
            return {}
        return {
            str(scope): {str(o) for o in origins if isinstance(o, str)}
            for scope, origins in raw.items()
            if isinstance(origins, list)
        }

    def _save(self) -> None:
        self._sites_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._sites_path.with_suffix(".tmp")
        data = json.dumps({k: sorted(v) for k, v in self._sites.items()}, indent=1)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, self._sites_path)

    def allowed(self, scope: str, session_id: str, tool: str, origin: str) -> bool:
        if (session_id, tool) in self._session_tools:
            return True
        return bool(origin) and origin in self._sites.get(scope, set())

    def remember(self, scope: str, session_id: str, tool: str, origin: str, decision: str) -> None:
        if decision == "allow_session":
            self._session_tools.add((session_id, tool))
        elif decision == "allow_site" and origin:
            self._sites.setdefault(scope, set()).add(origin)
            try:
                self._save()
            except OSError as exc:
                log.warning("could not save per-site approvals: %s", exc)

    def forget_session(self, session_id: str) -> None:
        self._session_tools = {(s, t) for s, t in self._session_tools if s != session_id}

    # -- open prompts -----------------------------------------------------------------------------

    def _open(
        self, prefix: str, session_id: str, also: str | None = None
    ) -> tuple[str, asyncio.Future[Any]]:
        prompt_id = f"{prefix}-{secrets.token_hex(6)}"
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        answerers = frozenset({session_id} if also is None else {session_id, also})
        self._pending[prompt_id] = (answerers, fut)
        return prompt_id, fut

    def open_approval(
        self, session_id: str, also: str | None = None
    ) -> tuple[str, asyncio.Future[Any]]:
        """A prompt the session *session_id* answers (and *also*, when given: the first answer
        wins)."""
        return self._open("ap", session_id, also)

    def open_ask(self, session_id: str) -> tuple[str, asyncio.Future[Any]]:
        return self._open("ask", session_id)

    def answer(self, prompt_id: str, session_id: str, value: Any) -> bool:
        """Settle an open prompt once; False (logged) for an unknown, late or foreign answer."""
        pending = self._pending.get(prompt_id)
        if pending is None or session_id not in pending[0] or pending[1].done():
            log.info(
                "dropped an answer to prompt %s (unknown, late or another session's)", prompt_id
            )
            return False
        pending[1].set_result(value)
        return True

    def close(self, prompt_id: str) -> None:
        pending = self._pending.pop(prompt_id, None)
        if pending is not None and not pending[1].done():
            pending[1].cancel()
            with contextlib.suppress(asyncio.CancelledError):
                pending[1].exception()
