"""The chat panel's polish, in real Chromium against the real host and the scripted model.

- code blocks are highlighted (classes from the vendored highlight.js, colours from panel.css)
  and each has a Copy button; each answer has a Copy button that copies its Markdown source;
- the log follows a streaming answer while the reader is at the bottom, stays put (with a "new
  messages" pill) once the reader scrolls up with the mouse wheel, and the pill jumps back;
- a chat exported from the chat list downloads as a .md file with the tools folded;
- the last answer regenerates, and the last message can be edited and sent again: the replaced
  turn leaves the log and the model's context;
- a screenshot a tool takes shows inline in its card (fetched in pieces, image.get) and opens
  large in a dialog that Escape closes;
- the real side panel shows a highlighted code block; its screenshot is the README's
  ``docs/images/panel-code.png`` (rewritten only with ``BROWY_UPDATE_DOCS_IMAGES=1``);
- the side panel's keyboard shortcut is registered (chrome.commands.getAll) and the options page
  shows its binding. Pressing it cannot be tested here: headless Chromium hands CDP key events to
  the page, never to its extension-command accelerators (a press of Alt+Shift+Y on a tab opened
  no side panel); lib/commands.js's listener is covered by node tests.

One browser for the module; each test opens its own DevTools panel page on its own tab (a new tab
is a new chat) and names its own ``session`` marker of the model script.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Playwright

from tests.e2e.browser import (
    ARTIFACTS_DIR,
    REPO_ROOT,
    E2EBrowser,
    PanelPage,
    launched,
    panel_session_id,
    wait_until,
)
from tests.e2e.test_panels_at_work import (
    PLAIN,
    ModelThread,
    Site,
    _open_real_side_panel,
    open_devtools_panel,
    open_site_tab,
    screenshot,
    send_task,
    session_messages,
    wait_for_session_ready,
    wait_idle,
    wait_turn_end,
    write_config,
)

pytestmark = pytest.mark.browser

CODE_ANSWER = (
    "Here is a small function:\n\n"
    "```python\n"
    "def greet(name: str) -> str:\n"
    '    """Say hello."""\n'
    '    return f"Hello, {name}!"  # friendly\n'
    "```\n\n"
    "Call it with `greet('Ada')`."
)
CODE = CODE_ANSWER.split("```python\n", 1)[1].split("```", 1)[0]
# The README's picture: a plain question (no session marker: the script's unmarked step).
DOCS_QUESTION = "How do I read a JSON file in Python?"
DOCS_ANSWER = (
    "Use the standard library's `json` module:\n\n"
    "```python\n"
    "import json\n"
    "from pathlib import Path\n\n"
    "def load(path: str) -> dict:\n"
    '    """Read a JSON file."""\n'
    '    text = Path(path).read_text("utf-8")\n'
    "    return json.loads(text)  # may raise\n\n"
    'cfg = load("settings.json")\n'
    'print(cfg.get("theme", "light"))\n'
    "```\n\n"
    "`json.loads` raises `ValueError` on bad JSON."
)
DOCS_IMAGE = REPO_ROOT / "docs" / "images" / "panel-code.png"
# A long answer streamed a paragraph at a time, slowly enough to scroll while it comes.
LONG_LINES = [f"Paragraph {n} of a long answer that keeps coming.\n\n" for n in range(1, 91)]


def _script() -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"session": "[code-1]", "text": CODE_ANSWER},
        {"text": DOCS_ANSWER},
        {"session": "[export-1]", "tool_calls": [{"name": "inspect_page", "arguments": {}}]},
        {"session": "[export-1]", "text": "It is a **plain** page."},
        {"session": "[export-1]", "text": "Still plain."},
        {"session": "[regen-1]", "text": "First answer."},
        {"session": "[regen-1]", "text": "Second answer."},
        {"session": "[regen-1]", "text": "Third answer."},
        {"session": "[shot-1]", "tool_calls": [{"name": "screenshot", "arguments": {}}]},
        {"session": "[shot-1]", "text": "Here is the page."},
        {
            "session": "[scroll-1]",
            "text": LONG_LINES,
            "fault": {"kind": "delay", "between_chunks_s": 0.08},
        },
    ]
    return {"steps": steps}


class World:
    def __init__(self, browser: E2EBrowser, site: Site, model: ModelThread) -> None:
        self.browser = browser
        self.site = site
        self.model = model

    def panel(self, name: str) -> tuple[Page, PanelPage, str]:
        """A site tab and a DevTools panel page (a fresh chat) bound to it."""
        page, tab_id = open_site_tab(self.browser, f"{self.site.url}/plain-{name}.html")
        panel, sid = open_devtools_panel(self.browser, tab_id)
        panel.page.bring_to_front()
        return page, panel, sid


@pytest.fixture(scope="module")
def world(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("polish")
    names = ("code", "scroll", "export", "shot", "regen")
    site = Site(root / "site", {f"plain-{n}.html": PLAIN.format(title=n) for n in names})
    model = ModelThread(_script())
    write_config(root / "home", model.url)
    try:
        with launched(playwright, name="polish", root=root) as browser:
            # The clipboard is read back on the local site (Chrome grants no permission to an
            # extension origin over CDP); it is the same system clipboard the panel wrote.
            browser.context.grant_permissions(["clipboard-read"], origin=site.url)
            browser.wait_state("ready", timeout=20)
            yield World(browser, site, model)
    finally:
        with contextlib.suppress(Exception):
            model.close()
        site.close()


def _clipboard(reader: Page) -> str:
    """The clipboard's text, read on a site page (focused: readText needs it)."""
    reader.bring_to_front()
    return str(reader.evaluate("() => navigator.clipboard.readText()"))


