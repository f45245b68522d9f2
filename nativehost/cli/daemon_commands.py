"""``browy`` subcommands that run or watch the host: daemon start|stop|status|tree|run, and logs.

Rows of :data:`nativehost.cli.main.COMMANDS` (configure function, handler); :func:`follow_file` is
``logs -f``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from nativehost.cli.context import Context, UserError
from nativehost.home import host_log, relay_log

__all__ = [
    "configure_daemon",
    "configure_logs",
    "follow_file",
    "handle_daemon",
    "handle_logs",
]


# --------------------------------------------------------------------------------------------
# logs


def configure_logs(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    p.add_argument(
        "--relay",
        action="store_true",
        help="the relays' log (relay.log: the processes the browser starts) instead of the "
        "daemon's (host.log)",
    )


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
                rest = f.read()  # what a writer still holding the old file added meanwhile
                if rest:
                    out.write(rest)
                    out.flush()
                f.close()
                f = path.open("r", encoding="utf-8", errors="replace")
                inode = os.fstat(f.fileno()).st_ino
                continue
            time.sleep(poll_s)  # a file has no readiness event to wait on
    finally:
        f.close()


def handle_logs(args: argparse.Namespace, ctx: Context) -> int:
    path = relay_log(ctx.home) if args.relay else host_log(ctx.home)
    if not path.is_file():
        raise UserError(f"no log yet at {path}")
    if args.follow:
        # From the start, in one reader: no line falls between printing and following.
        with contextlib.suppress(KeyboardInterrupt):
            follow_file(path, ctx.stdout, stop=lambda: False, from_start=True)
    else:
        ctx.stdout.write(path.read_text(encoding="utf-8", errors="replace"))
    return 0


# --------------------------------------------------------------------------------------------
# daemon


def configure_daemon(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="daemon_action", metavar="ACTION", required=True)
    sub.add_parser("start", help="start the daemon in the background")
    sub.add_parser("stop", help="stop the daemon")
    sub.add_parser(
        "restart",
        help="stop the daemon and start a new one (turns in flight end; nothing is replayed)",
    )
    status = sub.add_parser("status", help="is it running? (exit code 3 if not)")
    status.add_argument(
        "--json",
        action="store_true",
        help="print {running, pid, socket, details: {version, uptime_s, links, ...}}",
    )
    tree = sub.add_parser(
        "tree",
        help="the running daemon's supervision tree: each actor, its state, mailbox, restarts "
        "and uptime (exit code 3 if not running)",
    )
    tree.add_argument("--json", action="store_true", help="print the tree as JSON")
    run = sub.add_parser("run", help="run the daemon in the foreground")
    run.add_argument("--idle-exit", type=float, metavar="SECONDS", help="exit after idling")


def handle_daemon(args: argparse.Namespace, ctx: Context) -> int:
    # Imported here for start-up cost: they import asyncio, which ``browy --help`` does without.
    from nativehost.daemon.instance import daemon_status
    from nativehost.daemon.process import run_daemon, start_daemon, stop_daemon

    home = ctx.home
    action = args.daemon_action
    if action == "start":
        start_daemon(home)
        ctx.out(f"daemon started ({home})")
        return 0
    if action == "stop":
        ctx.out("daemon stopped" if stop_daemon(home) else "daemon was not running")
        return 0
    if action == "restart":
        was = stop_daemon(home)
        start_daemon(home)
        ctx.out(f"daemon {'restarted' if was else 'started'} ({daemon_status(home)})")
        return 0
    if action == "status":
        status = daemon_status(home)
        if args.json:
            import dataclasses
            import json

            ctx.out(json.dumps(dataclasses.asdict(status), indent=2))
        else:
            ctx.out(str(status))
        return 0 if status.running else 3
    if action == "tree":
        return _print_tree(ctx, json_out=args.json)
    if args.idle_exit is not None:
        return run_daemon(home, idle_exit_s=args.idle_exit)
    return run_daemon(home)


def _print_tree(ctx: Context, *, json_out: bool) -> int:
    import json

    from nativehost.cli.tree_view import format_tree
    from nativehost.daemon.instance import daemon_tree

    try:
        tree = daemon_tree(ctx.home)
    except ConnectionError as exc:
        raise UserError(f"the daemon did not answer: {exc}") from None
    if tree is None:
        ctx.out(f"browyd: not running ({ctx.home})")
        return 3
    ctx.out(json.dumps(tree, indent=2) if json_out else format_tree(tree))
    return 0
