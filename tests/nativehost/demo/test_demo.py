"""``browy demo`` in its CI form: real headless Chromium, the extension, the relay and the daemon,
the demo shop and the scripted model; and ``browy run`` launching its own Chromium.

Each test leaves no Chromium and no daemon behind (the demo's and run's own cleanup is what is
tested; the fixture double-checks by pid)."""

from __future__ import annotations

import asyncio
import io
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nativehost.cli.main import main
from nativehost.cli.terminal import run_task
from nativehost.daemon.instance import is_running
from nativehost.demo.launch import find_chromium
from nativehost.demo.model_server import ScriptedModelServer

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/lib/chromium/chromium")
REPO_ROOT = Path(__file__).resolve().parents[3]
_MODEL_ENV = ("BROWY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture(autouse=True)
def _needs_chromium() -> None:
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"{CHROMIUM} is not installed")


def _chromium_pids() -> set[int]:
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"browy-profile-" in cmd:
                pids.add(int(entry.name))
    return pids


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A clean environment: the user's home, cache and config are the test's own."""
    before = _chromium_pids()
    environ = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV}
    environ.update(
        # The relay and the daemon the browser starts run this checkout's code (a git worktree
        # shares the main venv's editable install).
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), environ.get("PYTHONPATH")])),
        BROWY_HOME=str(tmp_path / "user-home"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        BROWY_CHROMIUM=str(CHROMIUM),
    )
    environ.pop("DISPLAY", None)
    environ.pop("WAYLAND_DISPLAY", None)
    yield environ
    # Nothing of ours may survive the test (the helpers exit with the browser's group).
    deadline = time.monotonic() + 5
    while (_chromium_pids() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_chromium_pids() - before), "a Chromium of the test is still running"


def test_browy_demo_completes_the_checkout_and_saves_screenshots(
    tmp_path: Path, env: dict[str, str]
) -> None:
    out_dir = tmp_path / "shots"
    out = io.StringIO()
    started = time.monotonic()
    code = main(["demo", "--scripted", "--out", str(out_dir)], env=env, stdout=out)
    text = out.getvalue()
    assert code == 0, text
    assert time.monotonic() - started < 40
    assert "final page: Order confirmed" in text
    assert "→ click_index(index=6)" in text  # Place order
    assert "type_index(index=100001" in text  # the card number, in the payment provider's frame
    assert "card ending 4242" in text
    assert "✗" not in text
    assert "demo succeeded" in text
    for name in ("final-page.png", "side-panel.png"):
        shot = out_dir / name
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert shot.stat().st_size < 200_000
    # The demo's private BROWY_HOME is gone, and its daemon with it.
    cache = tmp_path / "cache" / "browy"
    leftovers = list(cache.iterdir()) if cache.exists() else []
    assert all(not is_running(p) for p in leftovers)
    assert leftovers == [], leftovers


def _write_user_config(home: Path, text: str) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text(text)


def test_browy_run_launches_its_own_chromium_when_no_browser_is_connected(
    tmp_path: Path, env: dict[str, str]
) -> None:
    async def scenario() -> tuple[int, str, int]:
        model = ScriptedModelServer(
            [
                {"tool_calls": [{"name": "get_page_info", "arguments": {}}]},
                {"text": "The page is blank."},
            ]
        )
        base_url = await model.start()
        user_home = Path(env["BROWY_HOME"])
        await asyncio.to_thread(
            _write_user_config,
            user_home,
            f'[model]\nbase_url = "{base_url}"\nmodel = "scripted"\napi_key = "sk-test"\n'
            '[tools]\napproval_mode = "never"\n',
        )
        out = io.StringIO()
        try:
            code = await run_task(
                "what is on the page?",
                user_home=user_home,
                env=env,
                out=out,
                interactive=False,
                timeout=30,
            )
        finally:
            await model.stop()
        return code, out.getvalue(), len(model.requests)

    code, text, requests = asyncio.run(scenario())
    assert code == 0, text
    assert "browser: a private Chromium" in text
    assert "→ get_page_info()" in text
    assert "The page is blank." in text
    assert requests == 2
    assert find_chromium(env) == CHROMIUM
    assert not is_running(Path(env["BROWY_HOME"]))  # the user's daemon was never needed
