"""``browy demo``: the whole product on one machine in well under a minute, no key needed.

What it sets up, all private to the run and removed at the end:

- a ``BROWY_HOME`` in a temporary directory (under ``$XDG_CACHE_HOME/browy`` when that is set)
  whose ``config.toml`` says ``[daemon] allow_local_clients = true`` (this terminal may drive the
  browser) and ``[tools] approval_mode = "never"`` (nothing waits for a click)
  (:mod:`nativehost.demo.demo_home`);
- a small shop on ``127.0.0.1`` (``nativehost/demo/demo_site``: search, product pages, a cart, a
  checkout form whose card form is a payment provider's page from another site — the same server
  as ``localhost`` — in a cross-origin frame);
- the scripted model server (:mod:`nativehost.demo.model_server`) playing the model, unless a real
  model is configured (``BROWY_MODEL`` / ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` or the user's
  ``config.toml``) or ``--real-model`` is given;
- the system Chromium with the extension and a private profile with the native host registered
  (:mod:`nativehost.demo.launch`); the extension connects to the relay, which starts the daemon.

Then a ``cli`` link runs the task (:mod:`nativehost.demo.demo_script`) as one agent turn —
navigate, inspect, search, open a product, add it to the cart, fill the checkout form and the
card in the frame, place the order — streamed in the terminal; the final page and the side panel
(opened as a tab, asked a follow-up question) are saved as PNGs in a folder it prints. Exit code 0
when the turn succeeded (and, scripted, the order page was reached), 1 otherwise, 2 when the
machine cannot run it (no Chromium).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from aiohttp import web

from nativehost.cli.progress import Steps
from nativehost.cli.stopping import finish_in_thread, shielded
from nativehost.cli.terminal_client import TerminalClient, TurnAborted
from nativehost.cli.terminal_view import TurnResult
from nativehost.daemon.instance import is_running
from nativehost.daemon.process import stop_daemon
from nativehost.demo.demo_home import (
    MODEL_ENV,
    model_is_configured,
    model_label,
    new_demo_home,
    real_model_section,
    scripted_model_section,
    write_demo_config,
)
from nativehost.demo.demo_script import PANEL_QUESTION, demo_script, demo_task
from nativehost.demo.launch import (
    Browser,
    LaunchError,
    capture_screenshot,
    extension_page_url,
    launch_browser,
    list_targets,
    new_tab,
    target_session,
)
from nativehost.demo.model_server import ScriptedModelServer
from nativehost.link import query_daemon

__all__ = ["DEMO_SITE", "DemoOptions", "DemoOutcome", "run_demo", "wait_for_browser_link"]

DEMO_SITE = Path(__file__).resolve().parent / "demo_site"


@dataclass(slots=True)
class DemoOptions:
    out_dir: Path | None = None
    real_model: bool | None = None  # None: real when configured
    keep_open: bool = False
    headless: bool | None = None
    turn_timeout: float = 120.0
    panel: bool = True
    color: bool = False
    live: bool = False  # set-up steps completed in place (a terminal)


@dataclass(slots=True)
class DemoOutcome:
    exit_code: int
    out_dir: Path
    turn: TurnResult | None = None
    final_url: str = ""
    final_title: str = ""
    order_confirmed: bool = False
    screenshots: list[Path] = field(default_factory=list)
    model_requests: list[dict[str, Any]] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Pieces


async def _serve_site(directory: Path) -> tuple[web.AppRunner, str]:
    app = web.Application()

    async def index(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(directory / "index.html")

    app.router.add_get("/", index)
    app.router.add_static("/", directory)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = int(runner.addresses[0][1])
    return runner, f"http://127.0.0.1:{port}"


async def wait_for_browser_link(home: Path, *, timeout: float = 30.0) -> None:
    """Until the daemon of *home* runs and has at least one browser connection."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        if await asyncio.to_thread(is_running, home):
            try:
                status = await query_daemon(home, "status", timeout=2.0)
                if int(status.get("links") or 0) > 0:
                    return
                last = status
            except Exception as exc:  # still starting
                last = exc
        await asyncio.sleep(0.1)  # polling another process with a deadline
    raise TimeoutError(f"the browser did not connect to the daemon within {timeout:.0f} s ({last})")


