"""The GitHub Copilot CLI on this machine: where it is (:func:`find_cli`) and its device sign-in.

Browy never downloads the CLI (the SDK could fetch a runtime of its own; we always hand it an
explicit path): it is ``@github/copilot`` from npm, found by ``[model] cli_path``, then
``COPILOT_CLI_PATH``, then ``copilot`` on ``PATH``.

Sign-in is the CLI's own OAuth device flow, ``copilot login --device-code``: the CLI prints a URL
and a one-time code, the user enters the code in a browser, the CLI stores the token in the
system's credential store (or ``~/.copilot``) and exits. :func:`device_login` runs it and hands
the URL and code to the caller (:func:`parse_device_prompt` finds them in its output). Nothing the
CLI prints is logged, and Browy never sees the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import re
import shutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

__all__ = [
    "INSTALL_HINT",
    "DeviceCode",
    "device_login",
    "find_cli",
    "parse_device_prompt",
]

log = logging.getLogger(__name__)

INSTALL_HINT = (
    "Install the GitHub Copilot CLI: npm install -g @github/copilot (Node.js 22 or newer), or "
    "point Browy at it: browy config set model.cli_path /path/to/copilot"
)
#: How long a sign-in may wait for the user to enter the code (GitHub's codes last 15 minutes).
LOGIN_TIMEOUT_S = 900.0

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_URL = re.compile(r"https?://[^\s\"'<>)]+")
# GitHub's user codes: two groups of four letters or digits, e.g. "WDJB-MJHT".
_CODE = re.compile(r"\b([A-Z0-9]{4}-[A-Z0-9]{4})\b")


@dataclass(frozen=True, slots=True)
class DeviceCode:
    url: str
    code: str

    def instructions(self) -> str:
        return f"To sign in to GitHub Copilot, open {self.url} and enter the code {self.code}."


def find_cli(configured: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The CLI to run: *configured* (``[model] cli_path``), else ``COPILOT_CLI_PATH``, else
    ``copilot`` on ``PATH``; None when there is none (or the named file is not executable)."""
    env = os.environ if env is None else env
    for candidate in (configured, env.get("COPILOT_CLI_PATH")):
        if candidate:
            path = os.path.expanduser(candidate)
            return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which("copilot", path=env.get("PATH"))


def parse_device_prompt(lines: list[str]) -> DeviceCode | None:
    """The URL and code the CLI asked the user to enter, once both have been printed."""
    url = code = None
    for raw in lines:
        line = _ANSI.sub("", raw)
        if code is None and (found := _CODE.search(line)):
            code = found.group(1)
        for candidate in _URL.findall(line):
            # "…/login/device/code" is the API the CLI calls, not the page for the user.
            if "/login/device" in candidate and not candidate.rstrip(".,").endswith("/code"):
                url = candidate.rstrip(".,;:")
    return DeviceCode(url, code) if url and code else None


CodeSink = Callable[[DeviceCode], Awaitable[None] | None]


async def device_login(
    cli: str,
    on_code: CodeSink,
    *,
    timeout: float = LOGIN_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    echo: Callable[[str], None] | None = None,
) -> bool:
    """Run ``copilot login --device-code``; call *on_code* once with the URL and code; return
    whether the CLI says the sign-in succeeded. *echo* (a terminal) gets every line the CLI prints,
    in case its wording is not what :func:`parse_device_prompt` expects; nothing is logged. The
    process is killed if *timeout* passes or the caller is cancelled."""
    proc = await asyncio.create_subprocess_exec(
        cli,
        "login",
        "--device-code",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**(os.environ if env is None else env), "NO_COLOR": "1"},
    )
    assert proc.stdout is not None
    seen: list[str] = []
    told = False
    try:
        async with asyncio.timeout(timeout):
            while line := await proc.stdout.readline():
                if echo is not None:
                    echo(_ANSI.sub("", line.decode("utf-8", "replace")).rstrip())
                if told:
                    continue  # drained, never logged: only the code matters
                seen.append(line.decode("utf-8", "replace"))
                device = parse_device_prompt(seen[-20:])
                if device is not None:
                    told = True
                    result = on_code(device)
                    if inspect.isawaitable(result):
                        await result
            code = await proc.wait()
    except TimeoutError:
        log.info("copilot sign-in: no answer within %g s", timeout)
        return False
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
    log.info("copilot sign-in ended with exit code %d (code shown: %s)", code, told)
    return code == 0