def test_code_blocks_are_highlighted_and_copy_buttons_copy_code_and_markdown(
    world: World,
) -> None:
    browser = world.browser
    page, panel, sid = world.panel("code")
    try:
        send_task(panel, "[code-1] Write a greeting function.")
        end = wait_turn_end(browser, sid, timeout=20)
        assert (end["type"], end["text"]) == ("chat.done", CODE_ANSWER), end
        wait_idle(panel, timeout=5)
        answer = panel.page.locator("main.log .msg.assistant").last
        block = answer.locator(".code-block")
        wait_until(lambda: block.count() == 1 or None, timeout=5, what="the code block")
        assert block.locator(".code-lang").inner_text() == "python"
        code = block.locator("pre > code.hljs")
        assert code.locator("span.hljs-keyword").first.inner_text() == "def"
        assert code.locator("span.hljs-string").count() >= 2
        assert code.locator("span.hljs-comment").inner_text() == "# friendly"
        # The highlight is visible: a keyword's colour differs from the plain code's.
        colours = code.evaluate(
            "(el) => [getComputedStyle(el).color,"
            " getComputedStyle(el.querySelector('.hljs-keyword')).color]"
        )
        assert colours[0] != colours[1], colours
        # Only spans came out of the highlighter (it ran on sanitized output and was sanitized).
        tags = code.evaluate("(el) => [...el.querySelectorAll('*')].map((n) => n.tagName)")
        assert set(tags) == {"SPAN"}, tags
        screenshot(browser, panel, "code-highlighted")

        copy_code = block.get_by_role("button", name="Copy code")
        copy_code.click()
        wait_until(lambda: copy_code.inner_text() == "Copied" or None, timeout=5, what="Copied")
        assert _clipboard(page) == CODE

        panel.page.bring_to_front()
        copy_answer = answer.get_by_role("button", name="Copy answer as Markdown")
        copy_answer.click()
        wait_until(lambda: copy_answer.inner_text() == "Copied" or None, timeout=5, what="Copied")
        assert _clipboard(page) == CODE_ANSWER
        assert panel.errors == []
    finally:
        panel.close()
        page.close()


_GEOMETRY_JS = """() => { const l = document.querySelector('main.log');
  return {top: l.scrollTop, height: l.scrollHeight, view: l.clientHeight,
          gap: l.scrollHeight - l.clientHeight - l.scrollTop,
          pill: !document.querySelector('button.new-messages').hidden}; }"""


def _geometry(panel: PanelPage) -> dict[str, Any]:
    return dict(panel.page.evaluate(_GEOMETRY_JS))


