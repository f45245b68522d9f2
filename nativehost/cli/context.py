"""What every ``browy`` subcommand is given and returns: :class:`Context`, :class:`Command`.

The handlers live in ``nativehost.cli_*`` modules by topic and the table of them,
:data:`nativehost.cli.main.COMMANDS`, in :mod:`nativehost.cli.main`. A handler raises
:class:`UserError` for something the user must fix (exit code 2, one ``browy: error: ...`` line).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from nativehost.home import browy_home
from nativehost.setup.platforms import Platform, UnsupportedPlatform

__all__ = ["Command", "Context", "Handler", "UserError"]


class UserError(Exception):
    """Something the user must fix; printed as ``browy: error: <message>``, exit code 2."""


@dataclass(slots=True)
class Context:
    """What every handler needs; injectable so tests run against a temporary HOME and root."""

    env: Mapping[str, str]
    stdout: IO[str]
    stderr: IO[str]
    _platform: Platform | None = field(default=None)

    @property
    def home(self) -> Path:
        return browy_home(dict(self.env))

    @property
    def platform(self) -> Platform:
        if self._platform is None:
            try:
                self._platform = Platform.current(self.env)
            except UnsupportedPlatform as exc:
                raise UserError(str(exc)) from None
        return self._platform

    def out(self, text: str = "") -> None:
        print(text, file=self.stdout)


Handler = Callable[[argparse.Namespace, Context], int]


@dataclass(frozen=True, slots=True)
class Command:
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    handler: Handler
    # Every argument after the name (``--help`` included) goes to the handler as ``args.args``.
    passthrough: bool = False
