"""``browy doctor``: find what stops the extension, the host and the daemon from meeting.

Each check is one :class:`nativehost.setup.check.Check` — a name, ok or not, a one-line detail and,
when not ok, a fix. :func:`run_checks` runs them in this order: version, config, manifests
(:mod:`nativehost.setup.manifest_checks`, whose messages name Chrome's own errors), run directory,
journals (copies of damaged chat journals), daemon (and any of its actors restarted in the last
hour), model (with a warning for a key sent over plain http to another host), sandboxed browsers.
None of them changes anything on disk.
"""

from __future__ import annotations

import os
import platform as python_platform
import stat
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from actors.store.chat_store import sessions_dir
from actors.store.journal import CORRUPT_SUFFIX, JOURNAL_SUFFIX
from nativehost.config import load_config
from nativehost.config_schema import Config, ConfigError
from nativehost.daemon import instance
from nativehost.home import private_dir_problem, run_dir, socket_path
from nativehost.setup.check import Check
from nativehost.setup.copilot_checks import check_copilot
from nativehost.setup.install import MANIFEST_NAME
from nativehost.setup.manifest_checks import CHROME_NOT_FOUND, check_manifest, manifests_to_check
from nativehost.setup.platforms import Platform
from nativehost.version import VERSION
from supervisors.introspection import SupervisorInfo, recent_restarts

__all__ = ["run_checks"]

_KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


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
    if sock.parent != rdir and sock.parent.exists():
        # The socket's directory in the runtime dir (a long BROWY_HOME): whoever made it first
        # owns it. The relay and the CLI refuse it unless it is ours and private.
        problem = private_dir_problem(sock.parent)
        checks.append(
            Check(
                "socket directory",
                problem is None,
                f"{sock.parent} " + ("is ours and private" if problem is None else problem),
                ""
                if problem is None
                else f"another user may have planted it: remove {sock.parent} (as its owner or "
                "root), or set a shorter BROWY_HOME or XDG_RUNTIME_DIR so the socket lives in "
                f"{rdir}",
            )
        )
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


def _check_journals(home: Path) -> Check:
    """Chat journals that were damaged (not merely torn by a crash): their kept copies."""
    root = sessions_dir(home)
    copies = sorted(root.glob(f"*/*{JOURNAL_SUFFIX}{CORRUPT_SUFFIX}*")) if root.is_dir() else []
    if not copies:
        return Check("journals", True, "no damaged chat journal")
    journals = {(c.parent, c.name.split(CORRUPT_SUFFIX)[0]) for c in copies}
    shown = ", ".join(str(c.relative_to(home)) for c in copies[:5])
    more = f" and {len(copies) - 5} more" if len(copies) > 5 else ""
    return Check(
        "journals",
        True,
        f"{len(journals)} journal(s) had damaged records, skipped when the chat was read (every "
        f"whole record was kept; `browy logs` says how many bytes, where); the original bytes are "
        f"in {shown}{more}",
        "damage in the middle of a journal is not a crash: check the disk (fsck, smartctl); "
        "delete the .corrupt copies once you no longer need them",
        warning=True,
    )


DaemonStatusFn = Callable[[Path], object]
DaemonTreeFn = Callable[[Path], "SupervisorInfo | None"]


def _check_restarts(home: Path, daemon_tree: DaemonTreeFn) -> list[Check]:
    """Actors of the running daemon that restarted in the last hour (its supervision tree)."""
    try:
        tree = daemon_tree(home)
    except Exception as exc:  # reported by the daemon check already; never raised
        return [Check("actor restarts", True, f"could not read the tree: {exc}", warning=True)]
    if tree is None:
        return []
    recent = recent_restarts(tree)
    if not recent:
        return [Check("actor restarts", True, "no actor restarted in the last hour")]
    listed = ", ".join(
        f"{path} {count} time(s) (last at {time.strftime('%H:%M:%S', time.localtime(last))})"
        for path, count, last in recent
    )
    return [
        Check(
            "actor restarts",
            True,
            f"restarted in the last hour: {listed}",
            "browy logs shows why (look for 'crashed'); browy daemon tree shows them now",
            warning=True,
        )
    ]


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
    details = getattr(status, "details", None)
    daemon_version = details.get("version") if isinstance(details, dict) else None
    if daemon_version and daemon_version != VERSION:
        return Check(
            "daemon",
            True,
            f"{status}: it runs browy {daemon_version}, this is {VERSION}",
            "browy daemon stop (the next connection starts the new one)",
            warning=True,
        )
    return Check("daemon", True, str(status))


