"""A scripted stand-in for the GitHub Copilot CLI (``copilot --headless --stdio``).

Run as a program (``python copilot_standin.py …``, through the wrapper that
:class:`tests.helpers.copilot_cli.StandinCli` writes and hands the SDK as its CLI path). Standard
library only: it is the CLI, not Browy. It speaks what the real CLI 1.0.x speaks to the
``github-copilot-sdk`` — JSON-RPC 2.0 with ``Content-Length`` framing on stdio — for the methods
Browy's gateway uses, with the shapes recorded from the real CLI (``connect``, ``auth.getStatus``,
``models.list``, ``session.create``/``resume``/``send``/``abort``/``detach``,
``session.tools.handlePendingToolCall``, ``runtime.shutdown``; ``session.event`` notifications:
``assistant.turn_start``, ``assistant.message_delta``, ``assistant.usage``, ``assistant.message``
with ``toolRequests``, ``tool.execution_start``, ``external_tool.requested``/``completed``,
``assistant.idle``, ``session.idle``, ``session.error``). ``login --device-code`` prints a URL and
a code like the real one, then marks the sign-in done.

Its directory (``STANDIN_DIR``) holds ``script.json`` (the scenario), the ``authed`` mark, a
count of the turns already played (so a CLI started after a crash plays the next one),
``starts`` (one line per process) and ``log.jsonl`` (every request received).

A turn is a list of model replies, each ``{"text": [pieces], "tools": [{"name", "args"}],
"usage": [in, out]}``, or ``{"hang": true}`` (waits for an abort), ``{"crash": true}`` (the
process exits at once), ``{"error": "message"}`` (``session.error``).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

DIR = Path(os.environ["STANDIN_DIR"])
SCRIPT: dict[str, Any] = json.loads((DIR / "script.json").read_text())
_out_lock = threading.Lock()
_sessions: dict[str, dict[str, Any]] = {}
_pending: dict[str, dict[str, Any]] = {}  # requestId -> {"event", "result"}
_pending_cv = threading.Condition()


def _log(entry: dict[str, Any]) -> None:
    with (DIR / "log.jsonl").open("a") as f:
        f.write(json.dumps(entry) + "\n")


def _write(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    with _out_lock:
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        sys.stdout.buffer.flush()


def _read() -> dict[str, Any] | None:
    header = sys.stdin.buffer.readline()
    if not header:
        return None
    length = int(header.decode().split(":", 1)[1])
    sys.stdin.buffer.readline()
    body = sys.stdin.buffer.read(length)
    return json.loads(body) if len(body) == length else None


def _event(session_id: str, kind: str, data: dict[str, Any], ephemeral: bool = False) -> None:
    event = {
        "type": kind,
        "data": data,
        "id": str(uuid.uuid4()),
        "timestamp": datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z"),
        "parentId": None,
    }
    if ephemeral:
        event["ephemeral"] = True
    _write(
        {
            "jsonrpc": "2.0",
            "method": "session.event",
            "params": {"sessionId": session_id, "event": event},
        }
    )


def _authed() -> bool:
    return (DIR / "authed").exists()


def _next_turn() -> list[dict[str, Any]]:
    counter = DIR / "turns_done"
    done = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(done + 1))
    turns = SCRIPT.get("turns", [])
    return turns[done] if done < len(turns) else [{"text": ["(no more scripted turns)"]}]


def _aborted(session: dict[str, Any]) -> bool:
    return bool(session["abort"].is_set())


def _play(session_id: str) -> None:
    session = _sessions[session_id]
    aborted = False
    for number, reply in enumerate(_next_turn()):
        _event(session_id, "assistant.turn_start", {"turnId": str(number)})
        if reply.get("crash"):
            os._exit(3)
        if reply.get("hang"):
            session["abort"].wait(60)
        if reply.get("error"):
            _event(
                session_id,
                "session.error",
                {"errorType": reply.get("errorType", "query"), "message": reply["error"]},
            )
            break
        if _aborted(session):
            aborted = True
            break
        message_id = str(uuid.uuid4())
        _event(session_id, "assistant.message_start", {"messageId": message_id}, True)
        for piece in reply.get("text", []):
            time.sleep(float(reply.get("delay", 0)))
            _event(
                session_id,
                "assistant.message_delta",
                {"messageId": message_id, "deltaContent": piece},
                True,
            )
        tokens_in, tokens_out = reply.get("usage", [7, 3])
        _event(
            session_id,
            "assistant.usage",
            {"model": session["model"], "inputTokens": tokens_in, "outputTokens": tokens_out},
            True,
        )
        calls = [(f"call_{number}_{i}", t) for i, t in enumerate(reply.get("tools", []))]
        _event(
            session_id,
            "assistant.message",
            {
                "messageId": message_id,
                "content": "".join(reply.get("text", [])),
                "toolRequests": [
                    {
                        "toolCallId": cid,
                        "name": t["name"],
                        "arguments": t.get("args", {}),
                        "type": "function",
                    }
                    for cid, t in calls
                ],
                "turnId": str(number),
            },
        )
        for call_id, tool in calls:
            if not _call_tool(session_id, session, call_id, tool):
                aborted = True
                break
        _event(session_id, "assistant.turn_end", {"turnId": str(number)})
        if aborted or not calls:
            break
    aborted = aborted or _aborted(session)
    _event(session_id, "assistant.idle", {"aborted": True} if aborted else {}, True)
    _event(session_id, "session.idle", {"aborted": True} if aborted else {}, True)
    session["abort"].clear()


def _call_tool(
    session_id: str, session: dict[str, Any], call_id: str, tool: dict[str, Any]
) -> bool:
    """Ask the SDK to run one external tool; False if the turn was aborted meanwhile."""
    args = tool.get("args", {})
    _event(
        session_id,
        "tool.execution_start",
        {"toolCallId": call_id, "toolName": tool["name"], "arguments": args},
    )
    request_id = str(uuid.uuid4())
    with _pending_cv:
        _pending[request_id] = {"result": None}
    _event(
        session_id,
        "external_tool.requested",
        {
            "requestId": request_id,
            "sessionId": session_id,
            "toolCallId": call_id,
            "toolName": tool["name"],
            "arguments": args,
        },
    )
    with _pending_cv:
        while _pending[request_id]["result"] is None and not _aborted(session):
            _pending_cv.wait(0.05)
        answer = _pending.pop(request_id)["result"]
    _event(session_id, "external_tool.completed", {"requestId": request_id})
    if answer is None:
        return False
    ok = "error" not in answer and (answer.get("result") or {}).get("resultType") == "success"
    _event(session_id, "tool.execution_complete", {"toolCallId": call_id, "success": ok})
    return True


def _session_result(session_id: str) -> dict[str, Any]:
    return {
        "sessionId": session_id,
        "nativeSessionId": session_id,
        "isRemote": False,
        "mode": "interactive",
        "workspacePath": str(DIR / "session-state" / session_id),
        "capabilities": {"ui": {"elicitation": False}, "extensions": False},
        "modelState": {"modelId": _sessions[session_id]["model"]},
    }


def _handle(method: str, params: dict[str, Any]) -> Any:
    if method == "connect":
        return {
            "ok": True,
            "protocolVersion": 3,
            "version": "1.0.102-standin",
            "taskKinds": ["agent", "shell", "client"],
        }
    if method == "ping":
        return {"message": params.get("message") or "", "timestamp": 0, "protocolVersion": 3}
    if method == "auth.getStatus":
        if _authed():
            return {
                "isAuthenticated": True,
                "authType": "user",
                "host": "https://github.com",
                "login": "octocat",
                "statusMessage": "Logged in as octocat",
            }
        return {"isAuthenticated": False, "statusMessage": "Not authenticated"}
    if method == "models.list":
        if not _authed():
            raise RuntimeError(
                "Request models.list failed with message: Not authenticated. "
                "Please authenticate first."
            )
        return {
            "models": [
                {
                    "id": m,
                    "name": m.upper(),
                    "capabilities": {"supports": {}},
                    "policy": {"state": "enabled", "terms": ""},
                }
                for m in SCRIPT.get("models", ["gpt-4.1"])
            ]
        }
    if method in ("session.create", "session.resume"):
        session_id = params["sessionId"]
        if method == "session.resume" and session_id not in _sessions:
            raise RuntimeError(
                "Request session.resume failed with message: Failed to load "
                f"session events: Session not found: {session_id}"
            )
        _sessions[session_id] = {
            "model": params.get("model") or "gpt-4.1",
            "abort": threading.Event(),
        }
        return _session_result(session_id)
    if method == "session.send":
        # Just after this answer goes out, as the real CLI answers before the turn's events.
        timer = threading.Timer(0.01, _play, args=(params["sessionId"],))
        timer.daemon = True
        timer.start()
        return {"messageId": str(uuid.uuid4())}
    if method == "session.abort":
        _sessions[params["sessionId"]]["abort"].set()
        with _pending_cv:
            _pending_cv.notify_all()
        return {"success": True}
    if method == "session.tools.handlePendingToolCall":
        with _pending_cv:
            entry = _pending.get(params["requestId"])
            if entry is not None:
                entry["result"] = params
            _pending_cv.notify_all()
        return {"success": entry is not None}
    if method == "session.detach":
        return {"success": True}
    if method == "runtime.shutdown":
        return None
    raise LookupError(method)


def serve() -> None:
    with (DIR / "starts").open("a") as f:
        f.write(f"{os.getpid()}\n")
    while (message := _read()) is not None:
        if "method" not in message or "id" not in message:
            continue  # a response or a notification: nothing the stand-in waits for
        method, params = message["method"], message.get("params") or {}
        _log({"method": method, "params": params})
        try:
            _write({"jsonrpc": "2.0", "id": message["id"], "result": _handle(method, params)})
        except LookupError:
            _write(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": f"Unhandled method {method}"},
                }
            )
        except RuntimeError as exc:
            _write(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32603, "message": str(exc)},
                }
            )


def login() -> int:
    if SCRIPT.get("login") == "fails":
        print("Login failed: Error: the device code expired", flush=True)
        return 1
    print(
        "To authenticate, visit https://github.com/login/device and enter code WDJB-MJHT.",
        flush=True,
    )
    time.sleep(float(SCRIPT.get("login_wait", 0.2)))
    (DIR / "authed").write_text("octocat")
    print("Signed in successfully as octocat.", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["login"]:
        sys.exit(login())
    serve()
