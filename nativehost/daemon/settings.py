"""The settings the options page may read and change (v2 ``config.get`` / ``config.set``), and
``doctor.run``: the daemon-side service behind them (protocol.md section 4).

What the options page sees is a curated subset of ``config.toml``, as a JSON-schema-ish object
(``{type: "object", properties: {section: {type: "object", properties: {...}}}}``) whose values go
back as dotted keys (``"model.base_url"``). Rules:

- Every change is validated against the full config before anything is written; a bad value is
  refused with a message naming the field, and the file is left as it was (all or nothing).
- Secrets are write-only: the API key is never sent back (an empty value keeps the stored key).
- Host code (``tools.allow_host_code``) is shown read-only: it can be turned on only from the
  terminal (``browy config set tools.allow_host_code true``), never from a browser page
  (architecture.md section 7).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.runtime.private_files import write_private
from nativehost.config import config_path, load_config, set_config_value
from nativehost.config_schema import Config, ConfigError
from nativehost.setup.doctor import run_checks
from nativehost.setup.platforms import Platform

__all__ = ["EDITABLE", "HOST_TOOL_HELP", "HostSettings", "SettingsError"]

#: What each host tool can do, as the options page says it.
HOST_TOOL_HELP: dict[str, str] = {
    "write_file": "Create or overwrite text files in Browy's files folder "
    "(BROWY_HOME/data/files); nowhere else.",
    "grep": "Search the files in Browy's files folder with a regular expression.",
    "glob": "List the files in Browy's files folder that match a pattern.",
    "web_fetch": "Download any web page or file from this computer (not from your browser: "
    "without your cookies or logins) and read its text.",
    "bash": "Run any shell command on this computer, as you, starting in Browy's files folder: "
    "it can read, change or delete anything your account can.",
    "run_script": "Run a Python, Node or shell program on this computer, as you: it can do "
    "anything your account can.",
}

#: dotted key -> JSON-schema-ish field for the options page.
EDITABLE: dict[str, dict[str, Any]] = {
    "model.base_url": {
        "type": "string",
        "title": "Model server URL",
        "description": "An OpenAI-compatible API, e.g. https://api.openai.com/v1 or "
        "http://localhost:11434/v1 (Ollama)",
    },
    "model.model": {"type": "string", "title": "Model", "description": "e.g. gpt-4o-mini"},
    "model.api_key": {
        "type": "string",
        "title": "API key",
        "format": "password",
        "writeOnly": True,
        "description": "Stored in config.toml (0600). Leave empty to keep the current key.",
    },
    "tools.approval_mode": {
        "type": "string",
        "enum": ["never", "page-changing", "always"],
        "title": "Ask before acting",
        "description": "page-changing: ask before clicks, typing, navigation and downloads",
    },
    "tools.disabled_tools": {"type": "array", "title": "Disabled tools", "items": {"enum": []}},
    "tools.enabled_host_tools": {
        "type": "array",
        "title": "Host tools",
        "description": "Tools that work on this computer rather than in the browser. Each is "
        "off until you switch it on here; bash and run_script also need host code allowed "
        "from a terminal (browy config set tools.allow_host_code true).",
        "items": {"enum": list(HOST_TOOL_HELP), "descriptions": HOST_TOOL_HELP},
    },
    "daemon.turn_concurrency": {
        "type": "integer",
        "title": "Turns at once",
        "description": "How many chats may run at the same time (others wait in line)",
    },
    "retention.max_chats": {"type": "integer", "title": "Chats kept"},
    "retention.max_age_days": {"type": "integer", "title": "Days chats are kept"},
}
READ_ONLY: dict[str, dict[str, Any]] = {
    "tools.secret_reads": {
        "type": "string",
        "enum": ["ask", "allow"],
        "title": "Cookie and storage reads (read-only here)",
        "readOnly": True,
        "description": "ask: every time; allow: without asking. Change it from a terminal: "
        "browy config set tools.secret_reads allow",
    },
    "tools.allow_host_code": {
        "type": "boolean",
        "title": "Host code (read-only here)",
        "readOnly": True,
        "description": "Turn on from a terminal: browy config set tools.allow_host_code true",
    },
}


class SettingsError(ValueError):
    """A refused change; the message names the field and is safe to show."""


@dataclass(slots=True)
class HostSettings:
    home: Path
    tool_names: tuple[str, ...] = ()
    #: Ends this daemon (``daemon.restart``); the relays start the next one.
    on_restart: Callable[[], None] | None = None

    def _schema(self) -> dict[str, Any]:
        sections: dict[str, dict[str, Any]] = {}
        for key, spec in {**EDITABLE, **READ_ONLY}.items():
            section, name = key.split(".", 1)
            field = dict(spec)
            if key == "tools.disabled_tools":
                field["items"] = {"enum": list(self.tool_names)}
            group = sections.setdefault(
                section, {"type": "object", "title": section.capitalize(), "properties": {}}
            )
            group["properties"][name] = field
        return {"type": "object", "properties": sections}

    def _values(self, config: Config) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for key in [*EDITABLE, *READ_ONLY]:
            section, name = key.split(".", 1)
            if key == "model.api_key":
                values[key] = ""  # write-only: never sent back
                continue
            value = getattr(getattr(config, section), name)
            values[key] = list(value) if isinstance(value, tuple) else value
        return values

    def get(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(values, schema) as the file says (the environment is not shown or changed here)."""
        return self._values(load_config(self.home, env={})), self._schema()

    def allow_mcp_client(self, name: str) -> None:
        """Add *name* to ``[mcp] allowed_clients`` (the user chose "always" in the panel)."""
        current = load_config(self.home, env={}).mcp.allowed_clients
        if name not in current:
            set_config_value(self.home, "mcp.allowed_clients", [*current, name])

    def set(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Apply *values* (dotted keys) all or nothing; raise :class:`SettingsError`."""
        path = config_path(self.home)
        before = path.read_bytes() if path.exists() else None
        try:
            for key, value in values.items():
                if key not in EDITABLE:
                    if key in READ_ONLY:
                        raise SettingsError(f"{key} can only be changed from a terminal")
                    raise SettingsError(f"{key} is not a setting the options page may change")
                if key == "model.api_key" and not value:
                    continue  # empty: keep the stored key
                set_config_value(self.home, key, value if value != "" else None)
        except (ConfigError, SettingsError) as exc:
            if before is None:
                path.unlink(missing_ok=True)
            else:
                write_private(path, before)
            raise SettingsError(str(exc).replace("\n", "; ")) from None
        return self.get()

    def restart(self) -> None:
        if self.on_restart is not None:
            self.on_restart()

    async def doctor(self) -> list[dict[str, Any]]:
        """The same checks as ``browy doctor``, run off the event loop."""

        def run() -> list[dict[str, Any]]:
            checks = run_checks(Platform.current(), self.home)
            return [
                {"name": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix or None}
                for c in checks
            ]

        return await asyncio.to_thread(run)
