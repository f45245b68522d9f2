"""``browy config``: show, get, set, set-key, unset and path.

``set`` and ``unset`` change one setting of ``config.toml`` and keep the rest of the file as the
user wrote it (:func:`nativehost.config.set_config_value`); ``set --help`` lists every setting with
its type and default, from the schema (:mod:`nativehost.config_help`, imported only when the help
is shown). ``set-key`` takes an API key without it reaching the shell's history or the screen: from
the terminal without echo, or from stdin when that is not a terminal; the key goes into a 0600 file,
``BROWY_HOME/keys/<provider>.key``, which ``[model] api_key_file`` names (config.toml itself then
holds no key).

Exit codes: 0 done; 1 ``get`` of a setting that is not set; 2 an unknown key, an invalid value or
file (nothing written), or no key given.
"""

from __future__ import annotations

import argparse
import getpass
import json
import warnings
from pathlib import Path
from typing import Any, cast

from nativehost.cli.context import BrowyParser, Context, UserError, exit_codes_epilog

__all__ = ["CONFIG_EXIT_CODES", "configure_config", "handle_config", "key_file_path"]

CONFIG_EXIT_CODES = {
    0: "success",
    1: "config get: the setting is not set",
    2: "an unknown key, an invalid value or config.toml (nothing is written), or no key given",
}
PROVIDERS = ("openai", "anthropic")


def key_file_path(home: Path, provider: str) -> Path:
    """Where ``browy config set-key`` keeps *provider*'s key."""
    return home / "keys" / f"{provider}.key"


def _settings_help() -> str:
    from nativehost.config_help import settings_help

    return settings_help()


def _setting_keys() -> list[str]:
    from nativehost.config_help import setting_keys

    return setting_keys()


def configure_config(p: argparse.ArgumentParser) -> None:
    epilog = exit_codes_epilog(CONFIG_EXIT_CODES)
    sub = p.add_subparsers(dest="config_action", metavar="ACTION", required=True)
    show = sub.add_parser(
        "show", help="print the effective settings (secrets hidden)", epilog=epilog
    )
    show.add_argument("--json", action="store_true", help="print them as one JSON object")
    get = sub.add_parser(
        "get",
        help="print one effective setting (environment applied; a key as ***)",
        epilog=epilog,
    )
    get.add_argument("key", metavar="KEY", help="SECTION.KEY, e.g. model.model")
    get.add_argument("--json", action="store_true", help="print the value as JSON")
    set_ = sub.add_parser(
        "set",
        help="set SECTION.KEY to VALUE in config.toml (comments kept)",
        description="Set SECTION.KEY to VALUE in config.toml. The value is checked against the "
        "settings below (nothing is written if it is wrong); the rest of the file, comments "
        "included, stays as it is. For an API key, use `browy config set-key`.",
        epilog=epilog,
    )
    cast(BrowyParser, set_).lazy_epilog = _settings_help
    set_.add_argument("key", metavar="KEY", help="e.g. model.model")
    set_.add_argument("value", metavar="VALUE", help='lists: a,b or ["a", "b"]')
    set_key = sub.add_parser(
        "set-key",
        help="store the model's API key without echo (or from stdin), outside config.toml",
        description="Read an API key from the terminal without echo, or the first line of stdin "
        "when stdin is not a terminal (e.g. `pass show openai | browy config set-key`), store it "
        "in BROWY_HOME/keys/PROVIDER.key (0600) and point [model] api_key_file at it. A key "
        "stored in config.toml ([model] api_key) is removed, since it would win. With PROVIDER, "
        "[model] provider is set to it too.",
        epilog=epilog,
    )
    set_key.add_argument(
        "provider",
        metavar="PROVIDER",
        nargs="?",
        choices=PROVIDERS,
        help=f"{' or '.join(PROVIDERS)} (default: the configured provider)",
    )
    unset = sub.add_parser("unset", help="remove SECTION.KEY from config.toml", epilog=epilog)
    unset.add_argument("key", metavar="KEY")
    sub.add_parser("path", help="print the path of config.toml", epilog=epilog)
    for action in (get, set_, unset):  # the shell completes KEY with the settings' names
        cast(BrowyParser, action).complete_words = _setting_keys


