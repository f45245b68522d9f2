"""``browy mcp config --client``: each client's entry, merged into its file without losing
anything else; ``doctor`` finds the entries again and says what is wrong with one."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest
import tomlkit

from nativehost.cli.main import main
from nativehost.mcp.client_config import configured_clients, snippet, write_entry


@pytest.fixture
def browy(tmp_path: Path) -> str:
    """A stand-in ``browy`` executable (the entries name it by absolute path)."""
    path = tmp_path / "bin" / "browy"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_each_client_gets_its_own_shape(browy: str, tmp_path: Path) -> None:
    claude = json.loads(snippet("claude-code", command=browy, home=None))
    assert claude == {"mcpServers": {"browy": {"command": browy, "args": ["mcp"]}}}
    vscode = json.loads(snippet("vscode", command=browy, home=tmp_path))
    assert vscode["servers"]["browy"] == {
        "type": "stdio",
        "command": browy,
        "args": ["mcp"],
        "env": {"BROWY_HOME": str(tmp_path)},
    }
    codex = tomlkit.parse(snippet("codex", command=browy, home=None)).unwrap()
    assert codex == {"mcp_servers": {"browy": {"command": browy, "args": ["mcp"]}}}


def test_write_merges_and_keeps_the_users_other_servers_and_comments(
    browy: str, tmp_path: Path
) -> None:
    user_home = tmp_path / "user"
    codex = user_home / ".codex" / "config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text('# my settings\nmodel = "o4"\n\n[mcp_servers.other]\ncommand = "x"\n')
    path = write_entry("codex", command=browy, home=None, cwd=tmp_path, user_home=user_home)
    assert path == codex
    text = codex.read_text()
    assert "# my settings" in text
    data = tomlkit.parse(text).unwrap()
    assert data["model"] == "o4"
    assert data["mcp_servers"]["other"] == {"command": "x"}
    assert data["mcp_servers"]["browy"] == {"command": browy, "args": ["mcp"]}

    project = tmp_path / "proj"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "db"}}}))
    write_entry("claude-code", command=browy, home=None, cwd=project, user_home=user_home)
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"db", "browy"}
    # Written twice: still one entry.
    write_entry("claude-code", command=browy, home=None, cwd=project, user_home=user_home)
    assert set(json.loads((project / ".mcp.json").read_text())["mcpServers"]) == {"db", "browy"}


def test_doctor_side_finds_entries_and_names_a_broken_one(browy: str, tmp_path: Path) -> None:
    user_home = tmp_path / "user"
    write_entry("cursor", command=browy, home=None, cwd=tmp_path, user_home=user_home)
    write_entry("vscode", command="/gone/browy", home=None, cwd=tmp_path, user_home=user_home)
    found = {e.client: e for e in configured_clients(tmp_path, user_home)}
    assert set(found) == {"cursor", "vscode"}
    assert found["cursor"].problem is None
    problem = found["vscode"].problem
    assert problem is not None and "/gone/browy" in problem and "--write" in problem


def test_the_command_prints_or_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"HOME": str(tmp_path / "user"), "BROWY_HOME": str(tmp_path / "bh")}
    out = io.StringIO()
    assert main(["mcp", "config", "--client", "claude-code"], env=env, stdout=out) == 0
    printed = json.loads(out.getvalue())
    entry = printed["mcpServers"]["browy"]
    assert entry["args"] == ["mcp"] and entry["env"] == {"BROWY_HOME": str(tmp_path / "bh")}
    out = io.StringIO()
    assert main(["mcp", "config", "--client", "vscode", "--write"], env=env, stdout=out) == 0
    assert (tmp_path / ".vscode" / "mcp.json").exists()
    err = io.StringIO()
    assert main(["mcp", "config", "--client", "emacs"], env=env, stderr=err) == 2
    assert "invalid choice" in err.getvalue()


def test_doctor_lists_configured_mcp_clients(
    browy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nativehost.setup.doctor import _check_mcp_clients

    monkeypatch.chdir(tmp_path)
    user_home = tmp_path / "user"
    assert _check_mcp_clients({"HOME": str(user_home)}) == []
    write_entry("cursor", command="/gone/browy", home=None, cwd=tmp_path, user_home=user_home)
    (check,) = _check_mcp_clients({"HOME": str(user_home)})
    assert check.name == "mcp client cursor" and check.warning
    assert check.fix == "browy mcp config --client cursor --write"
