"""The ``browy`` command.

Subcommands are rows of :data:`COMMANDS`: a name, a help line, a function that adds the
subcommand's arguments, and a handler ``(args, ctx) -> exit code``. Adding ``run``, ``chat``,
``demo``, ``model-server`` or ``sessions`` later is one more row; heavy modules are imported inside
handlers so ``browy --help`` stays fast.

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
from typing import IO, NoReturn

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


def extension_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "extension"


def _extension_path(args: argparse.Namespace, ctx: Context) -> int:
    path = extension_dir()
    if not path.is_dir():
        raise UserError(
            f"no extension directory at {path}: this command works from a source checkout"
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
    # Later: "run", "chat", "demo", "model-server", "sessions".
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
        cmd.configure(sub.add_parser(name, help=cmd.help, description=cmd.help))
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
        args = parser.parse_args(argv)
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