def test_the_log_follows_new_content_only_while_the_reader_is_at_the_bottom(
    world: World,
) -> None:
    browser = world.browser
    page, panel, sid = world.panel("scroll")
    try:
        send_task(panel, "[scroll-1] Tell me a long story.")
        # At the bottom, the streamed answer keeps the view at the bottom as it grows.
        first = wait_until(
            lambda: (g := _geometry(panel))["height"] > g["view"] + 400 and g,
            timeout=20,
            what="the answer to overflow the log",
        )
        assert first["gap"] <= 2 and not first["pill"], first
        grown = wait_until(
            lambda: (g := _geometry(panel))["height"] > first["height"] + 150 and g,
            timeout=10,
            what="more of the answer",
        )
        assert grown["gap"] <= 2 and not grown["pill"], grown

        # The reader scrolls up with the wheel: the view stays where they put it.
        box = panel.page.locator("main.log").bounding_box()
        assert box is not None
        panel.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        panel.page.mouse.wheel(0, -300)
        reading = wait_until(
            lambda: (g := _geometry(panel))["gap"] >= 250 and g,
            timeout=5,
            what="the wheel to scroll the log up",
        )
        later = wait_until(
            lambda: (g := _geometry(panel))["height"] > reading["height"] + 150 and g,
            timeout=10,
            what="more of the answer while reading",
        )
        assert abs(later["top"] - reading["top"]) <= 1, (reading, later)
        assert later["pill"], later
        screenshot(browser, panel, "scroll-reading-with-pill")

        # The pill jumps to the bottom, and following resumes.
        panel.page.locator("button.new-messages").click()
        jumped = _geometry(panel)
        assert jumped["gap"] <= 2 and not jumped["pill"], jumped
        again = wait_until(
            lambda: (g := _geometry(panel))["height"] > jumped["height"] + 150 and g,
            timeout=10,
            what="more of the answer after the jump",
        )
        assert again["gap"] <= 2 and not again["pill"], again

        end = wait_turn_end(browser, sid, timeout=30)
        assert end["type"] == "chat.done", end
        assert end["text"].strip() == "".join(LONG_LINES).strip()
        wait_idle(panel, timeout=5)
        final = _geometry(panel)
        assert final["gap"] <= 2 and not final["pill"], final
        assert panel.errors == []
    finally:
        panel.close()
        page.close()


def test_the_side_panel_shortcut_is_registered_and_the_options_page_shows_it(
    world: World,
) -> None:
    browser = world.browser
    commands = browser.worker.evaluate("() => chrome.commands.getAll()")
    mine = next(c for c in commands if c["name"] == "open-side-panel")
    assert mine["shortcut"] == "Alt+Shift+Y", commands
    assert mine["description"] == "Open Browy in the side panel", commands
    panel = browser.open_panel("options.html")
    try:
        shown = wait_until(
            lambda: panel.page.locator("#shortcut").inner_text() or None,
            timeout=5,
            what="the shortcut on the options page",
        )
        assert shown == "Open Browy in the side panel: Alt+Shift+Y", shown
        assert panel.page.locator("#shortcut-change").is_visible()
        screenshot(browser, panel, "options-shortcut")
        assert panel.errors == []
    finally:
        panel.close()


def test_a_chat_exports_from_the_chat_list_as_markdown_with_its_tools_folded(
    world: World, tmp_path: Path
) -> None:
    browser = world.browser
    page, panel, sid = world.panel("export")
    try:
        send_task(panel, "[export-1] What is on this page?")
        assert wait_turn_end(browser, sid, timeout=20)["type"] == "chat.done"
        wait_idle(panel, timeout=5)
        send_task(panel, "[export-1] And now?")
        wait_until(
            lambda: (
                len([m for m in session_messages(browser, sid) if m["type"] == "chat.done"]) == 2
                or None
            ),
            timeout=20,
            what="the second turn to end",
        )
        wait_idle(panel, timeout=5)

        panel.page.get_by_role("button", name="Chats").click()
        item = panel.page.locator(".chat-item", has=panel.page.locator(f"button[title='{sid}']"))
        wait_until(lambda: item.count() == 1 or None, timeout=10, what="the chat in the list")
        export = item.locator("button.chat-export")
        screenshot(browser, panel, "chat-list-export")
        with panel.page.expect_download(timeout=15_000) as info:
            export.click()
        download = info.value
        name = download.suggested_filename
        assert name.startswith("browy-export-1-what-is-on-this-page-") and name.endswith(".md"), (
            name
        )
        saved = tmp_path / name
        download.save_as(saved)
        text = saved.read_text(encoding="utf-8")
        assert text.startswith("# "), text
        assert f"Browy chat {sid}, exported" in text
        turns = text.split("\n---\n")
        assert len(turns) == 2, text
        first, second = turns
        assert "### You" in first and "[export-1] What is on this page?" in first
        assert "<details>\n<summary>Tools used: 1</summary>" in first
        assert "- <code>inspect_page</code> — ok" in first
        assert first.index("</details>") < first.index("### Browy")
        assert "It is a **plain** page." in first
        assert "[export-1] And now?" in second and "Still plain." in second
        assert "<details>" not in second
        assert not export.is_disabled()
        assert panel.errors == []
    finally:
        panel.close()
        page.close()


