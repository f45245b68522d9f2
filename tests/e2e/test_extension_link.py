"""The extension's link to the real host: Chromium -> relay -> auto-started daemon -> back.

Two browsers, one after the other (class-scoped): one with the host registered by the installer,
one whose profile has no host manifest (then a manifest that does not allow our id).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Playwright

from nativehost.daemon.instance import is_running
from tests.e2e.browser import (
    EXTENSION_ORIGIN,
    OTHER_EXTENSION_ID,
    E2EBrowser,
    banner_text,
    daemon_pid,
    launched,
    panel_session_id,
    pid_alive,
    relay_pids,
    wait_banner,
    wait_until,
    write_host_manifest,
    write_launcher,
)

pytestmark = pytest.mark.browser

INITIAL_PUSH = ["sdk.ready", "auth.status", "models.current", "models.list"]
TURN_ENDS = ("chat.done", "chat.error")


def _log_count(path: Path, needle: str) -> int:
    try:
        return path.read_text(encoding="utf-8", errors="replace").count(needle)
    except OSError:
        return 0


def _ends_for(received: list[dict[str, Any]], sid: str) -> tuple[list[dict[str, Any]], list[str]]:
    ends = [m for m in received if m.get("type") in TURN_ENDS and m.get("sessionId") == sid]
    statuses = [
        m["event"]
        for m in received
        if m.get("type") == "event.activity"
        and m.get("sessionId") == sid
        and m.get("event") in ("status.idle", "status.error")
    ]
    return ends, statuses


# Class-scoped: each class has its own browser, and the first is closed before the second starts.
@pytest.fixture(scope="class")
def linked(
    playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[E2EBrowser]:
    with launched(playwright, name="link", root=tmp_path_factory.mktemp("link")) as b:
        yield b


@pytest.fixture(scope="class")
def bare(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2EBrowser]:
    with launched(
        playwright, name="nohost", root=tmp_path_factory.mktemp("nohost"), host="missing"
    ) as b:
        yield b


class TestLinked:
    """The host registered with ``install_host``: the real relay and daemon answer."""

    def test_worker_ready_through_relay_and_daemon(self, linked: E2EBrowser) -> None:
        info = linked.wait_state("ready", timeout=20.0)
        # hello.ack carries the negotiated protocol: the daemon answers min(ours, its own), so
        # "protocol 2" means the worker's hello was v2 and the daemon chose v2.
        assert info["detail"].endswith("protocol 2"), info
        assert info["fix"] == ""
        # A real relay process served the port, and it auto-started a real daemon.
        relays = relay_pids(linked.home)
        assert len(relays) == 1, relays
        assert pid_alive(relays[0])
        pid = daemon_pid(linked.home)
        assert pid is not None
        assert pid_alive(pid)
        assert is_running(linked.home)
        host_log = linked.home / "logs" / "host.log"
        assert _log_count(host_log, f"relay for {EXTENSION_ORIGIN}") == 1

    def test_panel_session_gets_ready_and_initial_push(self, linked: E2EBrowser) -> None:
        linked.wait_state("ready", timeout=20.0)
        linked.clear_received()
        panel = linked.open_panel("sidepanel.html")
        try:
            sid = panel_session_id(panel, "sp")
            assert sid.startswith("sp-")
            got = linked.wait_received(
                lambda m: m.get("type") == "models.list", timeout=10.0, what="the initial push"
            )
            types = [m["type"] for m in got]
            i = next(
                n
                for n, m in enumerate(got)
                if m["type"] == "session.ready" and m.get("sessionId") == sid
            )
            assert types[i + 1 : i + 5] == INITIAL_PUSH, types
            push = {m["type"]: m for m in got[i + 1 : i + 5]}
            assert push["sdk.ready"]["ok"] is True
            assert isinstance(push["auth.status"]["state"], str)
            assert isinstance(push["models.list"]["models"], list)
            assert sid in linked.sessions()
            # The panel shows the connection as ready: the state banner is hidden.
            wait_until(lambda: banner_text(panel) == "", timeout=5.0, what="the banner to hide")
            assert panel.errors == []
        finally:
            panel.close()

    def test_daemon_sigkill_mid_session(self, linked: E2EBrowser) -> None:
        linked.wait_state("ready", timeout=20.0)
        relay_log = linked.home / "logs" / "relay.log"
        panel = linked.open_panel("sidepanel.html")
        try:
            sid = panel_session_id(panel, "sp")
            linked.wait_received(
                lambda m: m.get("type") == "session.ready" and m.get("sessionId") == sid,
                timeout=10.0,
                what="session.ready",
            )
            relays = relay_pids(linked.home)
            old = daemon_pid(linked.home)
            links_up = _log_count(relay_log, "link up after")
            assert old is not None
            assert links_up >= 1

            os.kill(old, signal.SIGKILL)
            states: list[str] = []

            def replaced() -> bool:
                states.append(linked.state()["state"])
                new = daemon_pid(linked.home)
                return (
                    not pid_alive(old)
                    and new is not None
                    and new != old
                    and pid_alive(new)
                    and _log_count(relay_log, "link up after") > links_up
                )

            wait_until(replaced, timeout=20.0, what="the relay to start and link a new daemon")
            # Chrome's native port never closed: the same relay, the worker ready throughout.
            assert set(states) == {"ready"}, states
            assert relay_pids(linked.home) == relays
            assert pid_alive(relays[0])
            assert linked.state()["state"] == "ready"

            # A chat.send typed into the panel still gets exactly one definite end.
            linked.clear_received()
            panel.page.fill("textarea", "hello after the crash")
            panel.page.press("textarea", "Enter")
            wait_until(
                lambda: panel.page.evaluate(
                    "() => !!document.querySelector('.msg.error')"
                    " && !document.getElementById('app').classList.contains('busy')"
                ),
                timeout=15.0,
                what="the panel to show the turn's error and stop being busy",
            )
            # Barrier: the daemon answers in order, so once chat.list.result is back any second
            # end of that turn would already be here.
            assert linked.send({"type": "chat.list"}) == "sent"
            got = linked.wait_received(
                lambda m: m.get("type") == "chat.list.result", timeout=10.0, what="chat.list.result"
            )
            ends, statuses = _ends_for(got, sid)
            assert len(ends) == 1, got
            assert statuses == ["status.error"], got
            # The relay re-registered the session with the new daemon.
            assert ends[0].get("code") != "UNKNOWN_SESSION", ends
            assert panel.page.locator(".msg.error").count() == 1
            assert panel.errors == []
            linked.screenshot(panel, "sidepanel-after-daemon-kill")
        finally:
            panel.close()


class TestHostProblems:
    """A profile without the host manifest, then with one that does not allow our id."""

    def test_host_missing_shows_install_fix(self, bare: E2EBrowser) -> None:
        info = bare.wait_state("host_missing", timeout=15.0)
        assert "browy install-host" in info["fix"]
        panel = bare.open_panel("sidepanel.html")
        try:
            # The worker keeps retrying (connecting <-> problem state): wait for the problem.
            text = wait_banner(panel, "not installed", timeout=10.0)
            assert "not installed" in text, text
            assert "browy install-host" in text, text
            assert panel.page.locator(".banner code.fix").count() == 1
            bare.screenshot(panel, "sidepanel-host-missing")
        finally:
            panel.close()
        # Nothing was started for this home.
        assert relay_pids(bare.home) == []
        assert daemon_pid(bare.home) is None

    def test_host_forbidden(self, bare: E2EBrowser) -> None:
        write_host_manifest(
            bare.profile,
            write_launcher(bare.home),
            [f"chrome-extension://{OTHER_EXTENSION_ID}/"],
        )
        bare.retry()
        info = bare.wait_state("host_forbidden", timeout=15.0)
        assert "--extension-id" in info["fix"]
        panel = bare.open_panel("sidepanel.html")
        try:
            # The worker keeps retrying (connecting <-> problem state): wait for the problem.
            text = wait_banner(panel, "does not allow this extension", timeout=10.0)
            assert "does not allow this extension" in text, text
            bare.screenshot(panel, "sidepanel-host-forbidden")
        finally:
            panel.close()
        assert relay_pids(bare.home) == []
