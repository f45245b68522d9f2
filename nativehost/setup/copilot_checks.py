"""``browy doctor`` with GitHub Copilot as the model: is the CLI there, is someone signed in.

The CLI is looked up as the daemon does (``[model] cli_path``, ``COPILOT_CLI_PATH``, ``PATH``;
:func:`actors.model.copilot_cli.find_cli`); the sign-in is asked of the CLI itself through the SDK
(``auth.getStatus``), which starts it for a moment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from actors.model.copilot_cli import INSTALL_HINT, find_cli
from actors.model.types import ModelSettings
from nativehost.config_schema import Config
from nativehost.setup.check import Check

__all__ = ["check_copilot"]

#: At most this long for the CLI to start and answer.
CHECK_TIMEOUT_S = 45.0


def check_copilot(config: Config, env: Mapping[str, str]) -> list[Check]:
    model = config.model
    configured = str(model.cli_path.expanduser()) if model.cli_path else None
    what = model.model or "Copilot's default model"
    checks = [Check("model", True, f"GitHub Copilot, {what}")]
    # The daemon inherits the browser's environment: COPILOT_CLI_PATH set only in this shell
    # would not reach it, so the file's setting and PATH are what count.
    cli = find_cli(configured, {"PATH": env.get("PATH", "")})
    if cli is None:
        where = f"not found at {configured}" if configured else "not found on PATH"
        checks.append(
            Check("copilot cli", False, f"the GitHub Copilot CLI is {where}", INSTALL_HINT)
        )
        return checks
    checks.append(Check("copilot cli", True, cli))
    settings = ModelSettings(
        provider="copilot", base_url="", api_key=None, model=model.model or "", cli_path=cli
    )
    checks.append(_sign_in(settings))
    return checks


def _sign_in(settings: ModelSettings) -> Check:
    from actors.model.copilot_gateway import CopilotGateway  # the SDK is large: only here

    async def ask() -> tuple[str, str | None]:
        gateway = CopilotGateway(settings)
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_S):
                state = await gateway.check_auth()
        except TimeoutError:
            return "unknown", f"the CLI did not answer within {CHECK_TIMEOUT_S:g} s"
        finally:
            await gateway.aclose()
        return state.state, state.detail

    state, detail = asyncio.run(ask())
    if state == "ready":
        return Check("copilot sign-in", True, "signed in to GitHub Copilot")
    if state == "unauth":
        return Check("copilot sign-in", False, detail or "not signed in", "browy login copilot")
    return Check("copilot sign-in", True, f"could not tell: {detail}", "browy logs", warning=True)
