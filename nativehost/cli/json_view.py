"""``browy run --json``: the turn as JSON lines, for scripts.

Each message of the turn the daemon sends (protocol.md section 4: ``chat.delta``,
``chat.tool_call``, ``chat.tool_result``, ``usage``, ``chat.queued``, ``approval.request``,
``user.ask``, and the one ``chat.done`` or ``chat.error``) is written as it comes, one compact
JSON object per line, exactly as received. ``browy run`` starts with a ``run.started`` line and
ends with one ``result`` object (:func:`result_object`); nothing else reaches stdout — notes and
prompts go to stderr — so ``jq`` can read it whole.
"""

from __future__ import annotations

from typing import IO, Any

import orjson

from nativehost.cli.terminal_view import TurnResult, TurnView

__all__ = ["JsonTurnView", "json_line", "result_object"]


def json_line(out: IO[str], obj: dict[str, Any]) -> None:
    """Write *obj* as one line of JSON and flush (a reader sees each event when it happens)."""
    out.write(orjson.dumps(obj).decode() + "\n")
    out.flush()


def result_object(
    result: TurnResult | None, *, exit_code: int, session_id: str, error: str = ""
) -> dict[str, Any]:
    """The last line of ``browy run --json``: how the turn ended, its tools and tokens, and the
    exit code the command returns."""
    obj: dict[str, Any] = {
        "type": "result",
        "exitCode": exit_code,
        "sessionId": session_id,
        "ok": False,
        "cancelled": False,
        "text": "",
        "error": error,
        "code": "",
        "tools": [],
        "inputTokens": 0,
        "outputTokens": 0,
        "seconds": 0.0,
    }
    if result is not None:
        obj.update(
            ok=result.ok,
            cancelled=result.cancelled,
            text=result.text,
            error=result.error or error,
            code=result.code,
            tools=[
                {
                    "callId": t.call_id,
                    "tool": t.tool,
                    "args": t.args,
                    "outcome": t.outcome,
                    "summary": t.summary,
                    "durationMs": t.duration_ms,
                }
                for t in result.tools
            ],
            inputTokens=result.input_tokens,
            outputTokens=result.output_tokens,
            seconds=round(result.seconds, 3),
        )
    return obj


class JsonTurnView(TurnView):
    """A :class:`TurnView` that keeps the same tally but writes each message of the turn as a
    JSON line instead of text; its notices (``stopping…``) go to *notes* (stderr)."""

    def __init__(self, out: IO[str], *, notes: IO[str]) -> None:
        super().__init__(out, color=False)
        self.notes = notes

    def write(self, text: str) -> None:
        pass  # the text view's output: not in JSON

    def notice(self, text: str, code: str) -> None:
        self.notes.write(text)
        self.notes.flush()

    def write_summary(self) -> None:
        pass  # the caller writes the result object

    def passing(self, msg: dict[str, Any]) -> None:
        json_line(self.out, msg)

    def show(self, msg: dict[str, Any]) -> bool:
        json_line(self.out, msg)
        return super().show(msg)
