"""The terminal's link to the daemon: one chat session, its turns, Ctrl-C and the prompts.

A ``cli`` link to the daemon (protocol.md section 6, last bullet) carrying the extension's v2
protocol: ``hello{client: "cli", installId: "cli"}`` (so the chats live in scope ``cli``), one
``session.start`` asking for ``cdp.activeTab`` (granted only when a browser is connected and
``[daemon] allow_local_clients = true``), then ``chat.send`` per turn. The daemon streams
``chat.delta`` / ``chat.tool_call`` / ``chat.tool_result`` / ``usage`` and ends every turn with
exactly one ``chat.done`` or ``chat.error`` (shown by
:class:`nativehost.cli.terminal_view.TurnView`).

Ctrl-C during a turn sends ``chat.cancel`` (the turn ends with ``chat.done`` carrying the partial
text); a second Ctrl-C gives up on the turn (:class:`TurnAborted`). Approval prompts and
``ask_user`` questions are answered from the terminal through an :data:`Asker`, or refused when
there is nobody to ask.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

import orjson

from actors.link.link_stream import LinkStream
from messages.link import LinkData
from nativehost.cli.terminal_view import TurnResult, TurnView, format_args, summary_line
from nativehost.link import open_link

__all__ = [
    "Asker",
    "TerminalClient",
    "TurnAborted",
    "new_session_id",
]

#: Ask the user a question; returns the answer line, or None if nobody can answer.
Asker = Callable[[str], Awaitable[str | None]]

_PROTOCOL = 2


class TurnAborted(Exception):
    """The user pressed Ctrl-C twice: the turn was left without waiting for its end."""


def new_session_id() -> str:
    return f"cli-{secrets.token_hex(4)}"


class TerminalClient:
    """One ``cli`` link and one chat session on it. Use :meth:`connect`, then :meth:`run_turn`."""

    summary_line = staticmethod(summary_line)

    def __init__(
        self,
        stream: LinkStream,
        out: IO[str],
        *,
        session_id: str,
        asker: Asker | None = None,
        color: bool = False,
        json_lines: bool = False,
        notes: IO[str] | None = None,
    ) -> None:
        self.stream = stream
        self.out = out
        self.session_id = session_id
        self.asker = asker
        self.color = color
        #: Each message of a turn as a JSON line on *out* (``browy run --json``); notes for the
        #: user then go to *notes* (stderr), never among the JSON lines.
        self.json_lines = json_lines
        self.notes = notes if notes is not None else out
        self.capabilities: list[str] = []
        self.model: str = ""
        self._inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._interrupts = 0
        self._interrupted = asyncio.Event()
        self._in_turn = False

    # -- connection ----------------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        home: Path,
        out: IO[str],
        *,
        session_id: str | None = None,
        asker: Asker | None = None,
        color: bool = False,
        json_lines: bool = False,
        notes: IO[str] | None = None,
        start_session: bool = True,
        browser: bool = True,
        timeout: float = 10.0,
    ) -> TerminalClient:
        """Open the link, say hello and (by default) start the session; raises on failure."""
        stream, _welcome = await open_link(home, role="cli", timeout=timeout)
        client = cls(
            stream,
            out,
            session_id=session_id or new_session_id(),
            asker=asker,
            color=color,
            json_lines=json_lines,
            notes=notes,
        )
        client._reader = asyncio.ensure_future(client._read())
        try:
            await client.send(
                {
                    "type": "hello",
                    "client": "cli",
                    "protocol": _PROTOCOL,
                    "installId": "cli",
                    "capabilities": [],
                }
            )
            await client.expect("hello.ack", timeout=timeout)
            if start_session:
                await client.start_session(timeout=timeout, browser=browser)
        except BaseException:
            await client.close()
            raise
        return client

    async def start_session(self, timeout: float = 10.0, *, browser: bool = True) -> dict[str, Any]:
        """Register the session; *browser*: ask to drive a tab (else host-side tools only)."""
        await self.send(
            {
                "type": "session.start",
                "sessionId": self.session_id,
                "capabilities": ["cdp.activeTab"] if browser else [],
            }
        )
        ready = await self.expect("session.ready", timeout=timeout)
        self.capabilities = [str(c) for c in ready.get("capabilities") or []]
        self.model = str(ready.get("model") or "")
        return ready

    @property
    def can_drive_browser(self) -> bool:
        return "cdp.activeTab" in self.capabilities

    async def _read(self) -> None:
        try:
            while True:
                env = await self.stream.recv()
                if env is None:
                    break
                if isinstance(env, LinkData):
                    with contextlib.suppress(orjson.JSONDecodeError):
                        msg = orjson.loads(env.payload)
                        if isinstance(msg, dict):
                            self._inbox.put_nowait(msg)
        except Exception:  # the link broke: the waiter sees the end of the stream
            pass
        finally:
            self._inbox.put_nowait(None)

    async def send(self, msg: dict[str, Any]) -> None:
        self.stream.send(LinkData(orjson.dumps(msg)))
        await self.stream.drain()

    async def recv(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message; ConnectionError when the daemon closed the link."""
        async with asyncio.timeout(timeout):
            msg = await self._inbox.get()
        if msg is None:
            self._inbox.put_nowait(None)  # stay closed for later readers
            raise ConnectionError("the daemon closed the link")
        return msg

    async def expect(self, type_: str, *, timeout: float = 10.0, **match: Any) -> dict[str, Any]:
        """Wait for a message of *type_* (with the given field values); others are dropped."""
        async with asyncio.timeout(timeout):
            while True:
                msg = await self.recv()
                if msg.get("type") == "error":
                    raise RuntimeError(f"{msg.get('code')}: {msg.get('message')}")
                if msg.get("type") == type_ and all(msg.get(k) == v for k, v in match.items()):
                    return msg

    async def close(self) -> None:
        self.stream.close()
        with contextlib.suppress(Exception):
            await self.stream.wait_closed()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader

    # -- Ctrl-C ------------------------------------------------------------------------------------

    def interrupt(self) -> bool:
        """What Ctrl-C does: True if a turn was running (it is being cancelled / abandoned)."""
        if not self._in_turn:
            return False
        self._interrupts += 1
        self._interrupted.set()
        return True

    @contextlib.contextmanager
    def sigint_cancels_turns(self, on_idle: Callable[[], None] | None = None) -> Any:
        """While inside: SIGINT during a turn calls :meth:`interrupt`; between turns it calls
        *on_idle* (default: nothing, i.e. ignored). Only in the main thread. Under
        :func:`nativehost.cli.stopping.run_stoppable` without *on_idle*, a SIGINT between turns
        stops the command cleanly instead."""
        from nativehost.cli import stopping

        stop = stopping.current()
        if stop is not None:

            def first(self: TerminalClient = self) -> bool:
                if self.interrupt():
                    return True
                if on_idle is not None:
                    on_idle()
                    return True
                return False

            with stop.sigint(first):
                yield
            return
        loop = asyncio.get_running_loop()

        def handler() -> None:
            if not self.interrupt() and on_idle is not None:
                on_idle()

        installed = False
        if threading.current_thread() is threading.main_thread():
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGINT, handler)
                installed = True
        try:
            yield
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)

    # -- output ------------------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        self.notes.write(text)
        self.notes.flush()

    def _view(self) -> TurnView:
        if self.json_lines:
            from nativehost.cli.json_view import JsonTurnView

            return JsonTurnView(self.out, notes=self.notes)
        return TurnView(self.out, color=self.color)

    # -- a turn ------------------------------------------------------------------------------------

    async def run_turn(self, text: str, *, timeout: float | None = None) -> TurnResult:
        """Send *text*, stream the turn to the terminal, return how it ended."""
        turn_id = f"t-{secrets.token_hex(6)}"
        view = self._view()
        result = view.result
        started = time.monotonic()
        self._interrupts = 0
        self._interrupted.clear()
        self._in_turn = True

        try:
            await self.send(
                {"type": "chat.send", "sessionId": self.session_id, "text": text, "turnId": turn_id}
            )
            cancel_sent = False
            async with asyncio.timeout(timeout) as deadline:
                while True:
                    get = asyncio.ensure_future(self.recv())
                    intr = asyncio.ensure_future(self._interrupted.wait())
                    try:
                        await asyncio.wait({get, intr}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        intr.cancel()
                        if not get.done():
                            get.cancel()
                            with contextlib.suppress(asyncio.CancelledError):
                                await get
                    if self._interrupted.is_set():
                        self._interrupted.clear()
                        if self._interrupts >= 2:
                            view.notice("aborted (second Ctrl-C)\n", "31")
                            raise TurnAborted()
                        if not cancel_sent:
                            cancel_sent = True
                            result.cancelled = True
                            view.notice("stopping… (Ctrl-C again to quit at once)\n", "33")
                            await self.send(
                                {
                                    "type": "chat.cancel",
                                    "sessionId": self.session_id,
                                    "turnId": turn_id,
                                }
                            )
                    if not get.done() or get.cancelled():
                        continue
                    msg = get.result()
                    kind = msg.get("type")
                    if msg.get("sessionId") not in (None, self.session_id):
                        continue
                    if kind == "approval.request":
                        view.passing(msg)
                        await self._approve(msg)
                    elif kind == "user.ask":
                        view.passing(msg)
                        await self._answer(msg)
                    elif view.show(msg):  # chat.done or chat.error
                        break
        except TimeoutError:
            if not deadline.expired():
                raise
            await self._gave_up(turn_id, timeout, view)
        finally:
            self._in_turn = False
        result.seconds = time.monotonic() - started
        view.write_summary()
        return result

    async def _gave_up(self, turn_id: str, timeout: float | None, view: TurnView) -> None:
        """The run's ``--timeout`` passed: cancel the turn (nothing of it is replayed) and fail."""
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            await self.send(
                {"type": "chat.cancel", "sessionId": self.session_id, "turnId": turn_id}
            )
        result = view.result
        result.ok = False
        result.code = "REQUEST_TIMEOUT"
        result.error = f"gave up after {timeout:g} s (--timeout): the turn was cancelled"
        view.notice(result.error + "\n", "31")

    async def _approve(self, msg: dict[str, Any]) -> None:
        question = (
            f"Allow {msg.get('tool')}: {msg.get('summary') or format_args(msg.get('args') or {})}"
            f"{' on ' + str(msg.get('origin')) if msg.get('origin') else ''}? [y/N/a(lways)] "
        )
        answer = await self.asker(question) if self.asker is not None else None
        if answer is None:
            self._write(
                f"approval needed for {msg.get('tool')}: nobody to ask, denied "
                "(pass --yes, or set tools.approval_mode)\n"
            )
        word = (answer or "").strip().lower()
        decision = {"y": "allow", "yes": "allow", "a": "allow_session", "always": "allow_session"}
        await self.send(
            {
                "type": "approval.response",
                "sessionId": self.session_id,
                "approvalId": msg.get("approvalId"),
                "decision": decision.get(word, "deny"),
            }
        )

    async def _answer(self, msg: dict[str, Any]) -> None:
        prompt = str(msg.get("prompt") or "?")
        options = msg.get("options") or []
        if options:
            prompt += " (" + ", ".join(str(o.get("label")) for o in options) + ")"
        answer = await self.asker(prompt + " ") if self.asker is not None else None
        reply: dict[str, Any] = {
            "type": "user.answer",
            "sessionId": self.session_id,
            "askId": msg.get("askId"),
        }
        if answer is None:
            reply["cancelled"] = True
        else:
            reply["value"] = answer.strip()
        await self.send(reply)

    # -- stored chats (scope "cli") ---------------------------------------------------------------

    async def list_chats(self) -> list[dict[str, Any]]:
        await self.send({"type": "chat.list"})
        msg = await self.expect("chat.list.result")
        return [c for c in msg.get("chats") or [] if isinstance(c, dict)]

    async def history(self, chat_id: str) -> list[dict[str, Any]]:
        await self.send({"type": "chat.history", "id": chat_id})
        msg = await self.expect("chat.history.result", id=chat_id)
        return [m for m in msg.get("messages") or [] if isinstance(m, dict)]

    async def delete(self, chat_id: str) -> bool:
        await self.send({"type": "chat.delete", "id": chat_id})
        msg = await self.expect("chat.delete.result", id=chat_id)
        return bool(msg.get("ok"))
