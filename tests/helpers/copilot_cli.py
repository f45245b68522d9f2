"""The scripted Copilot CLI stand-in (:mod:`tests.helpers.copilot_standin`), set up for a test.

:class:`StandinCli` writes the scenario and a small executable wrapper (the SDK's ``cli_path``;
the SDK runs it with ``--headless --stdio …`` like the real CLI) into a folder, and reads back
what the stand-in saw: every request (:meth:`requests`) and how many CLI processes were started.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["StandinCli"]

STANDIN = Path(__file__).with_name("copilot_standin.py")


class StandinCli:
    def __init__(self, folder: Path, *, authed: bool = True, **script: Any) -> None:
        self.dir = folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "script.json").write_text(json.dumps(script))
        if authed:
            (folder / "authed").write_text("octocat")
        self.path = folder / "copilot"
        self.path.write_text(
            f'#!/bin/sh\nSTANDIN_DIR="{folder}" exec "{sys.executable}" "{STANDIN}" "$@"\n'
        )
        self.path.chmod(0o755)

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        log = self.dir / "log.jsonl"
        if not log.exists():
            return []
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        return [e for e in entries if method is None or e["method"] == method]

    @property
    def starts(self) -> int:
        starts = self.dir / "starts"
        return len(starts.read_text().split()) if starts.exists() else 0

    @property
    def authed(self) -> bool:
        return (self.dir / "authed").exists()
