"""``browy doctor``: find what stops the extension, the host and the daemon from meeting.

Each check is one :class:`Check` — a name, ok or not, a one-line detail and, when not ok, a fix.
The messages name Chrome's own error where a mistake produces one, because that is what the user
sees in the extension (real-browser-tests.md, "Native messaging host registration"):

- missing trailing slash in ``allowed_origins``  -> "Specified native messaging host not found."
- our id missing                                 -> "Access to the specified native messaging
                                                      host is forbidden."
- ``path`` relative, missing, not executable, no working shebang
                                                 -> "Error when communicating with the native
                                                      messaging host."

Checks run in this order: config, manifests, run directory, daemon, model, sandboxed browsers.
None of them changes anything on disk.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nativehost.config import load_config
from nativehost.config_schema import Config, ConfigError
from nativehost.daemon import instance
from nativehost.home import run_dir, socket_path
from nativehost.origins import HOST_NAME, OUR_EXTENSION_ID, extension_id_of
from nativehost.setup.install import MANIFEST_NAME, read_install_record
from nativehost.setup.platforms import Platform

__all__ = [
    "CHROME_FORBIDDEN",
    "CHROME_NOT_FOUND",
    "CHROME_START_FAILED",
    "Check",
    "check_manifest",
    "exit_code",
    "format_checks",
    "run_checks",
]

CHROME_NOT_FOUND = "Specified native messaging host not found."
CHROME_FORBIDDEN = "Access to the specified native messaging host is forbidden."
CHROME_START_FAILED = "Error when communicating with the native messaging host."

_KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False  # ok, but worth reading

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def exit_code(checks: list[Check]) -> int:
    return 0 if all(c.ok for c in checks) else 1


def format_checks(checks: list[Check]) -> str:
    """One line per check: ``ok  ``, ``warn``, ``FAIL``, the name, the detail, the fix."""
    lines = []
    for c in checks:
        tag = "FAIL" if not c.ok else ("warn" if c.warning else "ok  ")
        line = f"{tag}  {c.name}: {c.detail}"
        if c.fix and (not c.ok or c.warning):
            line += f" -> fix: {c.fix}"
        lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Manifests


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


def _manifests_to_check(platform: Platform, home: Path) -> list[tuple[str, Path]]:
    found: dict[Path, str] = {}
    for browser, directory in platform.candidate_manifest_dirs():
        candidate = directory / MANIFEST_NAME
        if candidate.exists() or candidate.is_symlink():
            found.setdefault(candidate, browser)
    for recorded in read_install_record(home)["manifests"]:
        found.setdefault(Path(recorded), "custom")
    return [(f"{browser} ({path.parent})", path) for path, browser in found.items()]


# --------------------------------------------------------------------------------------------
# Run directory, daemon, model


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _check_run_dir(home: Path) -> list[Check]:
    checks: list[Check] = []
    rdir = run_dir(home)
    if not rdir.exists():
        checks.append(Check("run directory", True, f"{rdir} not created yet (the daemon makes it)"))
    else:
        st = rdir.lstat()
        mode = stat.S_IMODE(st.st_mode)
        bad = mode & 0o077 or st.st_uid != os.getuid() or not stat.S_ISDIR(st.st_mode)
        checks.append(
            Check(
                "run directory",
                not bad,
                f"{rdir} mode {mode:04o}" + ("" if not bad else ": other users can reach it"),
                f"chmod 700 {rdir}" if bad else "",
            )
        )
    sock = socket_path(home)
    if sock.exists() or sock.is_symlink():
        st = sock.lstat()
        parent_mode = _mode(sock.parent)
        problems = []
        if not stat.S_ISSOCK(st.st_mode):
            problems.append("is not a socket")
        if st.st_uid != os.getuid():
            problems.append("belongs to another user")
        if parent_mode & 0o077:
            problems.append(f"its directory has mode {parent_mode:04o}")
        checks.append(
            Check(
                "daemon socket",
                not problems,
                f"{sock} " + (", ".join(problems) if problems else "private"),
                "browy daemon stop, then remove it" if problems else "",
            )
        )
    return checks


DaemonStatusFn = Callable[[Path], object]


def _check_daemon(home: Path, daemon_status: DaemonStatusFn) -> Check:
    try:
        status = daemon_status(home)
    except Exception as exc:  # a doctor reports, it does not crash
        return Check(
            "daemon", False, f"status check failed: {exc}", "browy daemon stop; browy logs"
        )
    running = getattr(status, "running", None)
    error = getattr(status, "error", None)
    if error:
        return Check("daemon", False, str(status), "browy daemon stop; browy logs")
    if running is False:
        return Check("daemon", True, f"{status} (it starts on demand when the extension connects)")
    return Check("daemon", True, str(status))


def _check_model(home: Path, config: Config, env: Mapping[str, str]) -> list[Check]:
    model = config.model
    checks: list[Check] = []
    if model.model:
        checks.append(
            Check(
                "model",
                True,
                f"{model.provider} {model.model} at {model.base_url or 'the provider default URL'}",
            )
        )
    else:
        checks.append(
            Check("model", False, "no model configured", "browy config set model.model <name>")
        )

    var = _KEY_VARS[model.provider]
    try:
        key = model.resolve_api_key(home)
    except ConfigError as exc:
        checks.append(Check("model key", False, str(exc), "fix [model] api_key_file"))
        return checks
    if key:
        source = "config.toml" if model.api_key is not None else f"key file {model.api_key_file}"
        checks.append(Check("model key", True, f"API key set in {source}"))
    elif not model.needs_api_key:
        checks.append(
            Check("model key", True, f"none needed for the local endpoint {model.base_url}")
        )
    elif env.get(var):
        checks.append(
            Check(
                "model key",
                False,
                f"{var} is set in this shell only: the daemon is started by the browser and "
                "inherits the browser's environment, not your shell's",
                "browy config set model.api_key <key>  (or model.api_key_file <path>)",
            )
        )
    else:
        checks.append(
            Check(
                "model key",
                False,
                f"no API key for {model.provider}",
                "browy config set model.api_key <key>",
            )
        )
    shell_only = [
        v
        for v in ("BROWY_MODEL", "OPENAI_BASE_URL")
        if env.get(v) and getattr(model, "model" if v == "BROWY_MODEL" else "base_url") is None
    ]
    if shell_only:
        checks.append(
            Check(
                "model settings from the shell",
                True,
                f"{', '.join(shell_only)} set only in this shell; the browser-started daemon "
                "will not see them",
                "browy config set model.model / model.base_url",
                warning=True,
            )
        )
    return checks


def _check_sandboxes(platform: Platform, native_found: bool) -> list[Check]:
    checks: list[Check] = []
    for sb in platform.sandboxed_browsers():
        checks.append(
            Check(
                f"{sb.kind} {sb.browser}",
                native_found,
                f"{sb.path}: a {sb.kind} browser starts native hosts inside its sandbox, where "
                "Browy's launcher and Python are not available; native messaging is not "
                "supported there",
                f"install {sb.browser} from your distribution's packages or the vendor's .deb/.rpm",
                warning=native_found,
            )
        )
    return checks


# --------------------------------------------------------------------------------------------


def run_checks(
    platform: Platform,
    home: Path,
    *,
    env: Mapping[str, str] | None = None,
    daemon_status: DaemonStatusFn | None = None,
) -> list[Check]:
    """Every check, in order. *env* is the shell environment (default ``os.environ``), used to
    tell settings that exist only there; *daemon_status* defaults to
    :func:`nativehost.daemon.instance.daemon_status`."""
    env = os.environ if env is None else env
    checks: list[Check] = []

    config: Config | None
    try:
        # The daemon sees the file (plus the browser's environment), not this shell: check the file.
        config = load_config(home, env={})
        checks.append(Check("config", True, f"{home / 'config.toml'} is valid"))
    except ConfigError as exc:
        config = None
        checks.append(
            Check(
                "config", False, str(exc).replace("\n", "; "), "browy config set, or edit the file"
            )
        )
    else:
        path = home / "config.toml"
        if config.model.api_key is not None and path.exists() and _mode(path) & 0o077:
            checks.append(
                Check(
                    "config permissions",
                    True,
                    f"{path} holds an API key and is readable by others",
                    f"chmod 600 {path}",
                    warning=True,
                )
            )

    manifests = _manifests_to_check(platform, home)
    config_origins = config.host.allowed_origins if config is not None else None
    if not manifests:
        checks.append(
            Check(
                "manifest",
                False,
                f'no {MANIFEST_NAME} found for any browser: Chrome says "{CHROME_NOT_FOUND}"',
                "browy install-host",
            )
        )
    for label, manifest_file in manifests:
        checks.extend(check_manifest(label, manifest_file, config_origins))

    checks.extend(_check_run_dir(home))
    checks.append(_check_daemon(home, daemon_status or instance.daemon_status))
    if config is not None:
        checks.extend(_check_model(home, config, env))
    native_found = bool(platform.installed_browsers()) or bool(manifests)
    checks.extend(_check_sandboxes(platform, native_found))
    return checks
