"""The ``browy`` command.

Subcommands are rows of :data:`COMMANDS`: a name, a help line, a function that adds the
subcommand's arguments, and a handler ``(args, ctx) -> exit code``. Adding a command is one
more row; heavy modules are imported inside handlers so ``browy --help`` stays fast.

The rows' functions live by topic: :mod:`nativehost.cli.setup_commands` (install-host,
uninstall-host, doctor, config, extension-path), :mod:`nativehost.cli.login_commands` (login),
:mod:`nativehost.cli.daemon_commands` (daemon, logs) and :mod:`nativehost.cli.agent_commands`
(demo, run, chat/repl, sessions, model-server, chaos); what they are given and raise
(:class:`Context`, :class:`Command`, :class:`UserError`) is :mod:`nativehost.cli.context`.

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
from typing import IO

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
from nativehost.cli.completion import completion_script, configure_completion
from nativehost.cli.config_commands import CONFIG_EXIT_CODES, configure_config, handle_config
from nativehost.cli.context import (
    BrowyParser,
    Command,
    Context,
    UsageError,
    UserError,
    exit_codes_epilog,
)
from nativehost.cli.daemon_commands import (
    configure_daemon,
    configure_logs,
    handle_daemon,
    handle_logs,
)
from nativehost.cli.login_commands import configure_login, handle_login
from nativehost.cli.mcp_commands import configure_mcp, handle_mcp
from nativehost.cli.setup_commands import (
    configure_doctor,
    configure_install,
    handle_doctor,
    handle_extension_path,
    handle_install,
    handle_uninstall,
)
from nativehost.setup.platforms import Platform

__all__ = ["COMMANDS", "build_parser", "main", "version_line"]


# --------------------------------------------------------------------------------------------


def _handle_completion(args: argparse.Namespace, ctx: Context) -> int:
    ctx.stdout.write(completion_script(args.shell, build_parser()))
    return 0


_SIGNALS = {
    129: "stopped by SIGHUP (everything it started is stopped first)",
    130: "stopped by Ctrl-C / SIGINT (everything it started is stopped first)",
    143: "stopped by SIGTERM (everything it started is stopped first)",
}

COMMANDS: dict[str, Command] = {
    "install-host": Command(
        "register the native host with the browsers", configure_install, handle_install
    ),
    "uninstall-host": Command(
        "remove the native host registration", lambda p: None, handle_uninstall
    ),
    "doctor": Command(
        "check the installation",
        configure_doctor,
        handle_doctor,
        exit_codes={0: "every check passed (warnings allowed)", 1: "a check failed"},
    ),
    "config": Command(
        "show or change settings", configure_config, handle_config, exit_codes=CONFIG_EXIT_CODES
    ),
    "login": Command(
        "sign in to GitHub Copilot (the Copilot CLI's device flow)", configure_login, handle_login
    ),
    "extension-path": Command(
        "print the extension directory (for Load unpacked)", lambda p: None, handle_extension_path
    ),
    "logs": Command(
        "print the daemon's log (--relay: the relays' log)", configure_logs, handle_logs
    ),
    "daemon": Command(
        "start, stop or query the daemon",
        configure_daemon,
        handle_daemon,
        exit_codes={0: "success", 3: "status / tree: the daemon is not running"},
    ),
    "demo": Command(
        "run the offline demo: Chromium, the extension, a local shop, one agent turn",
        configure_demo,
        handle_demo,
        exit_codes={
            0: "the demo succeeded (with --keep-open: also when stopped afterwards)",
            1: "the turn failed",
            **_SIGNALS,
        },
    ),
    "run": Command(
        "run one task in the browser from the terminal",
        configure_run,
        handle_run,
        exit_codes={
            0: "the turn ended with an answer",
            1: "the turn failed or was cancelled",
            **_SIGNALS,
            130: "a second Ctrl-C, or SIGINT outside a turn (everything it started is stopped)",
        },
    ),
    "chat": Command(
        "chat with the agent in the terminal",
        configure_browser_choice,
        handle_chat,
        exit_codes={0: "left with /quit, Ctrl-D or Ctrl-C at the prompt", **_SIGNALS},
    ),
    "repl": Command(
        "the same as chat",
        configure_browser_choice,
        handle_chat,
        exit_codes={0: "left with /quit, Ctrl-D or Ctrl-C at the prompt", **_SIGNALS},
    ),
    "sessions": Command(
        "list, show or delete the terminal's chats",
        configure_sessions,
        handle_sessions,
        exit_codes={0: "success", 1: "show / delete: no such chat"},
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
    "completion": Command(
        "print the shell completion script (bash, zsh or fish)",
        configure_completion,
        _handle_completion,
    ),
}


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


def _nested(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of *parser*'s subcommands (``config set``, ``daemon status``, ...)."""
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += [child, *_nested(child)]
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = BrowyParser(
        prog="browy",
        description="Browy: a browser agent in your own browser.",
        epilog=exit_codes_epilog(
            {0: "success", 1: "a check or an operation failed (see each command's --help)"}
        ),
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=BrowyParser
    )
    for name, cmd in COMMANDS.items():
        epilog = exit_codes_epilog(cmd.exit_codes)
        child = sub.add_parser(
            name,
            help=cmd.help,
            description=cmd.help,
            add_help=not cmd.passthrough,
            epilog=epilog,
        )
        cmd.configure(child)
        for nested in _nested(child):  # `browy daemon status --help` tells them too
            nested.epilog = nested.epilog or epilog
    return parser


def _user_errors() -> tuple[type[Exception], ...]:
    """ConfigError and InstallError (exit code 2, like UserError), each only if its module was
    imported — otherwise none can have been raised — so ``browy --version`` imports no pydantic."""
    errors: list[type[Exception]] = []
    for module, name in (
        ("nativehost.config_schema", "ConfigError"),
        ("nativehost.setup.install", "InstallError"),
    ):
        loaded = sys.modules.get(module)
        if loaded is not None:
            errors.append(getattr(loaded, name))
    return tuple(errors)


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    platform: Platform | None = None,
    stdin: IO[str] | None = None,
) -> int:
    """Run ``browy``; returns the exit code (the console script passes it to ``sys.exit``)."""
    ctx = Context(
        env=os.environ if env is None else env,
        stdout=sys.stdout if stdout is None else stdout,
        stderr=sys.stderr if stderr is None else stderr,
        _platform=platform,
        stdin=sys.stdin if stdin is None else stdin,
    )
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if COMMANDS[args.command].passthrough:
            args.args = extra
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except UsageError as exc:
        print(exc, file=ctx.stderr)
        return 2
    except _ShowVersion:
        ctx.out(version_line())
        return 0
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    try:
        return COMMANDS[args.command].handler(args, ctx)
    except UserError as exc:
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
    except Exception as exc:
        if not isinstance(exc, _user_errors()):
            raise
        print(f"browy: error: {exc}", file=ctx.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # python -m nativehost.cli.main, as the browy script does
    sys.exit(main())
