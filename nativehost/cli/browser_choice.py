"""Which browser a terminal turn drives: the user's connected one, or a Chromium of our own.

The user's browser is used when its extension is connected to the daemon and ``[daemon]
allow_local_clients = true``; otherwise (or with ``--launch``) :func:`pick_browser` launches a
private Chromium with the extension, its own profile and its own ``BROWY_HOME`` and daemon,
all stopped and removed by :meth:`BrowserTarget.close`.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["BrowserTarget", "connected_browsers", "pick_browser"]


@dataclass(slots=True)
class BrowserTarget:
    """Where the turns run: *home* is the daemon to talk to; *browser* / *private_home* are set
    when we launched a Chromium of our own (stopped and removed by :meth:`close`)."""

    home: Path
    how: str
    browser: Any = None  # nativehost.demo.launch.Browser
    private_home: Path | None = None

    async def close(self) -> None:
        """Stop the Chromium we launched (its whole process group: the relay too), then the
        private daemon, and remove the private home; finishes even if a stop signal comes
        meanwhile."""
        from nativehost.cli.stopping import shielded

        await shielded(self._close())

    async def _close(self) -> None:
        from nativehost.daemon.process import stop_daemon

        if self.browser is not None:
            await asyncio.to_thread(self.browser.close)
        if self.private_home is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(stop_daemon, self.private_home, timeout=10.0)
            import shutil

            shutil.rmtree(self.private_home, ignore_errors=True)


async def connected_browsers(home: Path) -> int:
    """How many browser connections the daemon of *home* has (0 when it is not running)."""
    from nativehost.daemon.instance import is_running
    from nativehost.link import query_daemon

    if not await asyncio.to_thread(is_running, home):
        return 0
    try:
        status = await query_daemon(home, "status", timeout=3.0)
    except Exception:
        return 0
    return int(status.get("links") or 0)


def _private_config(user_home: Path, private_home: Path) -> None:
    """The user's settings, with this terminal allowed to drive the browser it launched."""
    from actors.runtime.private_files import write_private
    from nativehost.config import dumps_toml, read_config_file

    raw = {k: dict(v) for k, v in read_config_file(user_home).items() if isinstance(v, dict)}
    model = raw.setdefault("model", {})
    key_file = model.get("api_key_file")
    if isinstance(key_file, str) and not Path(key_file).expanduser().is_absolute():
        model["api_key_file"] = str(user_home / key_file)
    raw.pop("host", None)  # the installer writes its own
    daemon = raw.setdefault("daemon", {})
    daemon["allow_local_clients"] = True
    daemon["idle_exit_seconds"] = 60
    write_private(private_home / "config.toml", dumps_toml(raw))


async def pick_browser(
    user_home: Path,
    env: dict[str, str],
    out: IO[str],
    *,
    launch: bool = False,
    url: str | None = None,
    headless: bool | None = None,
) -> BrowserTarget:
    """The user's connected browser when there is one and ``[daemon] allow_local_clients`` is
    true (and *launch* is false); otherwise a private Chromium with the extension, its own
    profile and its own ``BROWY_HOME`` (the user's settings, local clients allowed)."""
    from nativehost.config import load_config

    if not launch:
        links = await connected_browsers(user_home)
        if links:
            if load_config(user_home, env=env).daemon.allow_local_clients:
                return BrowserTarget(home=user_home, how=f"your connected browser ({links})")
            out.write(
                "note: a browser is connected, but [daemon] allow_local_clients is false; "
                "launching a private Chromium instead\n"
                "      (to use yours: browy config set daemon.allow_local_clients true, then "
                "restart the daemon)\n"
            )
    import tempfile

    from nativehost.cli.stopping import finish_in_thread
    from nativehost.demo.demo import wait_for_browser_link
    from nativehost.demo.launch import Browser, launch_browser

    private = Path(tempfile.mkdtemp(prefix="browy-run-"))
    target = BrowserTarget(home=private, how="a private Chromium", private_home=private)
    try:
        _private_config(user_home, private)
        target.browser = await finish_in_thread(
            lambda: launch_browser(
                private,
                start_url=url or "about:blank",
                headless=headless,
                env=env,
                log_path=private / "chromium.log",
            ),
            on_abandon=Browser.close,
        )
        await wait_for_browser_link(private, timeout=30.0)
    except BaseException:
        await target.close()
        raise
    return target
