"""``browy doctor``'s checks of the native messaging host manifests (``com.browy.host.json``).

The messages name Chrome's own error where a mistake produces one, because that is what the user
sees in the extension (real-browser-tests.md, "Native messaging host registration"):

- missing trailing slash in ``allowed_origins``  -> "Specified native messaging host not found."
- our id missing                                 -> "Access to the specified native messaging
                                                      host is forbidden."
- ``path`` relative, missing, not executable, no working shebang
                                                 -> "Error when communicating with the native
                                                      messaging host."

:func:`manifests_to_check` finds the manifests (in every browser's directory, and those
``browy install-host`` recorded); :func:`check_manifest` checks one. Nothing here changes anything
on disk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from nativehost.origins import HOST_NAME, OUR_EXTENSION_ID, extension_id_of
from nativehost.setup.check import Check
from nativehost.setup.install import MANIFEST_NAME, read_install_record
from nativehost.setup.platforms import Platform

__all__ = [
    "CHROME_FORBIDDEN",
    "CHROME_NOT_FOUND",
    "CHROME_START_FAILED",
    "check_manifest",
    "manifests_to_check",
]

CHROME_NOT_FOUND = "Specified native messaging host not found."
CHROME_FORBIDDEN = "Access to the specified native messaging host is forbidden."
CHROME_START_FAILED = "Error when communicating with the native messaging host."


def _check_executable(target: Path) -> str | None:
    """None if Chrome can start *target*, else why not."""
    if not target.exists():
        return f"path {target} does not exist"
    if not target.is_file():
        return f"path {target} is not a file"
    if not os.access(target, os.X_OK):
        return f"path {target} is not executable (chmod +x)"
    try:
        with target.open("rb") as f:
            head = f.read(256)
    except OSError as exc:
        return f"path {target} cannot be read: {exc}"
    if head.startswith((b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")):
        return None  # a native executable
    if not head.startswith(b"#!"):
        return f"path {target} is a script without a '#!' line"
    line = head[2:].split(b"\n", 1)[0].strip()
    interpreter = line.split()[0].decode(errors="replace") if line else ""
    if not interpreter.startswith("/"):
        return f"path {target} has a bad shebang {line.decode(errors='replace')!r}"
    if not os.access(interpreter, os.X_OK):
        return f"path {target} names interpreter {interpreter}, which cannot be run"
    return None


def check_manifest(
    label: str, manifest_file: Path, config_origins: list[str] | None
) -> list[Check]:
    """The checks of one ``com.browy.host.json``; *config_origins* None (the config is
    invalid, reported elsewhere) skips the comparison with the config."""
    name = f"manifest {label}"
    try:
        data = json.loads(manifest_file.read_text(encoding="utf-8"))
    except ValueError as exc:
        return [
            Check(
                name,
                False,
                f"{manifest_file} is not valid JSON ({exc}); Chrome ignores it: "
                f'"{CHROME_NOT_FOUND}"',
                "browy install-host",
            )
        ]
    except OSError as exc:
        return [Check(name, False, f"{manifest_file} cannot be read: {exc}", "browy install-host")]
    if not isinstance(data, dict):
        return [Check(name, False, f"{manifest_file} is not a JSON object", "browy install-host")]

    checks: list[Check] = []
    problems: list[str] = []
    if data.get("name") != HOST_NAME:
        problems.append(f"name is {data.get('name')!r}, not {HOST_NAME!r}")
    if data.get("type") != "stdio":
        problems.append(f"type is {data.get('type')!r}, not 'stdio'")
    checks.append(
        Check(
            f"{name} name/type",
            not problems,
            "; ".join(problems) or f"{manifest_file}",
            "browy install-host" if problems else "",
        )
    )

    raw_path = data.get("path")
    if not isinstance(raw_path, str) or not raw_path:
        path_problem: str | None = "path is missing"
    elif not os.path.isabs(raw_path):
        path_problem = f"path {raw_path!r} is relative; Chrome needs an absolute path"
    else:
        path_problem = _check_executable(Path(raw_path))
    checks.append(
        Check(
            f"{name} path",
            path_problem is None,
            f'{path_problem}: Chrome says "{CHROME_START_FAILED}"'
            if path_problem
            else f"{raw_path} is executable",
            "browy install-host" if path_problem else "",
        )
    )

    origins = data.get("allowed_origins")
    origin_problems: list[str] = []
    if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
        origin_problems.append("allowed_origins is not a list of strings")
        origins = []
    for o in origins:
        if extension_id_of(o) is None:
            if extension_id_of(o + "/") is not None:
                origin_problems.append(
                    f'{o!r} lacks the trailing slash: Chrome says "{CHROME_NOT_FOUND}"'
                )
            else:
                origin_problems.append(f"{o!r} is not chrome-extension://<id>/")
    if isinstance(data.get("allowed_origins"), list) and origins is not None:
        ids = {extension_id_of(o) or extension_id_of(o + "/") for o in origins}
        if OUR_EXTENSION_ID not in ids:
            origin_problems.append(
                f'our extension {OUR_EXTENSION_ID} is not allowed: Chrome says "{CHROME_FORBIDDEN}"'
            )
    checks.append(
        Check(
            f"{name} allowed_origins",
            not origin_problems,
            "; ".join(origin_problems) or f"{len(origins)} origin(s), well formed",
            "browy install-host" if origin_problems else "",
        )
    )

    if not origin_problems and config_origins is not None:
        missing = [o for o in config_origins if o not in origins]
        extra = [o for o in origins if o not in config_origins]
        agree = not missing and not extra
        detail = "same extensions as config.toml [host]"
        if not agree:
            parts = []
            if missing:
                parts.append("config allows but manifest lacks " + ", ".join(missing))
            if extra:
                parts.append(
                    "manifest allows but config (the relay's check) lacks " + ", ".join(extra)
                )
            detail = "; ".join(parts)
        checks.append(
            Check(
                f"{name} matches config",
                agree,
                detail,
                "browy install-host (rewrites the manifests from config.toml)" if not agree else "",
            )
        )
    return checks


def manifests_to_check(platform: Platform, home: Path) -> list[tuple[str, Path]]:
    """(label, path) of every manifest of ours: in the browsers' directories, and recorded."""
    found: dict[Path, str] = {}
    for browser, directory in platform.candidate_manifest_dirs():
        candidate = directory / MANIFEST_NAME
        if candidate.exists() or candidate.is_symlink():
            found.setdefault(candidate, browser)
    for recorded in read_install_record(home)["manifests"]:
        found.setdefault(Path(recorded), "custom")
    return [(f"{browser} ({path.parent})", path) for path, browser in found.items()]