def _check_model(home: Path, config: Config, env: Mapping[str, str]) -> list[Check]:
    model = config.model
    if model.provider == "copilot":
        return check_copilot(config, env)
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
        checks.append(
            Check("model key", False, str(exc), "browy config set-key, or fix [model] api_key_file")
        )
        return checks
    if key:
        source = "config.toml" if model.api_key is not None else f"key file {model.api_key_file}"
        checks.append(Check("model key", True, f"API key set in {source}"))
        checks.extend(_check_transport(model.base_url, model.needs_api_key))
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
                "browy config set-key (asks for the key without echo, or reads it from stdin; "
                "it stays out of your shell history)",
            )
        )
    else:
        checks.append(
            Check(
                "model key",
                False,
                f"no API key for {model.provider}",
                "browy config set-key (asks for the key without echo, or reads it from stdin; "
                "it stays out of your shell history)",
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


def _check_transport(base_url: str | None, remote: bool) -> list[Check]:
    """The key (and every page the model reads) must not cross a network in clear text."""
    if base_url is None or not remote or urlsplit(base_url).scheme != "http":
        return []  # the provider's default (https), https, or this machine (loopback)
    host = urlsplit(base_url).hostname or base_url
    return [
        Check(
            "model connection",
            True,
            f"the API key goes to {host} over plain http: anyone on the way can read it, and the "
            "pages and chats the model sees",
            f"use an https:// base_url, or reach {host} through a loopback tunnel (e.g. "
            f"ssh -N -L 8000:localhost:8000 {host}, then base_url http://127.0.0.1:8000/v1)",
            warning=True,
        )
    ]


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


def _check_mcp_clients(env: Mapping[str, str]) -> list[Check]:
    """The MCP clients configured to start ``browy mcp`` (``browy mcp config``), if any."""
    from nativehost.mcp.client_config import configured_clients

    user_home = Path(env.get("HOME") or Path.home())
    return [
        Check(
            f"mcp client {entry.client}",
            True,
            f"{entry.path}: " + (entry.problem or f"starts {entry.command} mcp"),
            f"browy mcp config --client {entry.client} --write" if entry.problem else "",
            warning=entry.problem is not None,
        )
        for entry in configured_clients(Path.cwd(), user_home)
    ]


# --------------------------------------------------------------------------------------------


def run_checks(
    platform: Platform,
    home: Path,
    *,
    env: Mapping[str, str] | None = None,
    daemon_status: DaemonStatusFn | None = None,
    daemon_tree: DaemonTreeFn | None = None,
) -> list[Check]:
    """Every check, in order. *env* is the shell environment (default ``os.environ``), used to
    tell settings that exist only there; *daemon_status* defaults to
    :func:`nativehost.daemon.instance.daemon_status`."""
    env = os.environ if env is None else env
    checks: list[Check] = [
        Check(
            "version",
            True,
            f"browy {VERSION} (Python {python_platform.python_version()}, {sys.executable})",
        )
    ]

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
                    f"chmod 600 {path}; better, browy config set-key moves the key into a 0600 "
                    "key file",
                    warning=True,
                )
            )

    manifests = manifests_to_check(platform, home)
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
    checks.append(_check_journals(home))
    checks.append(_check_daemon(home, daemon_status or instance.daemon_status))
    checks.extend(_check_restarts(home, daemon_tree or instance.daemon_tree))
    if config is not None:
        checks.extend(_check_model(home, config, env))
    native_found = bool(platform.installed_browsers()) or bool(manifests)
    checks.extend(_check_sandboxes(platform, native_found))
    checks.extend(_check_mcp_clients(env))
    return checks
