"""The ``browy`` command.

Subcommands are rows of :data:`COMMANDS`: a name, a help line, a function that adds the
subcommand's arguments, and a handler ``(args, ctx) -> exit code``. Adding a command is one
more row; heavy modules are imported inside handlers so ``browy --help`` stays fast.

``demo``, ``run``, ``chat``/``repl`` and ``sessions`` live in :mod:`nativehost.demo` and
:mod:`nativehost.terminal`; ``model-server`` and ``chaos`` pass their arguments on to
:func:`nativehost.model_server.main` and ``nativehost.chaos.main``.

Exit codes: 0 success; 1 a check or operation failed (``doctor`` found a problem); 2 the user's
input or environment is wrong (bad arguments, invalid config, no browser found, permission
denied) — reported as one ``browy: error: ...`` message, never a traceback; 3 ``daemon status``
when it is not running.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NoReturn, TextIO, cast

from nativehost.home import browy_home, log_dir
from nativehost.platforms import Platform, UnsupportedPlatform

__all__ = ["COMMANDS", "Command", "Context", "UserError", "build_parser", "main"]


class UserError(Exception):
    """Something the user must fix; printed as ``browy: error: <message>``, exit code 2."""


@dataclass(slots=True)
class Context:
    """What every handler needs; injectable so tests run against a temporary HOME and root."""

    env: Mapping[str, str]
    stdout: IO[str]
    stderr: IO[str]
    _platform: Platform | None = field(default=None)

    @property
    def home(self) -> Path:
        return browy_home(dict(self.env))

    @property
    def platform(self) -> Platform:
        if self._platform is None:
            try:
                self._platform = Platform.current(self.env)
            except UnsupportedPlatform as exc:
                raise UserError(str(exc)) from None
        return self._platform

    def out(self, text: str = "") -> None:
        print(text, file=self.stdout)


Handler = Callable[[argparse.Namespace, Context], int]


@dataclass(frozen=True, slots=True)
class Command:
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    handler: Handler
    # Every argument after the name (``--help`` included) goes to the handler as ``args.args``.
    passthrough: bool = False


# --------------------------------------------------------------------------------------------
# install-host / uninstall-host


def _configure_install(p: argparse.ArgumentParser) -> None:
    from nativehost.platforms import BROWSERS

    p.add_argument(
        "--browser",
        action="append",
        choices=BROWSERS,
        help="install for this browser (repeatable; default: every browser found)",
    )
    p.add_argument(
        "--extension-id",
        action="append",
        metavar="ID",
        help="also allow this extension id (repeatable; replaces the list in config.toml)",
    )
    p.add_argument(
        "--compat-browy",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also serve the published Browy extensions",
    )
    p.add_argument("--system", action="store_true", help="install for all users (needs root)")
    p.add_argument(
        "--target-dir",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="also write the manifest into DIR (e.g. $PROFILE/NativeMessagingHosts)",
    )
    p.add_argument("--launcher-dir", type=Path, help="where to write the launcher script")


def _install(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.install import install_host

    report = install_host(
        ctx.platform,
        home=ctx.home,
        browsers=args.browser,
        extension_ids=args.extension_id,
        compat_browy=args.compat_browy,
        system=args.system,
        target_dirs=args.target_dir,
        launcher_dir=args.launcher_dir,
    )
    for line in report.lines():
        ctx.out(line)
    ctx.out("Restart the browser (or reload the extension) to pick up the host.")
    return 0


def _uninstall(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.install import uninstall_host

    for line in uninstall_host(ctx.platform, home=ctx.home).lines():
        ctx.out(line)
    return 0


# --------------------------------------------------------------------------------------------
# doctor


def _configure_doctor(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the checks as JSON")


def _doctor(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.doctor import exit_code, format_checks, run_checks

    checks = run_checks(ctx.platform, ctx.home, env=ctx.env)
    if args.json:
        ctx.out(json.dumps([c.to_json() for c in checks], indent=2))
    else:
        ctx.out(format_checks(checks))
    return exit_code(checks)


# --------------------------------------------------------------------------------------------
# config


def _configure_config(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="config_action", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="print the effective settings (secrets hidden)")
    show.add_argument("--json", action="store_true")
    set_ = sub.add_parser("set", help="set SECTION.KEY to VALUE in config.toml")
    set_.add_argument("key", metavar="KEY", help="e.g. model.model")
    set_.add_argument("value", metavar="VALUE", help='lists: a,b or ["a", "b"]')
    unset = sub.add_parser("unset", help="remove SECTION.KEY from config.toml")
    unset.add_argument("key", metavar="KEY")
    sub.add_parser("path", help="print the path of config.toml")


def _config(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.config import (
        config_path,
        dumps_toml,
        load_config,
        redacted_dict,
        set_config_value,
    )

    home = ctx.home
    if args.config_action == "path":
        ctx.out(str(config_path(home)))
    elif args.config_action == "show":
        data = redacted_dict(load_config(home, env=ctx.env))
        if args.json:
            ctx.out(json.dumps(data, indent=2))
        else:
            ctx.out(f"# {config_path(home)} (with environment overrides applied)")
            ctx.out(dumps_toml(data).rstrip("\n"))
    elif args.config_action == "set":
        set_config_value(home, args.key, args.value)
        shown = "***" if args.key.endswith("api_key") else args.value
        ctx.out(f"{args.key} = {shown}  ({config_path(home)})")
    else:
        set_config_value(home, args.key, None)
        ctx.out(f"{args.key} removed ({config_path(home)})")
    return 0


# --------------------------------------------------------------------------------------------
# extension-path, logs


def _extension_path(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.launch import extension_dir

    path = extension_dir()
    if not (path / "manifest.json").is_file():
        raise UserError(
            f"no extension at {path}: reinstall browy-host (the extension ships inside it)"
        )
    ctx.out(str(path))
    return 0


def _configure_logs(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")


def follow_file(
    path: Path,
    out: IO[str],
    *,
    stop: Callable[[], bool],
    poll_s: float = 0.25,
    from_start: bool = False,
) -> None:
    """Print what is appended to *path* (from its start if *from_start*, else from its current
    end), reopening it when the log rotates, until *stop()* is true."""
    f = path.open("r", encoding="utf-8", errors="replace")
    try:
        if not from_start:
            f.seek(0, os.SEEK_END)
        inode = os.fstat(f.fileno()).st_ino
        while not stop():
            chunk = f.read()
            if chunk:
                out.write(chunk)
                out.flush()
                continue
            try:
                rotated = path.stat().st_ino != inode
            except FileNotFoundError:
                rotated = False
            if rotated:
                f.close()
                f = path.open("r", encoding="utf-8", errors="replace")
                inode = os.fstat(f.fileno()).st_ino
                continue
            time.sleep(poll_s)  # a file has no readiness event to wait on
    finally:
        f.close()


def _logs(args: argparse.Namespace, ctx: Context) -> int:
    path = log_dir(ctx.home) / "host.log"
    if not path.is_file():
        raise UserError(f"no log yet at {path}")
    ctx.stdout.write(path.read_text(encoding="utf-8", errors="replace"))
    if args.follow:
        with contextlib.suppress(KeyboardInterrupt):
            follow_file(path, ctx.stdout, stop=lambda: False)
    return 0


# --------------------------------------------------------------------------------------------
# daemon (nativehost.daemon is imported only here: the module is optional for the rest)


def _configure_daemon(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="daemon_action", metavar="ACTION", required=True)
    sub.add_parser("start", help="start the daemon in the background")
    sub.add_parser("stop", help="stop the daemon")
    sub.add_parser("status", help="is it running? (exit code 3 if not)")
    run = sub.add_parser("run", help="run the daemon in the foreground")
    run.add_argument("--idle-exit", type=float, metavar="SECONDS", help="exit after idling")


def _daemon(args: argparse.Namespace, ctx: Context) -> int:
    try:
        # import_module, not an import statement: the module is written separately and may be
        # missing; its functions are then untyped here, which is fine for four calls.
        daemon = importlib.import_module("nativehost.daemon")
    except ImportError as exc:
        raise UserError(f"daemon module unavailable ({exc})") from None
    home = ctx.home
    action = args.daemon_action
    if action == "start":
        daemon.start_daemon(home)
        ctx.out(f"daemon started ({home})")
        return 0
    if action == "stop":
        ctx.out("daemon stopped" if daemon.stop_daemon(home) else "daemon was not running")
        return 0
    if action == "status":
        status = daemon.daemon_status(home)
        ctx.out(str(status))
        return 3 if getattr(status, "running", True) is False else 0
    if args.idle_exit is not None:
        return int(daemon.run_daemon(home, idle_exit_s=args.idle_exit))
    return int(daemon.run_daemon(home))


# --------------------------------------------------------------------------------------------
# demo, run, chat, sessions (asyncio inside; the modules are imported by the handlers)


def _configure_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, metavar="DIR", help="where to save the screenshots")
    model = p.add_mutually_exclusive_group()
    model.add_argument(
        "--real-model",
        dest="real_model",
        action="store_true",
        default=None,
        help="let your configured model solve the task (default when one is configured)",
    )
    model.add_argument(
        "--scripted",
        dest="real_model",
        action="store_false",
        help="use the built-in scripted model even if a real one is configured",
    )
    p.add_argument(
        "--headless",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run Chromium without a window (default: when there is no display)",
    )
    p.add_argument("--keep-open", action="store_true", help="leave everything up until Ctrl-C")
    p.add_argument(
        "--no-panel", action="store_true", help="skip the side panel follow-up and screenshot"
    )
    p.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS", help="per turn")


def _demo(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from nativehost.demo import DemoOptions, run_demo

    opts = DemoOptions(
        out_dir=args.out,
        real_model=args.real_model,
        keep_open=args.keep_open,
        headless=args.headless,
        turn_timeout=args.timeout,
        panel=not args.no_panel,
        color=ctx.stdout.isatty(),
    )
    return asyncio.run(run_demo(opts, env=ctx.env, out=ctx.stdout)).exit_code


def _browser_choice(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--launch",
        action="store_true",
        help="always launch a private Chromium, even if your browser is connected",
    )
    p.add_argument("--session", metavar="ID", help="continue this chat session (cli-...)")
    p.add_argument("-y", "--yes", action="store_true", help="approve every guarded action")
    p.add_argument(
        "--headless",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a launched Chromium has no window (default: when there is no display)",
    )


def _configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="TASK", help="what to do, in plain words")
    p.add_argument("--url", help="start at this page")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after this long")
    _browser_choice(p)


def _run(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from nativehost.launch import LaunchError
    from nativehost.link import DaemonUnavailable
    from nativehost.terminal import run_task

    try:
        return asyncio.run(
            run_task(
                args.task,
                user_home=ctx.home,
                env=dict(ctx.env),
                out=ctx.stdout,
                url=args.url,
                launch=args.launch,
                auto_yes=args.yes,
                session_id=args.session,
                headless=args.headless,
                timeout=args.timeout,
            )
        )
    except (LaunchError, DaemonUnavailable, TimeoutError) as exc:
        raise UserError(str(exc)) from None


def _chat(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from nativehost.launch import LaunchError
    from nativehost.link import DaemonUnavailable
    from nativehost.terminal import chat_loop

    try:
        return asyncio.run(
            chat_loop(
                user_home=ctx.home,
                env=dict(ctx.env),
                out=ctx.stdout,
                launch=args.launch,
                auto_yes=args.yes,
                session_id=args.session,
                headless=args.headless,
            )
        )
    except (LaunchError, DaemonUnavailable, TimeoutError) as exc:
        raise UserError(str(exc)) from None


def _configure_sessions(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="sessions_action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the terminal's stored chats, newest first")
    ls.add_argument("--json", action="store_true")
    show = sub.add_parser("show", help="print one chat")
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true")
    delete = sub.add_parser("delete", help="delete one chat")
    delete.add_argument("id", metavar="ID")


def _sessions(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from nativehost.link import DaemonUnavailable
    from nativehost.terminal import sessions_command

    try:
        return asyncio.run(
            sessions_command(
                ctx.home,
                args.sessions_action,
                getattr(args, "id", None),
                ctx.stdout,
                as_json=getattr(args, "json", False),
            )
        )
    except (DaemonUnavailable, TimeoutError) as exc:
        raise UserError(str(exc)) from None


def _model_server(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.model_server import main as model_server_main

    try:
        return model_server_main(args.args, out=cast(TextIO, ctx.stdout))
    except SystemExit as exc:  # its own argparse: --help, or bad arguments (2)
        return exc.code if isinstance(exc.code, int) else 0


def _chaos(args: argparse.Namespace, ctx: Context) -> int:
    try:
        chaos = importlib.import_module("nativehost.chaos")
    except ImportError as exc:
        raise UserError(f"the chaos harness is not available in this build ({exc})") from None
    entry = getattr(chaos, "main", None)
    if entry is None:
        raise UserError("nativehost.chaos has no main(argv): the chaos harness is unfinished")
    try:
        return int(entry(args.args))
    except SystemExit as exc:  # its own argparse: --help, or bad arguments (2)
        return exc.code if isinstance(exc.code, int) else 0


# --------------------------------------------------------------------------------------------

COMMANDS: dict[str, Command] = {
    "install-host": Command(
        "register the native host with the browsers", _configure_install, _install
    ),
    "uninstall-host": Command("remove the native host registration", lambda p: None, _uninstall),
    "doctor": Command("check the installation", _configure_doctor, _doctor),
    "config": Command("show or change settings", _configure_config, _config),
    "extension-path": Command(
        "print the extension directory (for Load unpacked)", lambda p: None, _extension_path
    ),
    "logs": Command("print the host log", _configure_logs, _logs),
    "daemon": Command("start, stop or query the daemon", _configure_daemon, _daemon),
    "demo": Command(
        "run the offline demo: Chromium, the extension, a local shop, one agent turn",
        _configure_demo,
        _demo,
    ),
    "run": Command("run one task in the browser from the terminal", _configure_run, _run),
    "chat": Command("chat with the agent in the terminal", _browser_choice, _chat),
    "repl": Command("the same as chat", _browser_choice, _chat),
    "sessions": Command(
        "list, show or delete the terminal's chats", _configure_sessions, _sessions
    ),
    "model-server": Command(
        "serve the scripted OpenAI-compatible model (no key needed)",
        lambda p: None,
        _model_server,
        passthrough=True,
    ),
    "chaos": Command("the fault-injection harness", lambda p: None, _chaos, passthrough=True),
}


class _Parser(argparse.ArgumentParser):
    """argparse, but errors raise instead of exiting, so main() decides the exit code."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(self.format_usage() + f"{self.prog}: error: {message}")


class _UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="browy", description="Browy: a browser agent in your own browser.")
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
    from nativehost.config import ConfigError
    from nativehost.install import InstallError

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
