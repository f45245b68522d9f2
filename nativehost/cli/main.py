"""The ``browy`` command.

Subcommands are rows of :data:`COMMANDS`: a name, a help line, a function that adds the
subcommand's arguments, and a handler ``(args, ctx) -> exit code``. Adding a command is one
more row; heavy modules are imported inside handlers so ``browy --help`` stays fast.

The rows' functions live by topic: :mod:`nativehost.cli.setup_commands` (install-host,
uninstall-host, doctor, config, extension-path), :mod:`nativehost.cli.daemon_commands` (daemon,
logs) and :mod:`nativehost.cli.agent_commands` (demo, run, chat/repl, sessions, model-server,
chaos); what they are given and raise (:class:`Context`, :class:`Command`, :class:`UserError`) is
:mod:`nativehost.cli.context`.

``demo``, ``run``, ``chat``/``repl`` and ``sessions`` live in :mod:`nativehost.demo.demo` and
:mod:`nativehost.cli.terminal`; ``model-server`` and ``chaos`` pass their arguments on to
:func:`nativehost.demo.model_server.main` and ``nativehost.chaos.harness.main``.

Exit codes: 0 success; 1 a check or operation failed (``doctor`` found a problem); 2 the user's
input or environment is wrong (bad arguments, invalid config, no browser found, permission
denied) — reported as one ``browy: error: ...`` message, never a traceback; 3 ``daemon status``
when it is not running.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, NoReturn

from nativehost.cli.agent_commands import (
    configure_browser_choice,
    configure_demo,
    configure_run,
    configure_sessions,
    handle_chaos,
    handle_chat,
    handle_demo,
    handle_model_server,
    handle_run,
    handle_sessions,
)
from nativehost.cli.context import Command, Context, UserError
from nativehost.cli.daemon_commands import (
    configure_daemon,
    configure_logs,
    handle_daemon,
    handle_logs,
)
from nativehost.cli.mcp_commands import configure_mcp, handle_mcp
from nativehost.cli.setup_commands import (
    configure_config,
    configure_doctor,
    configure_install,
    handle_config,
    handle_doctor,
    handle_extension_path,
    handle_install,
    handle_uninstall,
)
from nativehost.setup.platforms import Platform

__all__ = ["COMMANDS", "build_parser", "main", "version_line"]


# --------------------------------------------------------------------------------------------

COMMANDS: dict[str, Command] = {
    "install-host": Command(
        "register the native host with the browsers", configure_install, handle_install
    ),
    "uninstall-host": Command(
        "remove the native host registration", lambda p: None, handle_uninstall
    ),
    "doctor": Command("check the installation", configure_doctor, handle_doctor),
    "config": Command("show or change settings", configure_config, handle_config),
    "extension-path": Command(
        "print the extension directory (for Load unpacked)", lambda p: None, handle_extension_path
    ),
    "logs": Command(
        "print the daemon's log (--relay: the relays' log)", configure_logs, handle_logs
    ),
    "daemon": Command("start, stop or query the daemon", configure_daemon, handle_daemon),
    "demo": Command(
        "run the offline demo: Chromium, the extension, a local shop, one agent turn",
        configure_demo,
        handle_demo,
    ),
    "run": Command("run one task in the browser from the terminal", configure_run, handle_run),
    "chat": Command("chat with the agent in the terminal", configure_browser_choice, handle_chat),
    "repl": Command("the same as chat", configure_browser_choice, handle_chat),
    "sessions": Command(
        "list, show or delete the terminal's chats", configure_sessions, handle_sessions
    ),
    "model-server": Command(
        "serve the scripted OpenAI-compatible model (no key needed)",
        lambda p: None,
        handle_model_server,
        passthrough=True,
    ),
    "chaos": Command("the fault-injection harness", lambda p: None, handle_chaos, passthrough=True),
    "mcp": Command(
        "serve your browser to an MCP client (Claude Code, Codex, Cursor, VS Code)",
        configure_mcp,
        handle_mcp,
    ),
}


class _Parser(argparse.ArgumentParser):
    """argparse, but errors raise instead of exiting, so main() decides the exit code."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(self.format_usage() + f"{self.prog}: error: {message}")


class _UsageError(Exception):
    pass


class _ShowVersion(Exception):
    pass


class _VersionAction(argparse.Action):
    """``--version``: main() prints it on the context's stdout (argparse's own action would write
    to ``sys.stdout`` and exit)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, *args: object, **kwargs: object) -> None:
        raise _ShowVersion()


def version_line() -> str:
    """What ``browy --version`` prints: ``browy 0.1.0``."""
    from nativehost.version import VERSION

    return f"browy {VERSION}"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="browy", description="Browy: a browser agent in your own browser.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    for name, cmd in COMMANDS.items():
        cmd.configure(
            sub.add_parser(name, help=cmd.help, description=cmd.help, add_help=not cmd.passthrough)
        )
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    platform: Platform | None = None,
) -> int:
    """Run ``browy``; returns the exit code (the console script passes it to ``sys.exit``)."""
    from nativehost.config_schema import ConfigError
    from nativehost.setup.install import InstallError

    ctx = Context(
        env=os.environ if env is None else env,
        stdout=sys.stdout if stdout is None else stdout,
        stderr=sys.stderr if stderr is None else stderr,
        _platform=platform,
    )
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if COMMANDS[args.command].passthrough:
            args.args = extra
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except _UsageError as exc:
        print(exc, file=ctx.stderr)
        return 2
    except _ShowVersion:
        ctx.out(version_line())
        return 0
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    try:
        return COMMANDS[args.command].handler(args, ctx)
    except (UserError, ConfigError, InstallError) as exc:
        print(f"browy: error: {exc}", file=ctx.stderr)
        return 2
    except PermissionError as exc:
        hint = " (a --system install needs root)" if getattr(args, "system", False) else ""
        print(f"browy: error: permission denied: {exc.filename or exc}{hint}", file=ctx.stderr)
        return 2
    except OSError as exc:  # the filesystem said no: not a bug to show as a traceback
        where = f": {exc.filename}" if exc.filename else ""
        print(f"browy: error: {exc.strerror or exc}{where}", file=ctx.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # python -m nativehost.cli.main, as the browy script does
    sys.exit(main())