async def _page_target(http_base: str, prefix: str) -> dict[str, Any] | None:
    for t in await list_targets(http_base):
        if t.get("type") == "page" and str(t.get("url", "")).startswith(prefix):
            return t
    return None


async def _wait_js(ws_url: str, expression: str, *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    async with target_session(ws_url) as target:
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError, TimeoutError):
                last = await target.evaluate(expression, timeout=5.0)
                if last:
                    return last
            await asyncio.sleep(0.1)  # polling the page with a deadline
    raise TimeoutError(f"timed out waiting for {what} (last: {last!r})")


async def _panel_follow_up(browser: Browser, out_dir: Path, *, timeout: float) -> Path:
    """Open the side panel page in a tab, ask it a question, screenshot it at panel size."""
    target = await new_tab(browser.http_base, extension_page_url("sidepanel.html"))
    ws = str(target["webSocketDebuggerUrl"])
    await _wait_js(
        ws,
        "!!document.querySelector('textarea') && "
        "document.querySelectorAll('select.model option').length > 0",
        timeout=15.0,
        what="the side panel to be ready",
    )
    send = (
        "(() => { const t = document.querySelector('textarea'); t.focus();"
        f" t.value = {PANEL_QUESTION!r};"
        " t.dispatchEvent(new Event('input', {bubbles: true}));"
        " t.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));"
        " return true; })()"
    )
    async with target_session(ws) as page:
        await page.evaluate(send)
    await _wait_js(
        ws,
        "(() => { const m = document.querySelector('main.log');"
        " return !!m && m.innerText.includes('order confirmation')"
        " && !document.querySelector('.busy, [aria-busy=\"true\"]'); })()",
        timeout=timeout,
        what="the side panel's answer",
    )
    return await capture_screenshot(ws, out_dir / "side-panel.png", size=(420, 640))


# --------------------------------------------------------------------------------------------
# The demo


