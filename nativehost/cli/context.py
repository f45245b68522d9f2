"""What every ``browy`` subcommand is given and returns: :class:`Context`, :class:`Command`, and
the parser they are built on (:class:`BrowyParser`).

The handlers live in ``nativehost.cli.*_commands`` modules by topic and the table of them,
:data:`nativehost.cli.main.COMMANDS`, in :mod:`nativehost.cli.main`. A handler raises
:class:`UserError` for something the user must fix (exit code 2, one ``browy: error: ...`` line).
"""

from __future__ import annotations

import argparse
import getpass
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NoReturn

from nativehost.home import browy_home
from nativehost.setup.platforms import Platform, UnsupportedPlatform

__all__ = [
    "COMMON_EXIT_CODES",
    "BrowyParser",
    "Command",
    "Context",
    "Handler",
    "UsageError",
    "UserError",
    "exit_codes_epilog",
    "seconds",
    "wants_color",
]


class UserError(Exception):
    """Something the user must fix; printed as ``browy: error: <message>``, exit code 2."""


class UsageError(Exception):
    """Bad arguments: the usage line and ``browy: error: ...``, exit code 2."""


#: Every command may end with these (besides its own codes).
COMMON_EXIT_CODES: dict[int, str] = {
    2: "bad arguments, settings or environment (one 'browy: error: ...' line, no traceback)",
    130: "interrupted (Ctrl-C)",
}


def seconds(text: str) -> float:
    """An argparse type: a time in seconds, more than 0 and finite (``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"seconds must be more than 0 and finite, not {text}")
    return value


def exit_codes_epilog(codes: Mapping[int, str]) -> str:
    """The ``exit codes:`` paragraph of a ``--help``: *codes*, then the common ones."""
    merged = {**codes, **{k: v for k, v in COMMON_EXIT_CODES.items() if k not in codes}}
    return "exit codes:\n" + "\n".join(f"  {k:<3}  {v}" for k, v in sorted(merged.items()))


class _Formatter(argparse.HelpFormatter):
    """Fills one-paragraph descriptions to the terminal's width; text with line breaks (the
    exit codes, the settings table) is kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class BrowyParser(argparse.ArgumentParser):
    """argparse, but errors raise :class:`UsageError` instead of exiting (main() decides the exit
    code), the epilog keeps its line breaks, and a part of the epilog may be made only when help
    is shown (:attr:`lazy_epilog`), so what it imports stays out of every other run."""

    lazy_epilog: Callable[[], str] | None = None
    #: The words a shell may complete this command's first positional argument with (made when
    #: ``browy completion`` runs).
    complete_words: Callable[[], list[str]] | None = None

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.format_usage() + f"{self.prog}: error: {message}")

    def format_help(self) -> str:
        if self.lazy_epilog is not None:
            extra, self.lazy_epilog = self.lazy_epilog(), None
            self.epilog = f"{extra}\n\n{self.epilog}" if self.epilog else extra
        return super().format_help()


def wants_color(stream: IO[str], env: Mapping[str, str]) -> bool:
    """Colour only for a terminal, and never when ``NO_COLOR`` is set to anything but the empty
    string (no-color.org) or the terminal is ``dumb``."""
    if env.get("NO_COLOR", "") != "" or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


@dataclass(slots=True)
class Context:
    """What every handler needs; injectable so tests run against a temporary HOME and root."""

    env: Mapping[str, str]
    stdout: IO[str]
    stderr: IO[str]
    _platform: Platform | None = field(default=None)
    stdin: IO[str] = field(default_factory=lambda: sys.stdin)
    #: Reads a secret from the terminal without echo (``getpass``); a seam for tests.
    read_secret: Callable[[str], str] = getpass.getpass

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

    @property
    def color(self) -> bool:
        """Whether stdout gets ANSI colours (:func:`wants_color`)."""
        return wants_color(self.stdout, self.env)

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
    #: Exit codes of the command besides the common ones (0 is always listed).
    exit_codes: Mapping[int, str] = field(default_factory=lambda: {0: "success"})
