"""``browy mcp``: serve the user's browser to an MCP client; ``browy mcp config``: set one up.

- ``browy mcp`` speaks MCP on stdin/stdout (what a client starts); ``--http PORT`` serves
  Streamable HTTP on 127.0.0.1 with a bearer token instead (:mod:`nativehost.mcp.http_app`).
- ``--tool-names playwright`` also answers to Playwright MCP's tool names.
- ``browy mcp config --client claude-code|codex|cursor|vscode [--write]`` prints (or merges into
  the client's file) the entry that starts ``browy mcp``.

The ``mcp`` SDK is imported only here, when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from nativehost.cli.context import Context, UserError

__all__ = ["configure_mcp", "handle_mcp"]


def configure_mcp(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve Streamable HTTP on 127.0.0.1:PORT (a bearer token is required) "
        "instead of stdio",
    )
    p.add_argument(
        "--tool-names",
        choices=["browy", "playwright"],
        default="browy",
        help="playwright: also answer to Playwright MCP's tool names (browser_navigate, …)",
    )
    p.add_argument(
        "--browser",
        choices=["chrome", "chromium", "edge", "brave", "vivaldi"],
        help="drive this browser (as `browy daemon status` lists the connected ones); default: "
        "the most recently active",
    )
    sub = p.add_subparsers(dest="mcp_action", metavar="ACTION")
    config = sub.add_parser("config", help="print or write an MCP client's configuration")
    config.add_argument(
        "--client", required=True, choices=["claude-code", "codex", "cursor", "vscode"]
    )
    config.add_argument(
        "--write", action="store_true", help="merge the entry into the client's file"
    )


def handle_mcp(args: argparse.Namespace, ctx: Context) -> int:
    if args.mcp_action == "config":
        return _config(args, ctx)
    return _serve(args, ctx)


def _config(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.home import browy_home
    from nativehost.mcp.client_config import browy_command, snippet, write_entry

    home = ctx.home
    named_home = None if home == browy_home({}) else home
    command = browy_command()
    if not args.write:
        ctx.out(snippet(args.client, command=command, home=named_home).rstrip())
        return 0
    user_home = Path(ctx.env.get("HOME") or Path.home())
    try:
        path = write_entry(
            args.client, command=command, home=named_home, cwd=Path.cwd(), user_home=user_home
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    ctx.out(f"wrote the browy server into {path}")
    return 0


def _serve(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.daemon.process import start_daemon
    from nativehost.mcp.server import BrowyMcp
    from nativehost.version import VERSION

    home = ctx.home
    # stdout is the MCP channel: everything else goes to stderr.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="browy mcp: %(message)s")
    mcp = BrowyMcp(
        home,
        version=VERSION,
        naming=args.tool_names,
        start_daemon=lambda h: start_daemon(h, timeout=15.0),
        browser=args.browser,
    )
    if args.http is None:
        asyncio.run(mcp.run_stdio())
        return 0
    from nativehost.mcp.http_app import load_or_make_token, serve_http, token_path

    if not 0 < args.http < 65536:
        raise UserError(f"--http {args.http}: not a TCP port")
    token, made = load_or_make_token(home)
    if made:
        ctx.out(f"bearer token (stored in {token_path(home)}, shown once): {token}")
    else:
        ctx.out(f"bearer token: in {token_path(home)}")
    ctx.out(f"serving MCP on http://127.0.0.1:{args.http}/mcp")
    ctx.stdout.flush()
    asyncio.run(serve_http(mcp, port=args.http, token=token))
    return 0
