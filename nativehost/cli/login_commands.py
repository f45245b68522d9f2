"""``browy login copilot``: sign in to GitHub Copilot with the Copilot CLI's device flow.

Runs ``copilot login --device-code`` (the CLI found as the daemon finds it), shows the URL and the
one-time code, waits for the user to enter it in a browser, then asks the CLI whether it worked.
The token stays with the CLI (the system's credential store, or ``~/.copilot``); Browy never sees
it. A running daemon reads the new sign-in the next time it starts its CLI: after a failed
check, or when the panel's Sign in is pressed.
"""

from __future__ import annotations

import argparse
import asyncio

from nativehost.cli.context import Context, UserError

__all__ = ["configure_login", "handle_login"]


def configure_login(p: argparse.ArgumentParser) -> None:
    p.add_argument("provider", choices=["copilot"], help="the provider to sign in to")


def handle_login(args: argparse.Namespace, ctx: Context) -> int:
    from actors.model.copilot_cli import INSTALL_HINT, DeviceCode, device_login, find_cli
    from actors.model.copilot_gateway import CopilotGateway
    from actors.model.types import ModelSettings
    from nativehost.config import load_config

    config = load_config(ctx.home, env={})
    configured = config.model.cli_path
    cli = find_cli(str(configured.expanduser()) if configured else None, ctx.env)
    if cli is None:
        raise UserError(f"the GitHub Copilot CLI was not found. {INSTALL_HINT}")

    def show(device: DeviceCode) -> None:
        ctx.out(device.instructions())
        ctx.out("Waiting for you to enter the code (Ctrl-C to give up)…")

    def echo(line: str) -> None:
        if line.strip():
            ctx.out(f"  copilot: {line}")

    async def sign_in() -> str:
        if not await device_login(cli, show, echo=echo):
            return "failed"
        settings = ModelSettings(
            provider="copilot", base_url="", api_key=None, model="", cli_path=cli
        )
        gateway = CopilotGateway(settings)
        try:
            return (await gateway.check_auth()).state
        finally:
            await gateway.aclose()

    state = asyncio.run(sign_in())
    if state != "ready":
        ctx.out("The sign-in did not complete. Run `browy login copilot` again.")
        return 1
    ctx.out("Signed in to GitHub Copilot.")
    if config.model.provider != "copilot":
        ctx.out("To use it: browy config set model.provider copilot")
    return 0