async def run_demo(
    opts: DemoOptions,
    *,
    env: Mapping[str, str] | None = None,
    out: IO[str] | None = None,
    script: dict[str, Any] | None = None,
) -> DemoOutcome:
    """Run the demo; everything it started is stopped before it returns."""
    env = dict(os.environ if env is None else env)
    out = out or sys.stdout

    def say(text: str = "") -> None:
        # After a SIGHUP the terminal may be gone: what is left to do is stopping things.
        with contextlib.suppress(OSError, ValueError):
            out.write(text + "\n")
            out.flush()

    real = model_is_configured(env) if opts.real_model is None else opts.real_model
    out_dir = opts.out_dir or Path(tempfile.mkdtemp(prefix="browy-demo-output-"))
    out_dir = out_dir.absolute()
    out_dir.mkdir(parents=True, exist_ok=True)
    outcome = DemoOutcome(exit_code=1, out_dir=out_dir)

    home = new_demo_home(env)
    runner: web.AppRunner | None = None
    model: ScriptedModelServer | None = None
    browser: Browser | None = None
    client: TerminalClient | None = None
    steps = Steps(out, total=5, live=opts.live)
    try:
        say(f"BROWY_HOME: {home}")
        with steps.step("serving the demo shop") as step:
            runner, site_url = await _serve_site(DEMO_SITE)
            step.done(f"{site_url}/")
        browser_env = dict(env)
        with steps.step("setting up the model") as step:
            if real:
                write_demo_config(home, real_model_section(env))
                step.done(f"your configured model ({model_label(env)})")
            else:
                # The scripted server must win: the environment would override config.toml.
                for var in MODEL_ENV:
                    browser_env.pop(var, None)
                model = ScriptedModelServer(script or demo_script(site_url))
                base_url = await model.start()
                write_demo_config(home, scripted_model_section(base_url))
                step.done(f"the scripted model server at {base_url} (no key needed)")
        with steps.step("launching Chromium with the extension") as step:
            browser = await finish_in_thread(
                lambda: launch_browser(
                    home,
                    headless=opts.headless,
                    env=browser_env,
                    log_path=home / "chromium.log",
                ),
                on_abandon=Browser.close,
            )
            step.done(f"pid {browser.proc.pid}, DevTools {browser.http_base}")
        with steps.step("waiting for the extension to start the daemon"):
            await wait_for_browser_link(home, timeout=30.0)
        with steps.step("connecting this terminal to the daemon"):
            client = await TerminalClient.connect(home, out, color=opts.color)
        if not client.can_drive_browser:
            say("error: the daemon did not let this terminal drive the browser")
            return outcome
        task = demo_task(site_url)
        say()
        say(f"task: {task}")
        say()
        with client.sigint_cancels_turns():
            turn = await client.run_turn(task, timeout=opts.turn_timeout)
        outcome.turn = turn
        say()

        page = await _page_target(browser.http_base, site_url)
        if page is not None:
            outcome.final_url = str(page.get("url", ""))
            ws = str(page["webSocketDebuggerUrl"])
            async with target_session(ws) as target:
                state = await target.evaluate(
                    "[document.title, !!document.getElementById('done')"
                    " && !document.getElementById('done').hidden]"
                )
            outcome.final_title = str(state[0])
            outcome.order_confirmed = bool(state[1])
            outcome.screenshots.append(await capture_screenshot(ws, out_dir / "final-page.png"))
        say(f"final page: {outcome.final_title} ({outcome.final_url})")
        if opts.panel and turn.ok:
            try:
                outcome.screenshots.append(
                    await _panel_follow_up(browser, out_dir, timeout=opts.turn_timeout)
                )
            except (TimeoutError, RuntimeError, OSError) as exc:
                say(f"side panel screenshot skipped: {exc}")
        all_ok = all(t.outcome == "ok" for t in turn.tools)
        ok = turn.ok and not turn.cancelled and (real or (outcome.order_confirmed and all_ok))
        outcome.exit_code = 0 if ok else 1
        say("screenshots: " + (str(out_dir) if outcome.screenshots else "none"))
        for shot in outcome.screenshots:
            say(f"  {shot.name}")
        say("demo " + ("succeeded" if ok else "FAILED"))
        if opts.keep_open:
            say("--keep-open: the browser stays up; Ctrl-C (or SIGTERM, SIGHUP) stops everything")
            # The expected way out: the signal's cancellation ends the wait, not the demo.
            with contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
                await asyncio.Event().wait()
        return outcome
    except TurnAborted:
        outcome.exit_code = 130
        return outcome
    except LaunchError as exc:
        say(f"error: {exc}")
        outcome.exit_code = 2
        return outcome
    except (TimeoutError, ConnectionError) as exc:
        say(f"error: {exc}")
        if browser is not None and browser.log_path is not None:
            say(f"(the browser's log: {browser.log_path}; the host's: {home / 'logs'})")
        return outcome
    finally:

        async def stop_everything() -> None:
            if client is not None:
                await client.close()
            if browser is not None:
                await asyncio.to_thread(browser.close)  # its process group: the relay too
            with contextlib.suppress(Exception):
                await asyncio.to_thread(stop_daemon, home, timeout=10.0)
            if model is not None:
                outcome.model_requests = list(model.requests)
                await model.stop()
            if runner is not None:
                await runner.cleanup()

        # Finished even if another signal comes meanwhile (stopping.run_stoppable).
        await shielded(stop_everything())
        if outcome.exit_code == 0:
            shutil.rmtree(home, ignore_errors=True)
        else:
            say(f"(kept {home} for its logs)")
