"""Launch and stop a headless Chromium for tests, and serve local pages to it.

Follows /work/shared/guides/real-browser-tests.md: the real binary (not the /usr/bin wrapper), its
own session so the whole process group can be killed, the DevTools port read from
``$PROFILE/DevToolsActivePort``, and a profile deletion that is retried.

Typical module-scoped fixture::

    @pytest.fixture(scope="module")
    def chromium() -> Iterator[Chromium]:
        with Chromium.launched() as browser:
            yield browser
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

__all__ = ["CHROMIUM_PATH", "Chromium", "PageServer", "chromium_available"]

CHROMIUM_PATH = Path("/usr/lib/chromium/chromium")

_BASE_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
    "--window-size=1280,800",
)


def chromium_available() -> bool:
    """True if the real Chromium binary is installed and executable."""
    return CHROMIUM_PATH.is_file() and os.access(CHROMIUM_PATH, os.X_OK)


class Chromium:
    """One headless Chromium process with a throw-away profile.

    :meth:`start` returns once the DevTools port is known (or raises ``TimeoutError``);
    :meth:`stop` is idempotent, kills the process group and removes the profile.
    """

    def __init__(
        self,
        *,
        load_extension: Path | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        start_url: str = "about:blank",
        log_path: Path | None = None,
    ) -> None:
        self.load_extension = load_extension
        self.extra_args = tuple(extra_args)
        self.env = dict(env) if env else {}
        self.start_url = start_url
        self.log_path = log_path
        self.profile: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int = 0
        self.browser_ws_path: str = ""

    @classmethod
    @contextlib.contextmanager
    def launched(cls, **kwargs: object) -> Iterator[Chromium]:
        """Context manager: a started browser, stopped on exit."""
        browser = cls(**kwargs)  # type: ignore[arg-type]
        browser.start()
        try:
            yield browser
        finally:
            browser.stop()

    @property
    def http_base(self) -> str:
        """``http://127.0.0.1:<port>`` of the DevTools HTTP endpoint."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> None:
        """Start the browser and wait for ``DevToolsActivePort``."""
        self.profile = Path(tempfile.mkdtemp(prefix="browy-chromium-"))
        args = [
            str(CHROMIUM_PATH),
            *_BASE_ARGS,
            f"--user-data-dir={self.profile}",
            "--remote-debugging-port=0",
        ]
        if self.load_extension is not None:
            ext = str(self.load_extension.resolve())
            args += [f"--load-extension={ext}", f"--disable-extensions-except={ext}"]
            args.append("--enable-logging=stderr")
        args += [*self.extra_args, self.start_url]
        log = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        finally:
            if self.log_path:
                log.close()  # type: ignore[union-attr]
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"chromium exited early with code {self.proc.returncode}")
            with contextlib.suppress(FileNotFoundError):
                lines = port_file.read_text().splitlines()
                if len(lines) >= 2 and lines[0].strip().isdigit():
                    self.port = int(lines[0])
                    self.browser_ws_path = lines[1].strip()
                    return
            time.sleep(0.02)  # polling a file with a deadline; there is no event to wait on
        self.stop()
        raise TimeoutError("chromium did not write DevToolsActivePort in time")

    def stop(self) -> None:
        """Kill the browser's process group and delete the profile (retried). Idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        elif proc is not None:
            # The leader is gone; children (crashpad, renderers) may still hold the group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        profile, self.profile = self.profile, None
        if profile is not None:
            for _ in range(20):
                try:
                    shutil.rmtree(profile)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    # "Directory not empty": a child was still writing; try again shortly.
                    time.sleep(0.1)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


class PageServer:
    """A threaded static HTTP server on 127.0.0.1 for ``directory`` (default: ``pages/``)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or Path(__file__).parent / "pages"
        handler = functools.partial(_QuietHandler, directory=str(self.directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, name: str) -> str:
        """The URL of page ``name`` (a path under the directory)."""
        return f"{self.base}/{name}"

    def __enter__(self) -> PageServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
