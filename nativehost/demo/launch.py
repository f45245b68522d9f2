"""Launch the system Chromium with the Browy extension and a private profile, the host registered.

Used by ``browy demo`` and by ``browy run`` when no browser of the user's is connected. The
recipe is the one measured in the real-browser guide: the real binary
(``/usr/lib/chromium/chromium``, not Debian's ``/usr/bin/chromium`` wrapper, which adds an empty
``--load-extension=``), headless when there is no display, ``--no-sandbox`` as root, the host
manifest in ``$PROFILE/NativeMessagingHosts`` (a custom ``--user-data-dir`` ignores
``~/.config``), the browser in its own session so its whole process group — the relay Chrome
starts included — is stopped together, and the DevTools port read from
``$PROFILE/DevToolsActivePort``.

The daemon is not a child of the browser (the relay starts it detached): :meth:`Browser.close`
leaves it alone; the caller stops it with :func:`nativehost.daemon.process.stop_daemon`.

Screenshots and extra tabs go through the DevTools HTTP endpoint (``/json/new``, ``/json/list``)
and ``Page.captureScreenshot`` on the target's websocket, with aiohttp (no Playwright at runtime).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from nativehost.origins import OUR_EXTENSION_ID

__all__ = [
    "CHROMIUM_CANDIDATES",
    "Browser",
    "LaunchError",
    "capture_screenshot",
    "extension_dir",
    "find_chromium",
    "launch_browser",
    "list_targets",
    "new_tab",
    "wants_headless",
]

CHROMIUM_CANDIDATES = (
    "/usr/lib/chromium/chromium",
    "/usr/lib/chromium-browser/chromium-browser",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
    "/opt/google/chrome/chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
)

_BASE_ARGS = (
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
    "--window-size=1280,900",
)


class LaunchError(Exception):
    """The browser could not be started; ``str(exc)`` says why and what to do."""


def extension_dir() -> Path:
    """The unpacked extension: the source checkout's ``extension/``, else the copy installed
    inside this package (``nativehost/extension``, shipped as package data)."""
    package = Path(__file__).resolve().parent.parent  # nativehost/
    for candidate in (package.parent / "extension", package / "extension"):
        if (candidate / "manifest.json").is_file():
            return candidate.resolve()
    return package.parent / "extension"


def find_chromium(env: Mapping[str, str] | None = None) -> Path | None:
    """``BROWY_CHROMIUM`` if set, else the first Chromium-family binary found."""
    env = os.environ if env is None else env
    override = env.get("BROWY_CHROMIUM")
    if override:
        return Path(override)
    for candidate in CHROMIUM_CANDIDATES:
        path = Path(candidate)
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def wants_headless(env: Mapping[str, str] | None = None) -> bool:
    """Headless when there is no display to show a window on (Linux without X or Wayland)."""
    env = os.environ if env is None else env
    if sys.platform == "darwin":
        return False
    return not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


@dataclass
class Browser:
    """A Chromium we started. :meth:`close` is idempotent."""

    proc: subprocess.Popen[bytes]
    profile: Path
    port: int
    browser_ws_path: str
    log_path: Path | None = None
    remove_profile: bool = True
    _closed: bool = field(default=False, repr=False)

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, timeout: float = 5.0) -> None:
        """SIGTERM the browser's process group (the relay is in it), SIGKILL if it lingers, then
        delete the profile (retried: helpers may still be writing for a moment)."""
        if self._closed:
            return
        self._closed = True
        pgid = self.proc.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout)
        # The leader may be gone while children (crashpad, renderers, the relay) hold the group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout)
        if self.remove_profile:
            deadline = time.monotonic() + 5.0
            while self.profile.exists():
                try:
                    shutil.rmtree(self.profile)
                except OSError:
                    if time.monotonic() >= deadline:
                        shutil.rmtree(self.profile, ignore_errors=True)
                        break
                    time.sleep(0.1)  # "Directory not empty": a helper was still writing


def register_host(profile: Path, home: Path) -> Path:
    """Register the native host for *profile* only (``$PROFILE/NativeMessagingHosts``), with its
    launcher under *home*; the same as ``browy install-host --target-dir``. Returns the manifest."""
    from nativehost.setup.install import install_host
    from nativehost.setup.platforms import Platform

    report = install_host(
        Platform.current(),
        home=home,
        target_dirs=[profile / "NativeMessagingHosts"],
        launcher_dir=home / "bin",
    )
    return report.manifests[0].path


def launch_browser(
    home: Path,
    *,
    profile: Path | None = None,
    chromium: Path | None = None,
    headless: bool | None = None,
    start_url: str = "about:blank",
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    timeout: float = 30.0,
) -> Browser:
    """Start Chromium with the extension, a private *profile* (default: a new temporary one,
    deleted on close) and the host registered for it under *home* (``BROWY_HOME`` is passed to the
    host through the browser's environment). Returns once the DevTools port is known."""
    binary = chromium or find_chromium(env)
    if binary is None or not binary.is_file():
        raise LaunchError(
            "no Chromium found: install it (Debian: apt-get install chromium) or set BROWY_CHROMIUM"
        )
    ext = extension_dir()
    if not (ext / "manifest.json").is_file():
        raise LaunchError(f"no extension at {ext}: this works from a source checkout")
    remove = profile is None
    if profile is None:
        profile = Path(tempfile.mkdtemp(prefix="browy-profile-"))
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "DevToolsActivePort").unlink(missing_ok=True)
    register_host(profile, home)

    child_env = dict(os.environ if env is None else env)
    child_env["BROWY_HOME"] = str(home)
    # A private browser's daemon lives as long as the run: no standby (nativehost.daemon.standby)
    # that could outlive it and its home.
    child_env.setdefault("BROWY_DAEMON_STANDBY", "0")
    if headless is None:
        headless = wants_headless(child_env)
    args = [str(binary), *_BASE_ARGS]
    if headless:
        args.append("--headless=new")
    if os.name == "posix" and os.geteuid() == 0:
        args.append("--no-sandbox")
    args += [
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        f"--load-extension={ext}",
        f"--disable-extensions-except={ext}",
        *extra_args,
    ]
    if log_path is not None:
        args += ["--enable-logging=stderr", "--v=0"]
    args.append(start_url)
    log = open(log_path, "wb") if log_path else None  # noqa: SIM115 - handed to the child
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log or subprocess.DEVNULL,
            stderr=log or subprocess.DEVNULL,
            env=child_env,
            start_new_session=True,
        )
    finally:
        if log is not None:
            log.close()
    browser = Browser(
        proc=proc,
        profile=profile,
        port=0,
        browser_ws_path="",
        log_path=log_path,
        remove_profile=remove,
    )
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            browser.close()
            where = f" (log: {log_path})" if log_path else ""
            raise LaunchError(f"{binary} exited at once with code {proc.returncode}{where}")
        with contextlib.suppress(OSError):
            lines = port_file.read_text().splitlines()
            if len(lines) >= 2 and lines[0].strip().isdigit():
                browser.port = int(lines[0])
                browser.browser_ws_path = lines[1].strip()
                return browser
        time.sleep(0.02)  # polling a file with a deadline: there is no event to wait on
    browser.close()
    raise LaunchError(f"{binary} did not open its DevTools port within {timeout:.0f} s")