def _plain_value(value: object) -> object:
    from pydantic import SecretStr

    if isinstance(value, SecretStr):
        return "***"
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _get(ctx: Context, key: str, as_json: bool) -> int:
    from nativehost.config import load_config, split_key

    section, name, _model = split_key(key)
    value = _plain_value(getattr(getattr(load_config(ctx.home, env=ctx.env), section), name))
    if as_json:
        ctx.out(json.dumps(value))
    elif value is not None:
        ctx.out(_as_text(value))
    return 1 if value is None else 0


def _read_key(ctx: Context, provider: str) -> str:
    if ctx.stdin.isatty():
        try:
            with warnings.catch_warnings():
                # getpass falls back to reading with echo on when it cannot turn echo off: a
                # key on the screen is what this command is for avoiding.
                warnings.simplefilter("error", getpass.GetPassWarning)
                text = ctx.read_secret(f"API key for {provider} (not shown): ")
        except EOFError:
            text = ""
        except getpass.GetPassWarning:
            raise UserError(
                "cannot hide what is typed on this terminal: pipe the key on stdin instead "
                "(e.g. browy config set-key < keyfile)"
            ) from None
    else:
        text = ctx.stdin.readline()
    key = text.strip()
    if not key:
        raise UserError("no key given (type it at the prompt, or pipe it on stdin)")
    if any(ch.isspace() or not ch.isprintable() for ch in key):
        raise UserError("that does not look like an API key: it holds spaces or control characters")
    return key


def _set_key(ctx: Context, provider: str | None) -> int:
    from actors.runtime.private_files import private_dir, write_private
    from nativehost.config import load_config, set_config_value

    home = ctx.home
    current = load_config(home, env={})  # the file must be valid before anything changes
    provider = provider or current.model.provider
    key = _read_key(ctx, provider)
    path = key_file_path(home, provider)
    private_dir(path.parent)
    write_private(path, key + "\n", fsync=True)
    if current.model.provider != provider:
        set_config_value(home, "model.provider", provider)
        ctx.out(f"model.provider = {provider}")
    set_config_value(home, "model.api_key_file", str(path))
    if current.model.api_key is not None:
        set_config_value(home, "model.api_key", None)
        ctx.out("removed the key that was stored in config.toml")
    ctx.out(f"{provider} key stored in {path} (0600); model.api_key_file points at it")
    return 0


def handle_config(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.config import (
        config_path,
        dumps_toml,
        load_config,
        redacted_dict,
        set_config_value,
    )

    home = ctx.home
    action = args.config_action
    if action == "path":
        ctx.out(str(config_path(home)))
    elif action == "show":
        data: dict[str, Any] = redacted_dict(load_config(home, env=ctx.env))
        if args.json:
            ctx.out(json.dumps(data, indent=2))
        else:
            ctx.out(f"# {config_path(home)} (with environment overrides applied)")
            ctx.out(dumps_toml(data).rstrip("\n"))
    elif action == "get":
        return _get(ctx, args.key, args.json)
    elif action == "set":
        set_config_value(home, args.key, args.value)
        secret = args.key.endswith("api_key")
        ctx.out(f"{args.key} = {'***' if secret else args.value}  ({config_path(home)})")
        if secret:
            print(
                "browy: note: a key typed on the command line stays in your shell's history; "
                "`browy config set-key` reads it without echo and keeps it in a 0600 key file",
                file=ctx.stderr,
            )
    elif action == "set-key":
        return _set_key(ctx, args.provider)
    else:
        set_config_value(home, args.key, None)
        ctx.out(f"{args.key} removed ({config_path(home)})")
    return 0
