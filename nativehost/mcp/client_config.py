"""``browy mcp config --client NAME [--write]``: the MCP client's configuration for Browy.

Each client keeps its MCP servers in its own file and shape:

======================  ===========================================  ==========================
client                  file (``--write``)                           shape
======================  ===========================================  ==========================
claude-code             ``.mcp.json`` in this folder (project)       ``mcpServers.browy``
codex                   ``~/.codex/config.toml``                     ``[mcp_servers.browy]``
cursor                  ``~/.cursor/mcp.json``                       ``mcpServers.browy``
vscode                  ``.vscode/mcp.json`` in this folder          ``servers.browy``
======================  ===========================================  ==========================

The entry runs this installation's ``browy`` by its absolute path (a client's PATH is often not
the shell's) and names ``BROWY_HOME`` when it is not the default. ``--write`` merges the entry
into the file and keeps everything else (TOML through tomlkit, so the user's comments stay).
:func:`configured_clients` finds the entries again for ``browy doctor``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

__all__ = [
    "CLIENTS",
    "ClientEntry",
    "browy_command",
    "configured_clients",
    "snippet",
    "write_entry",
]

SERVER_NAME = "browy"


@dataclass(frozen=True, slots=True)
class _Client:
    name: str
    path: str  # "~/…" for the user's home, else relative to the working folder
    key: str  # the table that holds the servers
    toml: bool = False
    stdio_type: bool = False  # VS Code wants "type": "stdio"


CLIENTS: dict[str, _Client] = {
    c.name: c
    for c in (
        _Client("claude-code", ".mcp.json", "mcpServers"),
        _Client("codex", "~/.codex/config.toml", "mcp_servers", toml=True),
        _Client("cursor", "~/.cursor/mcp.json", "mcpServers"),
        _Client("vscode", ".vscode/mcp.json", "servers", stdio_type=True),
    )
}


def browy_command() -> str:
    """This installation's ``browy`` (absolute), as a client should start it."""
    here = Path(sys.argv[0])
    if here.name == "browy" and here.exists():
        return str(here.resolve())
    beside = Path(sys.executable).with_name("browy")
    if beside.exists():
        return str(beside)
    return shutil.which("browy") or "browy"


def _entry(client: _Client, command: str, home: Path | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": command, "args": ["mcp"]}
    if client.stdio_type:
        entry = {"type": "stdio", **entry}
    if home is not None:
        entry["env"] = {"BROWY_HOME": str(home)}
    return entry


def _file(client: _Client, cwd: Path, user_home: Path) -> Path:
    if client.path.startswith("~/"):
        return user_home / client.path[2:]
    return cwd / client.path


def snippet(name: str, *, command: str, home: Path | None) -> str:
    """What to put in the client's file (the ``browy`` entry in its table)."""
    client = CLIENTS[name]
    entry = _entry(client, command, home)
    if client.toml:
        doc = tomlkit.document()
        servers = tomlkit.table(is_super_table=True)
        servers[SERVER_NAME] = entry
        doc[client.key] = servers
        return tomlkit.dumps(doc)
    return json.dumps({client.key: {SERVER_NAME: entry}}, indent=2) + "\n"


def write_entry(name: str, *, command: str, home: Path | None, cwd: Path, user_home: Path) -> Path:
    """Merge the entry into the client's file (made if missing); returns the file."""
    client = CLIENTS[name]
    path = _file(client, cwd, user_home)
    entry = _entry(client, command, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if client.toml:
        doc = tomlkit.parse(text)
        servers = doc.get(client.key)
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc[client.key] = servers
        servers[SERVER_NAME] = entry
        new = tomlkit.dumps(doc)
    else:
        data = json.loads(text) if text.strip() else {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: not a JSON object")
        table = data.setdefault(client.key, {})
        if not isinstance(table, dict):
            raise ValueError(f"{path}: {client.key} is not an object")
        table[SERVER_NAME] = entry
        new = json.dumps(data, indent=2) + "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)
    return path


@dataclass(frozen=True, slots=True)
class ClientEntry:
    """A Browy entry found in a client's file, and what is wrong with it (None: fine)."""

    client: str
    path: Path
    command: str
    problem: str | None


def _read_entry(client: _Client, path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
        data: Any = tomlkit.parse(text).unwrap() if client.toml else json.loads(text)
    except (OSError, ValueError, tomlkit.exceptions.TOMLKitError):
        return None
    table = data.get(client.key) if isinstance(data, dict) else None
    entry = table.get(SERVER_NAME) if isinstance(table, dict) else None
    return entry if isinstance(entry, dict) else None


def configured_clients(cwd: Path, user_home: Path) -> list[ClientEntry]:
    """The clients whose files name a ``browy`` server, each with its problem if any."""
    found: list[ClientEntry] = []
    for client in CLIENTS.values():
        path = _file(client, cwd, user_home)
        if not path.exists():
            continue
        entry = _read_entry(client, path)
        if entry is None:
            continue
        command = str(entry.get("command", ""))
        args = entry.get("args")
        problem = None
        resolved = shutil.which(command) if command else None
        if not command or resolved is None:
            problem = f"its command {command!r} is not found: run `browy mcp config --client "
            problem += f"{client.name} --write` again"
        elif not isinstance(args, list) or not args or args[0] != "mcp":
            problem = f"its args {args!r} do not start with 'mcp'"
        found.append(ClientEntry(client.name, path, command, problem))
    return found
