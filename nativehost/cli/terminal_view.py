"""How a streamed turn looks in the terminal, and what it added up to.

:class:`TurnView` is fed the daemon's messages of one turn (``chat.delta`` / ``chat.tool_call`` /
``chat.tool_result`` / ``usage`` / ``chat.queued``, ending with exactly one ``chat.done`` or
``chat.error``) and writes them out as they come: text as it streams, one line per tool call and
one per its result, a closing summary line. It keeps the tally in a :class:`TurnResult`. It does
no I/O but writing to its stream; :class:`nativehost.cli.terminal_client.TerminalClient` reads the
link, answers approvals and questions, and hands it the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any

import orjson

__all__ = [
    "ToolRecord",
    "TurnResult",
    "TurnView",
    "format_args",
    "short",
    "summary_line",
]


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


def short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_args(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={short(v, 48)}" for k, v in args.items())


def summary_line(result: TurnResult) -> str:
    state = "cancelled" if result.cancelled and result.ok else ("done" if result.ok else "failed")
    failed = sum(1 for t in result.tools if t.outcome and t.outcome != "ok")
    parts = [f"{state} in {result.seconds:.1f} s", f"{len(result.tools)} tool call(s)"]
    if failed:
        parts.append(f"{failed} not ok")
    if result.input_tokens or result.output_tokens:
        parts.append(f"{result.input_tokens} in / {result.output_tokens} out tokens")
    return "── " + ", ".join(parts)


class TurnView:
    """One turn on *out* (ANSI colours if *color*); its tally is :attr:`result`."""

    def __init__(self, out: IO[str], *, color: bool = False) -> None:
        self.out = out
        self.color = color
        self.result = TurnResult(ok=False)
        self._tools: dict[str, ToolRecord] = {}
        self._mid_line = False
        self._streamed = ""

    # -- output ------------------------------------------------------------------------------------

    def paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def newline(self) -> None:
        """End the streamed line, if one is open, before a line of our own."""
        if self._mid_line:
            self.write("\n")
            self._mid_line = False

    def notice(self, text: str, code: str) -> None:
        """A line of our own (*text* ends with a newline), painted with *code*."""
        self.newline()
        self.write(self.paint(text, code))

    def write_summary(self) -> None:
        self.write(self.paint(summary_line(self.result), "2") + "\n")

    # -- the daemon's messages ---------------------------------------------------------------------

    def passing(self, msg: dict[str, Any]) -> None:
        """A message of the turn that the client answers itself (``approval.request``,
        ``user.ask``): nothing to show here, the prompt is the client's."""
        self.newline()

    def show(self, msg: dict[str, Any]) -> bool:
        """Write out one message of the turn; True when it ended the turn (``chat.done`` or
        ``chat.error``). Kinds it does not know are ignored."""
        result = self.result
        kind = msg.get("type")
        if kind == "chat.delta":
            chunk = str(msg.get("text") or "")
            self._streamed += chunk
            self.write(chunk)
            self._mid_line = not chunk.endswith("\n") if chunk else self._mid_line
        elif kind == "chat.tool_call":
            self.newline()
            rec = ToolRecord(
                call_id=str(msg.get("callId")),
                tool=str(msg.get("tool")),
                args=dict(msg.get("args") or {}),
            )
            self._tools[rec.call_id] = rec
            result.tools.append(rec)
            self.write(self.paint(f"→ {rec.tool}", "36") + f"({format_args(rec.args)})\n")
        elif kind == "chat.tool_result":
            self.newline()
            rec = self._tools.get(str(msg.get("callId"))) or ToolRecord("", "?", {})
            rec.outcome = str(msg.get("outcome") or ("ok" if msg.get("ok") else "error"))
            rec.summary = str(msg.get("summary") or "")
            rec.duration_ms = msg.get("durationMs")
            mark = {"ok": "✓", "error": "✗"}.get(rec.outcome, "?")
            paint = {"ok": "32", "error": "31"}.get(rec.outcome, "33")
            took = f" {rec.duration_ms} ms" if rec.duration_ms is not None else ""
            self.write(
                "  "
                + self.paint(f"{mark} {rec.outcome}{took}", paint)
                + (f"  {short(rec.summary, 100)}" if rec.summary else "")
                + "\n"
            )
        elif kind == "usage":
            result.input_tokens += int(msg.get("inputTokens") or 0)
            result.output_tokens += int(msg.get("outputTokens") or 0)
        elif kind == "chat.queued":
            self.newline()
            self.write(f"queued (position {msg.get('position')})\n")
        elif kind == "chat.done":
            result.ok = True
            result.text = str(msg.get("text") or "")
            if not self._streamed.strip() and result.text:
                self.write(result.text)
                self._mid_line = True
            self.newline()
            return True
        elif kind == "chat.error":
            self.newline()
            result.error = str(msg.get("message") or "the turn failed")
            result.code = str(msg.get("code") or "")
            code = f" [{result.code}]" if result.code else ""
            self.write(self.paint(f"error{code}: {result.error}\n", "31"))
            return True
        return False
