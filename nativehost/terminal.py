"""The terminal client: ``browy run``, ``browy chat`` / ``repl`` and the demo's streaming output.

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
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from actors.link_stream import LinkStream
from messages.link import LinkData
from nativehost.link import open_link

__all__ = [
    "Asker",
    "LineReader",
    "TerminalClient",
    "TurnAborted",
    "TurnResult",
    "new_session_id",
]

#: Ask the user a question; returns the answer line, or None if nobody can answer.
Asker = Callable[[str], Awaitable[str | None]]

_PROTOCOL = 2


class TurnAborted(Exception):
    """The user pressed Ctrl-C twice: the turn was left without waiting for its end."""


def new_session_id() -> str:
    return f"cli-{secrets.token_hex(4)}"


@dataclass(slots=True)
class ToolRecord:
    call_id: str
    tool: str
    args: dict[str, Any]
    outcome: str = ""
    summary: str = ""
    duration_ms: int | None = None


@dataclass(slots=True)
class TurnResult:
    ok: bool
    text: str = ""
    error: str = ""
    code: str = ""
    cancelled: bool = False
    tools: list[ToolRecord] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _format_args(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v, 48)}" for k, v in args.items())


class TerminalClient:
    """One ``cli`` link and one chat session on it. Use :meth:`connect`, then :meth:`run_turn`."""

    def __init__(
        self,
        stream: LinkStream,
        out: IO[str],
        *,
        session_id: str,
        asker: Asker | None = None,
        color: bool = False,
    ) -> None:
        self.stream = stream
        self.out = out
        self.session_id = session_id
        self.asker = asker
        self.color = color
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
        start_session: bool = True,
        timeout: float = 10.0,
    ) -> TerminalClient:
        """Open the link, say hello and (by default) start the session; raises on failure."""
        stream, _welcome = await open_link(home, role="cli", timeout=timeout)
        client = cls(
            stream, out, session_id=session_id or new_session_id(), asker=asker, color=color
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
                await client.start_session(timeout=timeout)
        except BaseException:
            await client.close()
            raise
        return client

    async def start_session(self, timeout: float = 10.0) -> dict[str, Any]:
        await self.send(
            {
                "type": "session.start",
                "sessionId": self.session_id,
                "capabilities": ["cdp.activeTab"],
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
        *on_idle* (default: nothing, i.e. ignored). Only in the main thread."""
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

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    # -- a turn ------------------------------------------------------------------------------------

    async def run_turn(self, text: str, *, timeout: float | None = None) -> TurnResult:
        """Send *text*, stream the turn to the terminal, return how it ended."""
        turn_id = f"t-{secrets.token_hex(6)}"
        result = TurnResult(ok=False)
        tools: dict[str, ToolRecord] = {}
        started = time.monotonic()
        mid_line = False
        streamed = ""
        self._interrupts = 0
        self._interrupted.clear()
        self._in_turn = True

        def newline() -> None:
            nonlocal mid_line
            if mid_line:
                self._write("\n")
                mid_line = False

        try:
            await self.send(
                {"type": "chat.send", "sessionId": self.session_id, "text": text, "turnId": turn_id}
            )
            cancel_sent = False
            async with asyncio.timeout(timeout):
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
                            newline()
                            self._write(self._paint("aborted (second Ctrl-C)\n", "31"))
                            raise TurnAborted()
                        if not cancel_sent:
                            cancel_sent = True
                            result.cancelled = True
                            newline()
                            self._write(
                                self._paint("stopping… (Ctrl-C again to quit at once)\n", "33")
                            )
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
                    if kind == "chat.delta":
                        chunk = str(msg.get("text") or "")
                        streamed += chunk
                        self._write(chunk)
                        mid_line = not chunk.endswith("\n") if chunk else mid_line
                    elif kind == "chat.tool_call":
                        newline()
                        rec = ToolRecord(
                            call_id=str(msg.get("callId")),
                            tool=str(msg.get("tool")),
                            args=dict(msg.get("args") or {}),
                        )
                        tools[rec.call_id] = rec
                        result.tools.append(rec)
                        self._write(
                            self._paint(f"→ {rec.tool}", "36") + f"({_format_args(rec.args)})\n"
                        )
                    elif kind == "chat.tool_result":
                        newline()
                        rec = tools.get(str(msg.get("callId"))) or ToolRecord("", "?", {})
                        rec.outcome = str(
                            msg.get("outcome") or ("ok" if msg.get("ok") else "error")
                        )
                        rec.summary = str(msg.get("summary") or "")
                        rec.duration_ms = msg.get("durationMs")
                        mark = {"ok": "✓", "error": "✗"}.get(rec.outcome, "?")
                        paint = {"ok": "32", "error": "31"}.get(rec.outcome, "33")
                        took = f" {rec.duration_ms} ms" if rec.duration_ms is not None else ""
                        self._write(
                            "  "
                            + self._paint(f"{mark} {rec.outcome}{took}", paint)
                            + (f"  {_short(rec.summary, 100)}" if rec.summary else "")
                            + "\n"
                        )
                    elif kind == "usage":
                        result.input_tokens += int(msg.get("inputTokens") or 0)
                        result.output_tokens += int(msg.get("outputTokens") or 0)
                    elif kind == "chat.queued":
                        newline()
                        self._write(f"queued (position {msg.get('position')})\n")
                    elif kind == "approval.request":
                        newline()
                        await self._approve(msg)
                    elif kind == "user.ask":
                        newline()
                        await self._answer(msg)
                    elif kind == "chat.done":
                        result.ok = True
                        result.text = str(msg.get("text") or "")
                        if not streamed.strip() and result.text:
                            self._write(result.text)
                            mid_line = True
                        newline()
                        break
                    elif kind == "chat.error":
                        newline()
                        result.error = str(msg.get("message") or "the turn failed")
                        result.code = str(msg.get("code") or "")
                        code = f" [{result.code}]" if result.code else ""
                        self._write(self._paint(f"error{code}: {result.error}\n", "31"))
                        break
        finally:
            self._in_turn = False
        result.seconds = time.monotonic() - started
        self._write(self._paint(self.summary_line(result), "2") + "\n")
        return result

    @staticmethod
    def summary_line(result: TurnResult) -> str:
        state = (
            "cancelled" if result.cancelled and result.ok else ("done" if result.ok else "failed")
        )
        failed = sum(1 for t in result.tools if t.outcome and t.outcome != "ok")
        parts = [f"{state} in {result.seconds:.1f} s", f"{len(result.tools)} tool call(s)"]
        if failed:
            parts.append(f"{failed} not ok")
        if result.input_tokens or result.output_tokens:
            parts.append(f"{result.input_tokens} in / {result.output_tokens} out tokens")
        return "── " + ", ".join(parts)

    async def _approve(self, msg: dict[str, Any]) -> None:
        question = (
            f"Allow {msg.get('tool')}: {msg.get('summary') or _format_args(msg.get('args') or {})}"
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
# Which browser: the user's connected one, or a Chromium of our own


@dataclass(slots=True)
class BrowserTarget:
    """Where the turns run: *home* is the daemon to talk to; *browser* / *private_home* are set
    when we launched a Chromium of our own (stopped and removed by :meth:`close`)."""

    home: Path
    how: str
    browser: Any = None  # nativehost.launch.Browser
    private_home: Path | None = None

    async def close(self) -> None:
        from nativehost.daemon import stop_daemon

        if self.browser is not None:
            await asyncio.to_thread(self.browser.close)
        if self.private_home is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(stop_daemon, self.private_home, timeout=10.0)
            import shutil

            shutil.rmtree(self.private_home, ignore_errors=True)


async def connected_browsers(home: Path) -> int:
    """How many browser connections the daemon of *home* has (0 when it is not running)."""
    from nativehost.daemon import is_running
    from nativehost.link import query_daemon

    if not await asyncio.to_thread(is_running, home):
        return 0
    try:
        status = await query_daemon(home, "status", timeout=3.0)
    except Exception:
        return 0
    return int(status.get("links") or 0)


def _private_config(user_home: Path, private_home: Path) -> None:
    """The user's settings, with this terminal allowed to drive the browser it launched."""
    from nativehost.config import dumps_toml, read_config_file

    raw = {k: dict(v) for k, v in read_config_file(user_home).items() if isinstance(v, dict)}
    model = raw.setdefault("model", {})
    key_file = model.get("api_key_file")
    if isinstance(key_file, str) and not Path(key_file).expanduser().is_absolute():
        model["api_key_file"] = str(user_home / key_file)
    raw.pop("host", None)  # the installer writes its own
    daemon = raw.setdefault("daemon", {})
    daemon["allow_local_clients"] = True
    daemon["idle_exit_seconds"] = 60
    path = private_home / "config.toml"
    path.write_text(dumps_toml(raw), encoding="utf-8")
    path.chmod(0o600)


async def pick_browser(
    user_home: Path,
    env: dict[str, str],
    out: IO[str],
    *,
    launch: bool = False,
    url: str | None = None,
    headless: bool | None = None,
) -> BrowserTarget:
    """The user's connected browser when there is one and ``[daemon] allow_local_clients`` is
    true (and *launch* is false); otherwise a private Chromium with the extension, its own
    profile and its own ``BROWY_HOME`` (the user's settings, local clients allowed)."""
    from nativehost.config import load_config

    if not launch:
        links = await connected_browsers(user_home)
        if links:
            if load_config(user_home, env=env).daemon.allow_local_clients:
                return BrowserTarget(home=user_home, how=f"your connected browser ({links})")
            out.write(
                "note: a browser is connected, but [daemon] allow_local_clients is false; "
                "launching a private Chromium instead\n"
                "      (to use yours: browy config set daemon.allow_local_clients true, then "
                "restart the daemon)\n"
            )
    import tempfile

    from nativehost.demo import wait_for_browser_link
    from nativehost.launch import launch_browser

    private = Path(tempfile.mkdtemp(prefix="browy-run-"))
    target = BrowserTarget(home=private, how="a private Chromium", private_home=private)
    try:
        _private_config(user_home, private)
        target.browser = await asyncio.to_thread(
            launch_browser,
            private,
            start_url=url or "about:blank",
            headless=headless,
            env=env,
            log_path=private / "chromium.log",
        )
        await wait_for_browser_link(private, timeout=30.0)
    except BaseException:
        await target.close()
        raise
    return target


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
) -> int:
    """``browy run``: one turn, streamed. 0 done, 1 failed, 130 interrupted twice."""
    target = await pick_browser(user_home, env, out, launch=launch, url=url, headless=headless)
    reader = LineReader() if (sys.stdin.isatty() if interactive is None else interactive) else None
    client: TerminalClient | None = None
    try:
        out.write(f"browser: {target.how}\n")
        client = await TerminalClient.connect(
            target.home,
            out,
            session_id=session_id,
            asker=_asker(reader, out, auto_yes),
            color=out.isatty(),
        )
        if not client.can_drive_browser:
            out.write("error: the daemon does not let this terminal drive a browser\n")
            return 1
        text = task
        if url and target.browser is None:
            text = f"First open {url} in a new tab. Then: {task}"
        out.write(f"session: {client.session_id}\n\n")
        with client.sigint_cancels_turns():
            result = await client.run_turn(text, timeout=timeout)
        return 0 if result.ok and not result.cancelled else 1
    except TurnAborted:
        return 130
    finally:
        if client is not None:
            await client.close()
        await target.close()


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
            color=out.isatty(),
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
        if client is not None:
            await client.close()
        await target.close()


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
        from nativehost.daemon import start_daemon

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
                out.write(f"{c.get('id')}  {when}  {_short(c.get('summary') or '', 60)}\n")
            return 0
        assert chat_id is not None
        if action == "show":
            rows = await client.history(chat_id)
            if as_json:
                out.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
                return 0
            if not rows:
                out.write(f"no chat {chat_id}\n")
                return 1
            for row in rows:
                role = row.get("role")
                if role == "tool":
                    mark = "✓" if row.get("ok") else "✗"
                    out.write(f"  {mark} {row.get('name')}  {_short(row.get('summary') or '')}\n")
                else:
                    out.write(f"{role}: {row.get('text', '')}\n")
            return 0
        ok = await client.delete(chat_id)
        out.write(f"deleted {chat_id}\n" if ok else f"could not delete {chat_id}\n")
        return 0 if ok else 1
    finally:
        await client.close()
