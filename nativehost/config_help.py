"""Every setting of ``config.toml`` as the command line tells it: key, type, default, limits.

Read from the schema (:class:`nativehost.config_schema.Config`), so ``browy config set --help`` and
the shell completion of ``config get|set|unset KEY`` never drift from what is validated.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from nativehost.config_schema import Config

__all__ = ["Setting", "setting_keys", "settings", "settings_help"]


@dataclass(frozen=True, slots=True)
class Setting:
    key: str  # section.name
    type: str  # as a user types it: "number > 0", "one of: unix, tcp", ...
    default: str  # as it would be typed, or "(not set)"


def _base(annotation: Any) -> tuple[Any, bool]:
    """The annotation without ``| None``, and whether None was allowed."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _limits(field: FieldInfo) -> str:
    parts = []
    for rule in field.metadata:
        if isinstance(rule, Ge):
            parts.append(f">= {rule.ge}")
        elif isinstance(rule, Gt):
            parts.append(f"> {rule.gt}")
        elif isinstance(rule, Le):
            parts.append(f"<= {rule.le}")
        elif isinstance(rule, Lt):
            parts.append(f"< {rule.lt}")
    return ", ".join(parts)


def _type_of(field: FieldInfo) -> str:
    annotation, _optional = _base(field.annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return "one of: " + ", ".join(str(a) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) is tuple:
        return "list: a,b"
    names = {bool: "true|false", int: "integer", float: "number", str: "text", Path: "path"}
    if annotation is SecretStr:
        return "secret text (use: browy config set-key)"
    name = names.get(annotation, getattr(annotation, "__name__", str(annotation)))
    limits = _limits(field)
    return f"{name} {limits}" if limits else name


def _shown(value: object) -> str:
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def settings() -> list[Setting]:
    """Every setting, in the schema's order (section by section)."""
    rows = []
    for section, outer in Config.model_fields.items():
        model: type[BaseModel] = outer.annotation  # type: ignore[assignment]
        for name, field in model.model_fields.items():
            default = field.get_default(call_default_factory=True)
            rows.append(Setting(f"{section}.{name}", _type_of(field), _shown(default)))
    return rows


def setting_keys() -> list[str]:
    return [s.key for s in settings()]


def settings_help() -> str:
    """The table ``browy config set --help`` ends with."""
    rows = settings()
    key_w = max(len(s.key) for s in rows)
    type_w = max(len(s.type) for s in rows)
    lines = ["settings (KEY, type, default):"]
    lines += [f"  {s.key:<{key_w}}  {s.type:<{type_w}}  {s.default}" for s in rows]
    return "\n".join(lines)
