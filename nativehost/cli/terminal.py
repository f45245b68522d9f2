"""The terminal client: ``browy run``, ``browy chat`` / ``repl`` and ``browy sessions``.

A ``cli`` link to the daemon (protocol.md section 6, last bullet) carrying the extension's v2
protocol: ``hello{client: "cli", installId: "cli"}`` (so the chats live in scope ``cli``), one
``session.start`` asking for ``cdp.activeTab`` (granted only when a browser is connected and
``[daemon] allow_local_clients = true``), then ``chat.send`` per turn. The daemon streams
``chat.delta`` / ``chat.tool_call`` / ``chat.tool_result`` / ``usage`` and ends every turn with
exactly one ``chat.done`` or ``chat.error``.

Ctrl-C during a turn sends ``chat.cancel`` (the turn ends with ``chat.done`` carrying the partial
text); a second Ctrl-C gives up on the turn (:class:`TurnAborted`). Approval prompts and
``ask_user`` questions are answered from the terminal through an :data:`Asker`, or refused when
there is nobody to ask.

This module holds the commands and the terminal's input; the link and its turns are
:mod:`nativehost.cli.terminal_client` (the demo's streaming output too), how a turn is shown
:mod:`nativehost.cli.terminal_view`, and which browser the turns drive
:mod:`nativehost.cli.browser_choice`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import IO

import orjson

from nativehost.cli import stopping
from nativehost.cli.browser_choice import BrowserTarget, pick_browser
from nativehost.cli.terminal_client import Asker, TerminalClient, TurnAborted
from nativehost.cli.terminal_view import TurnResult, short

#: What ``browy run`` says when it runs with no browser.
NO_BROWSER = (
    "none — this run gets only the tools that need no tab: files, notes, skills, ask_user "
    "(and web_fetch and the other host tools you switched on)"
)

__all__ = ["LineReader", "chat_loop", "run_task", "sessions_command"]


class LineReader:
    """Lines from a text stream on a daemon thread, for an asyncio loop (``input()`` in an
    executor would keep ``asyncio.run`` waiting for Enter at exit)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdin
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for line in self.stream:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line.rstrip("\n"))
        except (OSError, ValueError):
            pass
        with contextlib.suppress(RuntimeError):  # the loop may be closed already
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

    async def readline(self) -> str | None:
        """The next line, or None at end of input."""
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)
        return line


# --------------------------------------------------------------------------------------------
# browy run / browy chat


def _asker(reader: LineReader | None, out: IO[str], auto_yes: bool) -> Asker | None:
    if auto_yes:

        async def yes(question: str) -> str | None:
            out.write(question + "a (--yes)\n")
            return "a"

        return yes
    if reader is None:
        return None

    async def ask(question: str) -> str | None:
        out.write(question)
        out.flush()
        return await reader.readline()

    return ask


async def _close(client: TerminalClient | None, target: BrowserTarget | None) -> None:
    if client is not None:
        await client.close()
    if target is not None:
        await target.close()


async def run_task(
    task: str,
    *,
    user_home: Path,
    env: dict[str, str],
    out: IO[str],
    url: str | None = None,
    launch: bool = False,
    auto_yes: bool = False,
    session_id: str | None = None,
    headless: bool | None = None,
    interactive: bool | None = None,
    timeout: float | None = None,
    no_browser: bool = False,
    as_json: bool = False,
    notes: IO[str] | None = None,
) -> int:
    """``browy run``: one turn, streamed. 0 done, 1 failed, 130 interrupted twice.

    With *no_browser* (or when no browser is connected and none can be launched) the turn runs
    on the user's daemon with no tab: only the tools that need none. *as_json*: *out* gets only
    JSON lines — ``run.started``, the turn's messages, one ``result``
    (:mod:`nativehost.cli.json_view`); notes and prompts go to *notes* (default stderr)."""
    from nativehost.cli.context import wants_color
    from nativehost.cli.json_view import json_line, result_object
    from nativehost.demo.launch import LaunchError

    notes = notes if notes is not None else (sys.stderr if as_json else out)
    target: BrowserTarget | None = None
    if not no_browser:
        try:
            target = await pick_browser(
                user_home, env, notes, launch=launch, url=url, headless=headless
            )
        except LaunchError as exc:
            if launch:
                raise
            notes.write(f"note: no browser to drive ({exc}); running without one\n")
    reader = LineReader() if (sys.stdin.isatty() if interactive is None else interactive) else None
    client: TerminalClient | None = None
    session = session_id or ""

    def finish(code: int, result: TurnResult | None = None, error: str = "") -> int:
        if as_json:
            json_line(out, result_object(result, exit_code=code, session_id=session, error=error))
        return code

    try:
        how = target.how if target is not None else NO_BROWSER
        if not as_json:
            out.write(f"browser: {how}\n")
        client = await TerminalClient.connect(
            target.home if target is not None else user_home,
            out,
            session_id=session_id,
            asker=_asker(reader, notes, auto_yes),
            color=not as_json and wants_color(out, env),
            json_lines=as_json,
            notes=notes,
            browser=target is not None,
        )
        session = client.session_id
        if target is not None and not client.can_drive_browser:
            error = "the daemon does not let this terminal drive a browser"
            if not as_json:
                out.write(f"error: {error}\n")
            return finish(1, error=error)
        text = task
        if url and (target is None or target.browser is None):
            text = f"First open {url} in a new tab. Then: {task}"
        if as_json:
            json_line(
                out,
                {
                    "type": "run.started",
                    "sessionId": session,
                    "browser": how,
                    "model": client.model,
                },
            )
        else:
            out.write(f"session: {client.session_id}\n\n")
        with client.sigint_cancels_turns():
            result = await client.run_turn(text, timeout=timeout)
        return finish(0 if result.ok and not result.cancelled else 1, result)
    except TurnAborted:
        return finish(130, error="aborted (second Ctrl-C)")
    except asyncio.CancelledError:
        if as_json:  # a stop signal: scripts still get their last line
            stop = stopping.current()
            signum = stop.signum if stop is not None else None
            finish(128 + signum if signum else 1, error="stopped by a signal")
        raise
    finally:
        await stopping.shielded(_close(client, target))


