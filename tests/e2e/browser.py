"""End-to-end harness: a real headless Chromium with the Browy extension and the real native host.

Chromium -> ``connectNative("com.browy.host")`` -> launcher -> ``python -m nativehost.relay.main``
-> auto-started ``python -m nativehost.daemon.process``, all under a temporary ``BROWY_HOME`` that
reaches the host through the browser's environment (the host inherits it).

Follows /work/shared/guides/real-browser-tests.md: the real binary, the host manifest in
``$PROFILE/NativeMessagingHosts`` (a custom user-data-dir ignores ``~/.config``), the trailing slash
in ``allowed_origins``, panel pages opened as normal tabs (``sidePanel.open`` needs a gesture).

Every wait polls with a deadline; nothing sleeps to "let things settle".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from playwright.sync_api import BrowserContext, Page, Playwright, Worker

from nativehost.daemon.instance import is_running, pid_path
from nativehost.daemon.process import stop_daemon

REPO_ROOT = Path(__file__).resolve().parents[2]
EXTENSION_DIR = REPO_ROOT / "extension"
EXTENSION_ID = "kmfpcmoidebagkbcjhngabjpcgedcmna"
EXTENSION_ORIGIN = f"chrome-extension://{EXTENSION_ID}/"
HOST_NAME = "com.browy.host"
CHROMIUM_PATH = Path("/usr/lib/chromium/chromium")
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts" / "e2e"
# Some other, well-formed extension id: a manifest that lists only it forbids ours.
OTHER_EXTENSION_ID = "abcdefghijklmnopabcdefghijklmnop"

HostSetup = Literal["installed", "missing", "forbidden"]
T = TypeVar("T")

_LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
)


def chromium_available() -> bool:
    return CHROMIUM_PATH.is_file() and os.access(CHROMIUM_PATH, os.X_OK)


def host_python() -> str:
    """The interpreter the launcher execs: the repo's venv if present, else this one."""
    venv = REPO_ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


# --------------------------------------------------------------------------------------------
# Waiting


def wait_until(
    probe: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.05
) -> T:
    """Call *probe* until it returns something truthy; raise TimeoutError naming *what*."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"timed out after {timeout:.1f} s waiting for {what} (last: {last!r})"
            )
        time.sleep(interval)  # poll interval of a deadline-bounded wait, not a settle delay


# --------------------------------------------------------------------------------------------
# Native host registration


def manifest_dir(profile: Path) -> Path:
    return profile / "NativeMessagingHosts"


def write_launcher(home: Path) -> Path:
    """A ``#!/bin/sh`` launcher that execs the relay with this repo on the path."""
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    launcher = bin_dir / "browy-host"
    launcher.write_text(
        f'#!/bin/sh\ncd "{REPO_ROOT}" || exit 1\n'
        f'exec "{host_python()}" -m nativehost.relay.main "$@"\n',
        encoding="utf-8",
    )
    launcher.chmod(0o755)
    return launcher


def write_host_manifest(profile: Path, launcher: Path, origins: list[str]) -> Path:
    directory = manifest_dir(profile)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{HOST_NAME}.json"
    manifest = {
        "name": HOST_NAME,
        "description": "Browy native messaging host (e2e test)",
        "path": str(launcher),
        "type": "stdio",
        "allowed_origins": origins,
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def install_native_host(profile: Path, home: Path) -> Path:
    """Register the host for *profile* with the product's installer; returns the manifest path.

    ``install_host(target_dirs=[...])`` writes the launcher, the manifest and ``config.toml``
    exactly as ``browy install-host --target-dir`` would.
    """
    from nativehost.setup.install import install_host
    from nativehost.setup.platforms import Platform

    report = install_host(
        Platform.current(),
        home=home,
        target_dirs=[manifest_dir(profile)],
        launcher_dir=home / "bin",
        python=host_python(),
    )
    (manifest,) = report.manifests
    data = json.loads(manifest.path.read_text(encoding="utf-8"))
    assert data["allowed_origins"] == [EXTENSION_ORIGIN], data
    assert Path(data["path"]).is_absolute(), data
    assert os.access(data["path"], os.X_OK), data
    return manifest.path


# --------------------------------------------------------------------------------------------
# Processes


def daemon_pid(home: Path) -> int | None:
    try:
        return int(pid_path(home).read_text().strip())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0): look at its state.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


