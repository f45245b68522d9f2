"""``browy`` subcommands that run the agent: demo, run, chat / repl, sessions, and the harnesses
model-server and chaos.

asyncio is inside: :mod:`nativehost.demo.demo`, :mod:`nativehost.cli.terminal` and the rest are
imported by the handlers, so ``browy --help`` stays fast. ``model-server`` and ``chaos`` pass their
arguments on to :func:`nativehost.demo.model_server.main` and :func:`nativehost.chaos.harness.main`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO, cast

from nativehost.cli.context import Context, UserError, seconds

__all__ = [
    "configure_browser_choice",
    "configure_demo",
    "configure_run",
    "configure_sessions",
    "handle_chaos",
    "handle_chat",
    "handle_demo",
    "handle_model_server",
    "handle_run",
    "handle_sessions",
]


# --------------------------------------------------------------------------------------------
# demo, run, chat, sessions (asyncio inside; the modules are imported by the handlers)


def configure_demo(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--timeout", type=seconds, default=120.0, metavar="SECONDS", help="per turn")


def handle_demo(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.cli.progress import is_live
    from nativehost.cli.stopping import run_stoppable
    from nativehost.demo.demo import DemoOptions, run_demo

    opts = DemoOptions(
        out_dir=args.out,
        real_model=args.real_model,
        keep_open=args.keep_open,
        headless=args.headless,
        turn_timeout=args.timeout,
        panel=not args.no_panel,
        color=ctx.color,
        live=is_live(ctx.stdout, ctx.env),
    )

    async def demo() -> int:
        return (await run_demo(opts, env=ctx.env, out=ctx.stdout)).exit_code

    return run_stoppable(demo)


def configure_browser_choice(p: argparse.ArgumentParser) -> None:
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


def configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="TASK", help="what to do, in plain words")
    p.add_argument("--url", help="start at this page")
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="give up after this long: the turn is cancelled and the run fails (exit 1)",
    )
    p.add_argument(
        "--no-browser",
        action="store_true",
        help="run without a browser: only the tools that need no tab (files, notes, skills, …)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="stdout: the turn's messages as JSON lines, then one result object (notes and "
        "prompts on stderr)",
    )
    configure_browser_choice(p)


def handle_run(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.cli.stopping import run_stoppable
    from nativehost.cli.terminal import run_task
    from nativehost.demo.launch import LaunchError
    from nativehost.link import DaemonUnavailable

    try:
        return run_stoppable(
            lambda: run_task(
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
                no_browser=args.no_browser,
                as_json=args.json,
                notes=ctx.stderr if args.json else None,
            )
        )
    except (LaunchError, DaemonUnavailable, TimeoutError) as exc:
        message = str(exc) or type(exc).__name__
        if args.json:  # scripts get their last line whatever happened
            from nativehost.cli.json_view import json_line, result_object

            obj = result_object(None, exit_code=2, session_id=args.session or "", error=message)
            json_line(ctx.stdout, obj)
        raise UserError(message) from None


def handle_chat(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.cli.stopping import run_stoppable
    from nativehost.cli.terminal import chat_loop
    from nativehost.demo.launch import LaunchError
    from nativehost.link import DaemonUnavailable

    try:
        return run_stoppable(
            lambda: chat_loop(
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


def configure_sessions(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="sessions_action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the terminal's stored chats, newest first")
    ls.add_argument("--json", action="store_true", help="print them as a JSON array")
    show = sub.add_parser("show", help="print one chat")
    show.add_argument("id", metavar="ID")
    show.add_argument(
        "--json", action="store_true", help="print its rows as a JSON array ([] and exit 1: none)"
    )
    delete = sub.add_parser("delete", help="delete one chat")
    delete.add_argument("id", metavar="ID")


def handle_sessions(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from nativehost.cli.terminal import sessions_command
    from nativehost.link import DaemonUnavailable

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


def handle_model_server(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.demo.model_server import main as model_server_main

    try:
        return model_server_main(args.args, out=cast(TextIO, ctx.stdout))
    except SystemExit as exc:  # its own argparse: --help, or bad arguments (2)
        return exc.code if isinstance(exc.code, int) else 0


def handle_chaos(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.chaos.harness import main as chaos_main

    try:
        return chaos_main(
            args.args, out=cast(TextIO, ctx.stdout), err=cast(TextIO, ctx.stderr), env=ctx.env
        )
    except SystemExit as exc:  # its own argparse: --help, or bad arguments (2)
        return exc.code if isinstance(exc.code, int) else 0