async def chat_loop(
    *,
    user_home: Path,
    env: dict[str, str],
    out: IO[str],
    stdin: IO[str] | None = None,
    launch: bool = False,
    auto_yes: bool = False,
    session_id: str | None = None,
    headless: bool | None = None,
) -> int:
    """``browy chat``: read a line, run it as a turn, repeat. Ctrl-C stops a turn; Ctrl-C at the
    prompt, Ctrl-D, ``/quit`` or a second Ctrl-C during a turn exit."""
    from nativehost.cli.context import wants_color

    target = await pick_browser(user_home, env, out, launch=launch, headless=headless)
    reader = LineReader(stdin)
    client: TerminalClient | None = None
    quit_ = asyncio.Event()
    try:
        client = await TerminalClient.connect(
            target.home,
            out,
            session_id=session_id,
            asker=_asker(reader, out, auto_yes),
            color=wants_color(out, env),
        )
        drive = "drives " + target.how if client.can_drive_browser else "cannot drive a browser"
        out.write(
            f"session {client.session_id} ({drive}). /quit or Ctrl-D to leave; "
            "Ctrl-C stops a turn.\n"
        )
        with client.sigint_cancels_turns(on_idle=quit_.set):
            while not quit_.is_set():
                out.write("you> ")
                out.flush()
                line_task = asyncio.ensure_future(reader.readline())
                quit_task = asyncio.ensure_future(quit_.wait())
                await asyncio.wait({line_task, quit_task}, return_when=asyncio.FIRST_COMPLETED)
                quit_task.cancel()
                if not line_task.done():
                    line_task.cancel()
                    break
                line = line_task.result()
                if line is None or line.strip() in ("/quit", "/exit"):
                    break
                if not line.strip():
                    continue
                try:
                    await client.run_turn(line)
                except TurnAborted:
                    return 130
        out.write("\n")
        return 0
    finally:
        await stopping.shielded(_close(client, target))


async def sessions_command(
    home: Path,
    action: str,
    chat_id: str | None,
    out: IO[str],
    *,
    as_json: bool = False,
    ensure_daemon: bool = True,
) -> int:
    """``browy sessions list|show|delete``, through the daemon (started if needed) over a
    ``cli`` link: the chats of scope ``cli`` (the terminal's)."""
    if ensure_daemon:
        from nativehost.daemon.process import start_daemon

        await asyncio.to_thread(start_daemon, home)
    client = await TerminalClient.connect(home, out, start_session=False)
    try:
        if action == "list":
            chats = await client.list_chats()
            if as_json:
                out.write(orjson.dumps(chats, option=orjson.OPT_INDENT_2).decode() + "\n")
            elif not chats:
                out.write("no terminal chats yet\n")
            for c in chats if not as_json else []:
                when = time.strftime(
                    "%Y-%m-%d %H:%M", time.localtime(int(c.get("modifiedTime") or 0) / 1000)
                )
                out.write(f"{c.get('id')}  {when}  {short(c.get('summary') or '', 60)}\n")
            return 0
        assert chat_id is not None
        if action == "show":
            rows = await client.history(chat_id)
            if as_json:
                out.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
                return 0 if rows else 1
            if not rows:
                out.write(f"no chat {chat_id}\n")
                return 1
            for row in rows:
                role = row.get("role")
                if role == "tool":
                    mark = "✓" if row.get("ok") else "✗"
                    out.write(f"  {mark} {row.get('name')}  {short(row.get('summary') or '')}\n")
                else:
                    out.write(f"{role}: {row.get('text', '')}\n")
            return 0
        ok = await client.delete(chat_id)
        out.write(f"deleted {chat_id}\n" if ok else f"could not delete {chat_id}\n")
        return 0 if ok else 1
    finally:
        await client.close()