_RELAY_PID_RE = re.compile(r"relay pid (\d+) for ")


def relay_pids(home: Path) -> list[int]:
    """Pids of every relay started for *home*, from its own log lines (in start order)."""
    try:
        text = (home / "logs" / "relay.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [int(m) for m in _RELAY_PID_RE.findall(text)]


def stop_test_daemon(home: Path) -> None:
    """Stop the daemon of *home*: SIGTERM and wait, SIGKILL by recorded pid as a last resort."""
    with contextlib.suppress(Exception):
        stop_daemon(home, timeout=5.0)
    pid = daemon_pid(home)
    if pid is not None and is_running(home):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def remove_tree(path: Path, *, timeout: float = 5.0) -> None:
    """Delete *path*, retrying: Chromium's helpers may still be writing for a moment."""
    deadline = time.monotonic() + timeout
    while path.exists():
        try:
            shutil.rmtree(path)
        except OSError:
            if time.monotonic() >= deadline:
                shutil.rmtree(path, ignore_errors=True)
                return
            time.sleep(0.1)


# --------------------------------------------------------------------------------------------
# The browser


@dataclass
class PanelPage:
    """An extension page opened in a tab, with the console errors it logged."""

    page: Page
    errors: list[str] = field(default_factory=list)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.page.close()


@dataclass
class E2EBrowser:
    name: str
    context: BrowserContext
    worker: Worker
    home: Path
    profile: Path
    log_path: Path
    worker_errors: list[str] = field(default_factory=list)

    # -- the service worker's test hook (globalThis.browyTest) ---------------------------------

    def state(self) -> dict[str, str]:
        return self.worker.evaluate("() => globalThis.browyTest.state")

    def received(self) -> list[dict[str, Any]]:
        return self.worker.evaluate(
            "() => JSON.parse(JSON.stringify(globalThis.browyTest.received))"
        )

    def clear_received(self) -> None:
        self.worker.evaluate("() => { globalThis.browyTest.received.splice(0); }")

    def sessions(self) -> list[str]:
        return self.worker.evaluate("() => globalThis.browyTest.sessions()")

    def send(self, msg: dict[str, Any]) -> str:
        return self.worker.evaluate("(m) => globalThis.browyTest.send(m)", msg)

    def retry(self) -> None:
        self.worker.evaluate("() => globalThis.browyTest.retry()")

    def wait_state(self, state: str, timeout: float = 15.0) -> dict[str, str]:
        return wait_state(self.worker, state, timeout)

    def wait_received(
        self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float, what: str
    ) -> list[dict[str, Any]]:
        """Wait until some received message satisfies *predicate*; return all received so far."""

        def probe() -> list[dict[str, Any]] | None:
            got = self.received()
            return got if any(predicate(m) for m in got) else None

        return wait_until(probe, timeout=timeout, what=what)

    # -- pages ---------------------------------------------------------------------------------

    def open_panel(self, path: str) -> PanelPage:
        return open_panel(self.context, path)

    def screenshot(self, panel: PanelPage | Page, label: str) -> Path:
        page = panel.page if isinstance(panel, PanelPage) else panel
        ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
        out = ARTIFACTS_DIR / f"{self.name}-{label}.png"
        page.screenshot(path=str(out), full_page=True)
        return out


def wait_state(worker: Worker, state: str, timeout: float = 15.0) -> dict[str, str]:
    """Poll ``browyTest.state`` until its state is *state*; returns the state info."""

    def probe() -> dict[str, str] | None:
        info = worker.evaluate("() => globalThis.browyTest?.state ?? null")
        return info if info and info.get("state") == state else None

    return wait_until(probe, timeout=timeout, what=f"worker state {state!r}")


def open_panel(context: BrowserContext, path: str) -> PanelPage:
    """Open ``chrome-extension://<id>/<path>`` in a new tab; console errors are collected."""
    page = context.new_page()
    panel = PanelPage(page)
    page.on(
        "console",
        lambda m: panel.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda exc: panel.errors.append(f"pageerror: {exc}"))
    page.goto(f"{EXTENSION_ORIGIN}{path}", wait_until="load")
    return panel


def panel_session_id(panel: PanelPage, prefix: str, *, timeout: float = 5.0) -> str:
    """The chat session id a side/DevTools panel shows: its window's (tab's) key in
    chrome.storage.session; the last one is also kept in chrome.storage.local
    (``browy.panel.<prefix>.last``) for after a restart (extension/lib/panel-chat-id.js)."""

    def probe() -> str | None:
        stored = panel.page.evaluate("() => chrome.storage.session.get(null)")
        ids = [v for k, v in stored.items() if k.startswith(f"browy.panel.{prefix}.")]
        return ids[0] if len(ids) == 1 else None

    return wait_until(probe, timeout=timeout, what=f"the {prefix} panel's session id")


def banner_text(panel: PanelPage) -> str:
    return panel.page.evaluate(
        "() => { const b = document.querySelector('.banner');"
        " return b && !b.hidden ? b.innerText : ''; }"
    )


def wait_banner(panel: PanelPage, needle: str, *, timeout: float) -> str:
    """Wait until the panel's visible state banner contains *needle*; return its text."""

    def probe() -> str | None:
        text = banner_text(panel)
        return text if needle in text else None

    return wait_until(probe, timeout=timeout, what=f"a state banner containing {needle!r}")


def _find_worker(context: BrowserContext, timeout: float) -> Worker:
    prefix = f"{EXTENSION_ORIGIN}sw.js"
    for w in context.service_workers:
        if w.url.startswith(prefix):
            return w
    return context.wait_for_event(
        "serviceworker", predicate=lambda w: w.url.startswith(prefix), timeout=timeout * 1000
    )


@contextlib.contextmanager
def launched(
    playwright: Playwright,
    *,
    name: str,
    root: Path,
    host: HostSetup = "installed",
    extra_env: dict[str, str] | None = None,
) -> Iterator[E2EBrowser]:
    """A headless Chromium with the extension, its own profile and ``BROWY_HOME`` under *root*.

    *host*: "installed" registers the real host with the installer; "missing" writes no manifest;
    "forbidden" writes a manifest whose ``allowed_origins`` names another extension only.
    Teardown closes the browser, stops the test daemon and deletes the profile; the Chromium log
    is kept in ``test-artifacts/e2e/chromium-<name>.log``, the host's logs as ``<name>-*.log``.
    """
    home = root / "home"
    profile = root / "profile"
    home.mkdir(parents=True, exist_ok=True)
    profile.mkdir(parents=True, exist_ok=True)
    if host == "installed":
        install_native_host(profile, home)
    elif host == "forbidden":
        write_host_manifest(
            profile, write_launcher(home), [f"chrome-extension://{OTHER_EXTENSION_ID}/"]
        )
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    log_path = ARTIFACTS_DIR / f"chromium-{name}.log"
    log_path.unlink(missing_ok=True)

    env = dict(os.environ)
    env.update(
        # The relay and the daemon it starts run this checkout's code, whatever checkout the
        # interpreter's editable install points at (a git worktree shares the main venv).
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
        BROWY_HOME=str(home),
        BROWY_IDLE_EXIT_SECONDS="5",
        # Short relay reconnect bounds keep an outage test quick.
        BROWY_RELAY_RECONNECT_S="10",
    )
    env.update(extra_env or {})
    ext = str(EXTENSION_DIR)
    context = playwright.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM_PATH),
        headless=True,
        args=[
            f"--load-extension={ext}",
            f"--disable-extensions-except={ext}",
            *_LAUNCH_ARGS,
            # The browser's log (native messaging errors, the worker's console) goes to a file
            # kept as an artefact; plain --enable-logging=stderr would go to Playwright's pipe.
            "--enable-logging",
            f"--log-file={log_path}",
            "--v=0",
        ],
        env=env,
        timeout=30_000,
    )
    try:
        worker = _find_worker(context, timeout=15.0)
        browser = E2EBrowser(
            name=name, context=context, worker=worker, home=home, profile=profile, log_path=log_path
        )
        yield browser
    finally:
        with contextlib.suppress(Exception):
            context.close()
        stop_test_daemon(home)
        # The host's own logs (relay.log, host.log) are artefacts too; the home is temporary.
        for log in sorted((home / "logs").glob("*.log")):
            with contextlib.suppress(OSError):
                shutil.copyfile(log, ARTIFACTS_DIR / f"{name}-{log.name}")
        remove_tree(profile)