# --------------------------------------------------------------------------------------------
# DevTools HTTP endpoint and target websockets


async def list_targets(http_base: str) -> list[dict[str, Any]]:
    """``GET /json/list``: the browser's targets (pages, workers, extension pages)."""
    async with aiohttp.ClientSession() as http, http.get(f"{http_base}/json/list") as resp:
        resp.raise_for_status()
        data = await resp.json(content_type=None)
    return [t for t in data if isinstance(t, dict)]


async def new_tab(http_base: str, url: str) -> dict[str, Any]:
    """``PUT /json/new?<url>``: open *url* in a new tab; returns the target description."""
    async with (
        aiohttp.ClientSession() as http,
        http.put(f"{http_base}/json/new?{quote(url, safe=':/?=&')}") as resp,
    ):
        resp.raise_for_status()
        data: dict[str, Any] = await resp.json(content_type=None)
    return data


async def close_target(http_base: str, target_id: str) -> None:
    async with aiohttp.ClientSession() as http, http.get(f"{http_base}/json/close/{target_id}"):
        pass


class TargetSession:
    """A websocket to one target: ``await call(method, params)`` returns the result."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._ids = itertools.count(1)

    async def call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 15.0
    ) -> dict[str, Any]:
        msg_id = next(self._ids)
        payload = {"id": msg_id, "method": method, "params": params or {}}
        await self.ws.send_str(orjson.dumps(payload).decode())
        async with asyncio.timeout(timeout):
            while True:
                msg = await self.ws.receive()
                if msg.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                    raise ConnectionError(
                        f"the target's websocket closed during {method} ({msg.type.name}: "
                        f"{msg.data!r}, {self.ws.close_code})"
                    )
                data = orjson.loads(msg.data)
                if data.get("id") != msg_id:
                    continue  # an event, or an answer to an earlier call
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error'].get('message')}")
                result: dict[str, Any] = data.get("result", {})
                return result

    async def evaluate(self, expression: str, timeout: float = 15.0) -> Any:
        result = await self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=timeout,
        )
        return result.get("result", {}).get("value")


@contextlib.asynccontextmanager
async def target_session(ws_url: str) -> AsyncIterator[TargetSession]:
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url, max_msg_size=64 * 1024 * 1024) as ws,
    ):
        yield TargetSession(ws)


async def capture_screenshot(
    ws_url: str, out: Path, *, full_page: bool = False, size: tuple[int, int] | None = None
) -> Path:
    """``Page.captureScreenshot`` (PNG) of the target at *ws_url* into *out*; *size* (width,
    height) emulates that viewport for the shot (e.g. a side panel's)."""
    async with target_session(ws_url) as target:
        if size is not None:
            await target.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False},
            )
            # Let the page lay out at the new size before the shot.
            await target.evaluate("new Promise((r) => requestAnimationFrame(() => r(true)))")
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        result = await target.call("Page.captureScreenshot", params, timeout=20.0)
    data = base64.b64decode(result["data"])

    def write() -> Path:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        return out

    return await asyncio.to_thread(write)


def extension_page_url(path: str) -> str:
    return f"chrome-extension://{OUR_EXTENSION_ID}/{path}"
