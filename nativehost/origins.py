"""Which extensions may talk to the native host: ids, origins, and the relay's reader.

This module is imported by the relay (the process Chrome starts for every ``connectNative``), so it
uses the standard library only: ``tomllib`` reads ``config.toml``; no pydantic, no models. The full,
validated configuration lives in :mod:`nativehost.config`.

Rules (architecture.md sections 6 and 7):

- Our own extension's id is always allowed.
- ``[host] allowed_extension_ids`` adds more ids (e.g. an unpacked copy with another key).
- The published Browy extension ids are allowed only when ``[host] compat_browy = true``.

An origin is ``chrome-extension://<id>/``; Chrome requires the trailing slash in a host manifest's
``allowed_origins`` ("Specified native messaging host not found" otherwise) and passes the same
string as the host's first argument.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "BROWY_PUBLISHED_IDS",
    "CONFIG_FILE_NAME",
    "HOST_NAME",
    "OUR_EXTENSION_ID",
    "effective_extension_ids",
    "extension_id_of",
    "is_extension_id",
    "origin_of",
    "read_allowed_origins",
]

HOST_NAME = "com.browy.host"
CONFIG_FILE_NAME = "config.toml"

# Fixed by the "key" of extension/manifest.json.
OUR_EXTENSION_ID = "kmfpcmoidebagkbcjhngabjpcgedcmna"
# The published Browy extensions (Chrome Web Store); served only with compat_browy.
BROWY_PUBLISHED_IDS: tuple[str, ...] = (
    "lfeljbgjlkoabhepbkdbjgpbhfmpgmkc",
    "iondecjdokngnlkfpipgolgkfegpmjca",
)

# An extension id is 32 letters a-p: sha256 of the public key, hex digits mapped 0-f -> a-p.
_ID_RE = re.compile(r"[a-p]{32}")
_ORIGIN_RE = re.compile(r"chrome-extension://([a-p]{32})/")


def is_extension_id(value: str) -> bool:
    """True if *value* has the shape of a Chromium extension id (32 letters ``a``-``p``)."""
    return _ID_RE.fullmatch(value) is not None


def origin_of(extension_id: str) -> str:
    """``chrome-extension://<id>/``, with the trailing slash Chrome insists on."""
    return f"chrome-extension://{extension_id}/"


def extension_id_of(origin: str) -> str | None:
    """The id in a well-formed origin (trailing slash included), else None."""
    match = _ORIGIN_RE.fullmatch(origin)
    return match.group(1) if match else None


def effective_extension_ids(listed: Iterable[str], compat_browy: bool) -> list[str]:
    """The ids that may connect: ours, then *listed*, then the published ones if *compat_browy*.

    Malformed ids are dropped, and so are published ids when *compat_browy* is false (the
    validated config refuses them; the relay's reader must not let them through either).
    Order is kept and duplicates removed, so the result is stable for manifests and tests.
    """
    ids = [OUR_EXTENSION_ID]
    ids.extend(i for i in listed if is_extension_id(i) and i not in BROWY_PUBLISHED_IDS)
    if compat_browy:
        ids.extend(BROWY_PUBLISHED_IDS)
    return list(dict.fromkeys(ids))


def read_allowed_origins(home: Path) -> list[str]:
    """The allowed caller origins for ``home/config.toml``, read with ``tomllib`` only.

    Never raises: a missing, unreadable or invalid file yields our own origin alone (the relay
    then still serves our extension, and ``browy doctor`` reports the broken file).
    """
    listed: list[str] = []
    compat = False
    try:
        with (home / CONFIG_FILE_NAME).open("rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        data = {}
    host = data.get("host")
    if isinstance(host, dict):
        raw_ids = host.get("allowed_extension_ids")
        if isinstance(raw_ids, list):
            listed = [i for i in raw_ids if isinstance(i, str)]
        compat = host.get("compat_browy") is True
    return [origin_of(i) for i in effective_extension_ids(listed, compat)]
