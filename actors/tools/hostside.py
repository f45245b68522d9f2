"""Host code (``bash``, ``run_script``) and ``await_user``.

Host code runs programs on the user's machine, so the registry gates it twice (registry rules 2-3,
protocol.md section 3b): ``bash`` must be named in ``enabledHostTools`` *and* the host's own config
must set ``allow_host_code``; ``run_script`` needs the config. A v1 toggle alone never turns it on.
Both are registered with ``host_code=True``: the registry records them in the ledger and never runs
one twice for the same call id (protocol.md section 5, "No replay").

A program runs with ``asyncio.create_subprocess_exec`` (no shell in between, except ``bash -c``
itself), in the files sandbox folder, in a session of its own so the whole process group is
killed at its deadline; its environment is a short allow-list (``PATH``, locale, ``HOME`` set to
the sandbox): the daemon's own environment may hold provider keys. Output is capped: the program
keeps running while the rest of its output is read and dropped.

``await_user`` is v1-compatible and never blocks: it tells the model to stop, tell the user what
is needed (log in, solve a captcha, confirm a payment) and wait for their reply in the chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from actors.runtime.private_files import private_dir
from actors.tools.files import FileSandbox
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput

__all__ = ["RunResult", "register_host_tools", "run_program"]

_OUTPUT_CAP = 50_000
_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT", "TEMP", "TMP")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """What a finished (or killed) program left: exit code, capped output, whether it timed out."""

    exit_code: int | None
    output: str
    truncated: bool
    timed_out: bool
    elapsed: float

    def report(self) -> str:
        if self.timed_out:
            head = f"killed after {self.elapsed:.1f}s (timeout)"
        else:
            head = f"exit code {self.exit_code} after {self.elapsed:.1f}s"
        tail = "\n[… output cut at the size limit]" if self.truncated else ""
        return f"{head}\n{self.output or '(no output)'}{tail}"


async def _drain(stream: asyncio.StreamReader, buf: bytearray, cap: int) -> bool:
    """Read ``stream`` to its end, keeping the first ``cap`` bytes; True if any were dropped."""
    dropped = False
    while chunk := await stream.read(65536):
        room = cap - len(buf)
        if room > 0:
            buf += chunk[:room]
        dropped = dropped or len(chunk) > room
    return dropped


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        if sys.platform != "win32":
            os.killpg(proc.pid, signal.SIGKILL)  # the group we created: the program's children too
        else:
            proc.kill()


async def run_program(
    argv: list[str], *, cwd: Path, timeout: float, cap: int = _OUTPUT_CAP
) -> RunResult:
    """Run ``argv`` in ``cwd`` with stdout and stderr merged, killed at ``timeout`` seconds."""
    env = {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}
    env["HOME"] = str(cwd)
    start = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=sys.platform != "win32",
        )
    except OSError as exc:
        raise ToolError(f"could not start {argv[0]}: {exc.strerror or exc}") from None
    assert proc.stdout is not None
    buf = bytearray()
    reader = asyncio.ensure_future(_drain(proc.stdout, buf, cap))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        timed_out = True
        _kill(proc)
        await proc.wait()
    except asyncio.CancelledError:
        _kill(proc)
        raise
    finally:
        if proc.returncode is None:
            _kill(proc)
    try:
        # Grandchildren may hold the pipe open; the group kill above covers timeouts.
        truncated = await asyncio.wait_for(reader, 5.0)
    except TimeoutError:
        truncated = True
    return RunResult(
        exit_code=proc.returncode,
        output=buf.decode("utf-8", errors="replace"),
        truncated=truncated,
        timed_out=timed_out,
        elapsed=time.monotonic() - start,
    )


def _workdir(ctx: ToolContext) -> Path:
    if not isinstance(ctx.files, FileSandbox):
        raise ToolError("there is no files folder to run in")
    return private_dir(ctx.files.root)


class BashArgs(ToolArgs):
    command: str = Field(min_length=1, description="a bash command line")
    timeout: float = Field(default=30.0, gt=0, le=600, description="seconds")


class RunScriptArgs(ToolArgs):
    code: str = Field(min_length=1, description="the program text")
    language: Literal["python", "node", "bash", "sh"] = "python"
    timeout: float = Field(default=30.0, gt=0, le=600, description="seconds")


class AwaitUserArgs(ToolArgs):
    message: str = Field(
        min_length=1, description="what the user should do, e.g. 'log in to the site'"
    )


def _interpreter(language: str, code: str) -> list[str]:
    if language == "python":
        return [sys.executable, "-I", "-c", code]
    name = {"node": "node", "bash": "bash", "sh": "sh"}[language]
    path = shutil.which(name)
    if path is None:
        raise ToolError(f"{name} is not installed on the host")
    return [path, "-e" if language == "node" else "-c", code]


def register_host_tools(reg: Registry) -> None:
    """Add ``bash``, ``run_script`` and ``await_user`` to ``reg``."""

    @reg.register(
        "bash",
        "Run a bash command on the user's computer, in Browy's files folder; returns exit code "
        "and output (capped).",
        BashArgs,
        page_changing=False,
        host_code=True,
    )
    async def bash(args: BashArgs, ctx: ToolContext) -> ToolOutput:
        res = await run_program(
            _interpreter("bash", args.command), cwd=_workdir(ctx), timeout=args.timeout
        )
        return ToolOutput(
            content=res.report(),
            summary=f"bash: {'timeout' if res.timed_out else f'exit {res.exit_code}'}",
            data={"exit_code": res.exit_code, "timed_out": res.timed_out},
        )

    @reg.register(
        "run_script",
        "Run a Python (or node/bash/sh) program on the user's computer, in Browy's files folder; "
        "returns exit code and output (capped).",
        RunScriptArgs,
        page_changing=False,
        host_code=True,
    )
    async def run_script(args: RunScriptArgs, ctx: ToolContext) -> ToolOutput:
        res = await run_program(
            _interpreter(args.language, args.code), cwd=_workdir(ctx), timeout=args.timeout
        )
        status = "timeout" if res.timed_out else f"exit {res.exit_code}"
        return ToolOutput(
            content=res.report(),
            summary=f"{args.language}: {status}",
            data={"exit_code": res.exit_code, "timed_out": res.timed_out},
        )

    @reg.register(
        "await_user",
        "Hand over to the user for something only they can do (log in, solve a captcha, "
        "confirm a payment): tell them what is needed, then end your turn and wait for their "
        "reply.",
        AwaitUserArgs,
        page_changing=False,
    )
    async def await_user(args: AwaitUserArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(
            content=(
                f"The user must now: {args.message}. Stop using tools, tell the user exactly "
                "this in your reply and ask them to answer in the chat when it is done; "
                "continue the task after their reply."
            ),
            summary=f"waiting for the user: {args.message}"[:200],
            data={"awaiting_user": args.message},
        )
