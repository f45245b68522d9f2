"""File tools stay inside BROWY_HOME/data/files; notes round-trip through data/notes.json."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from actors.tools.files import FileSandbox, register_file_tools
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolContext, ToolError, ToolPolicy


@pytest.fixture
def box(tmp_path: Path) -> FileSandbox:
    return FileSandbox(tmp_path / "home", max_file_bytes=1000)


@pytest.fixture
def reg() -> Registry:
    r = Registry()
    register_file_tools(r)
    return r


@pytest.mark.parametrize("bad", ["../x", "a/../../x", "/etc/passwd", "~/x", "a\x00b", "C:/x"])
def test_paths_that_leave_the_sandbox_are_refused(box: FileSandbox, bad: str) -> None:
    with pytest.raises(ToolError):
        box.resolve(bad)


def test_a_symlink_pointing_out_of_the_sandbox_is_refused(box: FileSandbox, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    box.root.mkdir(parents=True)
    os.symlink(outside, box.root / "link.txt")
    os.symlink(tmp_path, box.root / "dirlink")
    with pytest.raises(ToolError):
        box.read("link.txt")
    with pytest.raises(ToolError):
        box.write("dirlink/new.txt", "x")
    assert not (tmp_path / "new.txt").exists()
    assert "link.txt" not in box.glob("*")


async def test_save_read_list_and_delete_round_trip(box: FileSandbox, reg: Registry) -> None:
    ctx = ToolContext(files=box)
    assert (await reg.run("save_file", {"path": "d/a.txt", "content": "hello"}, ctx)).ok
    read = await reg.run("read_file", {"path": "d/a.txt"}, ctx)
    assert read.content_for_model == "hello"
    listing = await reg.run("list_files", {"recursive": "true"}, ctx)
    assert "d/a.txt (5 bytes)" in str(listing.content_for_model)
    assert (await reg.run("delete_file", {"path": "d/a.txt"}, ctx)).ok
    assert not (box.root / "d" / "a.txt").exists()


async def test_traversal_through_the_tool_is_an_error_for_the_model(
    box: FileSandbox, reg: Registry, tmp_path: Path
) -> None:
    out = await reg.run(
        "save_file", {"path": "../escape.txt", "content": "x"}, ToolContext(files=box)
    )
    assert out.outcome == "error"
    assert "'..'" in str(out.content_for_model)
    assert not (tmp_path / "home" / "data" / "escape.txt").exists()


def test_files_larger_than_the_limit_are_refused(box: FileSandbox) -> None:
    with pytest.raises(ToolError):
        box.write("big.txt", "x" * 1001)


async def test_notes_round_trip(box: FileSandbox, reg: Registry) -> None:
    ctx = ToolContext(files=box)
    assert (await reg.run("note_set", {"key": "k", "value": "v1"}, ctx)).ok
    assert (await reg.run("note_set", {"key": "j", "value": "v2"}, ctx)).ok
    assert (await reg.run("note_get", {"key": "k"}, ctx)).content_for_model == "v1"
    listed = await reg.run("note_list", {}, ctx)
    assert listed.data == {"keys": ["j", "k"]}
    assert json.loads(box.notes_path.read_text()) == {"k": "v1", "j": "v2"}
    assert (await reg.run("note_delete", {"key": "k"}, ctx)).ok
    missing = await reg.run("note_get", {"key": "k"}, ctx)
    assert missing.outcome == "error"
    assert list(box.data_dir.glob(".tmp-*")) == []  # atomic writes leave no temp files


async def test_host_grep_and_glob_need_enabling_and_stay_in_the_sandbox(
    box: FileSandbox, reg: Registry
) -> None:
    box.write("a.txt", "alpha\nbeta\n")
    off = await reg.run("grep", {"pattern": "beta"}, ToolContext(files=box))
    assert off.outcome == "error"
    on = ToolContext(files=box, policy=ToolPolicy(enabled_host_tools=frozenset({"grep", "glob"})))
    hit = await reg.run("grep", {"pattern": "beta"}, on)
    assert hit.content_for_model == "a.txt:2: beta"
    assert (await reg.run("glob", {"pattern": "../*"}, on)).outcome == "error"


GREP_ON = ToolPolicy(enabled_host_tools=frozenset({"grep"}))


async def test_a_catastrophic_pattern_cannot_freeze_grep(box: FileSandbox, reg: Registry) -> None:
    # (a+)+$ on a's then a b backtracks exponentially in a backtracking engine, holding the GIL:
    # the whole daemon would freeze. grep's engine is linear, so this returns at once.
    box.write("long.txt", "a" * 900 + "b\n")
    run = reg.run("grep", {"pattern": "(a+)+$"}, ToolContext(files=box, policy=GREP_ON))
    result = await asyncio.wait_for(run, timeout=10.0)
    assert result.ok
    assert result.content_for_model == "(no match)"


@pytest.mark.parametrize(
    ("pattern", "feature"),
    [(r"(a)\1", "backreferences"), (r"(?=a)b", "lookaround"), (r"(?<!x)y", "lookaround")],
)
async def test_a_pattern_re2_cannot_run_gets_a_clear_error(
    box: FileSandbox, reg: Registry, pattern: str, feature: str
) -> None:
    box.write("a.txt", "aa\n")
    result = await reg.run("grep", {"pattern": pattern}, ToolContext(files=box, policy=GREP_ON))
    assert result.outcome == "error"
    message = str(result.content_for_model)
    assert "RE2" in message and feature in message


async def test_grep_still_speaks_python_regex_syntax(box: FileSandbox, reg: Registry) -> None:
    box.write("a.txt", "Alpha 12\nbeta\nGamma 7\n")
    ctx = ToolContext(files=box, policy=GREP_ON)
    hit = await reg.run("grep", {"pattern": r"(?i)^(?P<word>[a-z]+)\s\d+$"}, ctx)
    assert hit.content_for_model == "a.txt:1: Alpha 12\na.txt:3: Gamma 7"
    bad = await reg.run("grep", {"pattern": "(unclosed"}, ctx)
    assert bad.outcome == "error"
    assert "bad regular expression" in str(bad.content_for_model)