def test_the_real_side_panel_shows_a_highlighted_code_block_for_the_readme(world: World) -> None:
    """The README's ``docs/images/panel-code.png``: the real side panel after a code answer.

    The picture is always written to test-artifacts; ``BROWY_UPDATE_DOCS_IMAGES=1`` also
    copies it over the README's copy (so an ordinary test run leaves the checkout clean).
    """
    browser = world.browser
    opener, side = _open_real_side_panel(browser)
    try:
        sid = panel_session_id(side, "sp")  # type: ignore[arg-type]  # duck-typed .page
        wait_for_session_ready(browser, side, sid)
        send_task(side, DOCS_QUESTION)
        end = wait_turn_end(browser, sid, timeout=20)
        assert (end["type"], end["text"]) == ("chat.done", DOCS_ANSWER), end
        wait_idle(side, timeout=5)
        keywords = wait_until(
            lambda: (
                side.evaluate(
                    "() => [...document.querySelectorAll('.code-block code.hljs .hljs-keyword')]"
                    ".map((k) => k.textContent)"
                )
                or None
            ),
            timeout=5,
            what="highlighted keywords in the side panel",
        )
        assert {"import", "from", "def", "return"} <= set(keywords), keywords
        # Nothing focused or hovered in the picture.
        side.evaluate("() => document.activeElement?.blur()")
        shot = ARTIFACTS_DIR / f"{browser.name}-panel-code.png"
        ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
        side.screenshot(shot)
        assert shot.stat().st_size > 10_000
        if os.environ.get("BROWY_UPDATE_DOCS_IMAGES") == "1":
            shutil.copyfile(shot, DOCS_IMAGE)
        assert side.errors == []
    finally:
        side.close()
        opener.close()


def test_a_screenshot_shows_inline_and_opens_large(world: World) -> None:
    page, panel, sid = world.panel("shot")
    try:
        send_task(panel, "[shot-1] Show me the page.")
        wait_turn_end(world.browser, sid, timeout=30)
        thumb = panel.page.locator(".tool-images .thumb img")
        wait_until(lambda: thumb.count() == 1 or None, timeout=10, what="the inline screenshot")
        size = thumb.evaluate("(img) => [img.naturalWidth, img.naturalHeight]")
        assert size[0] > 100 and size[1] > 100, size  # a real decoded image
        thumb.click()
        large = panel.page.locator("dialog.image-large[open] img")
        wait_until(lambda: large.count() == 1 or None, timeout=5, what="the large image")
        screenshot(world.browser, panel, "inline-screenshot-large")
        panel.page.keyboard.press("Escape")
        wait_until(
            lambda: panel.page.locator("dialog.image-large").count() == 0 or None,
            timeout=5,
            what="the dialog to close",
        )
        assert panel.errors == []
    finally:
        panel.close()
        page.close()


def test_the_last_answer_regenerates_and_the_last_message_can_be_edited(world: World) -> None:
    page, panel, sid = world.panel("regen")
    p = panel.page

    def answers() -> list[str]:
        return p.locator(".msg.assistant .md").all_inner_texts()

    try:
        send_task(panel, "[regen-1] Which answer?")
        wait_turn_end(world.browser, sid, timeout=30)
        wait_until(lambda: answers() == ["First answer."] or None, timeout=5, what="answer 1")
        world.browser.clear_received()
        p.locator("button.turn-action.regenerate").click()
        wait_turn_end(world.browser, sid, timeout=30)
        wait_until(lambda: answers() == ["Second answer."] or None, timeout=5, what="answer 2")
        assert p.locator(".msg.user").count() == 1
        # Edit: the message comes back into the composer; sent, it replaces the turn.
        world.browser.clear_received()
        p.locator("button.turn-action.edit").click()
        box = p.locator("textarea")
        assert box.input_value() == "[regen-1] Which answer?"
        box.fill("[regen-1] Which answer, edited?")
        box.press("Enter")
        wait_turn_end(world.browser, sid, timeout=30)
        wait_until(lambda: answers() == ["Third answer."] or None, timeout=5, what="answer 3")
        users = p.locator(".msg.user").all_inner_texts()
        assert len(users) == 1 and users[0].startswith("[regen-1] Which answer, edited?"), users
        last = world.model.requests_with("[regen-1]")[-1]["messages"]
        said = " ".join(str(m.get("content")) for m in last)
        assert "First answer." not in said and "Second answer." not in said
        assert "Which answer?" not in said.replace("Which answer, edited?", "")
        assert panel.errors == []
    finally:
        panel.close()
        page.close()
