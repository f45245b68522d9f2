"""``browy`` subcommands that set browy up: install-host / uninstall-host, doctor and
extension-path (``config`` is :mod:`nativehost.cli.config_commands`).

Each is a configure function (adds the subcommand's arguments) and a handler ``(args, ctx) -> exit
code``, rows of :data:`nativehost.cli.main.COMMANDS`; the modules doing the work are imported inside
the handlers so ``browy --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nativehost.cli.context import Context, UserError

__all__ = [
    "configure_doctor",
    "configure_install",
    "handle_doctor",
    "handle_extension_path",
    "handle_install",
    "handle_uninstall",
]


# --------------------------------------------------------------------------------------------
# install-host / uninstall-host


def configure_install(p: argparse.ArgumentParser) -> None:
    from nativehost.setup.platforms import BROWSERS

    p.add_argument(
        "--browser",
        action="append",
        choices=BROWSERS,
        help="install for this browser (repeatable; default: every browser found)",
    )
    p.add_argument(
        "--extension-id",
        action="append",
        metavar="ID",
        help="also allow this extension id (repeatable; replaces the list in config.toml)",
    )
    p.add_argument(
        "--compat-browy",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also serve the published Browy extensions",
    )
    p.add_argument("--system", action="store_true", help="install for all users (needs root)")
    p.add_argument(
        "--target-dir",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="also write the manifest into DIR (e.g. $PROFILE/NativeMessagingHosts)",
    )
    p.add_argument("--launcher-dir", type=Path, help="where to write the launcher script")


def handle_install(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.setup.install import ManifestResult, install_host, manifest_line

    def progress(done: int, total: int, result: ManifestResult) -> None:
        ctx.out(f"[{done}/{total}] {manifest_line(result)}")
        ctx.stdout.flush()  # one line per browser as it is written, also into a pipe

    report = install_host(
        ctx.platform,
        home=ctx.home,
        browsers=args.browser,
        extension_ids=args.extension_id,
        compat_browy=args.compat_browy,
        system=args.system,
        target_dirs=args.target_dir,
        launcher_dir=args.launcher_dir,
        on_manifest=progress,
    )
    for line in report.lines(manifests=False):
        ctx.out(line)
    ctx.out("Restart the browser (or reload the extension) to pick up the host.")
    return 0


def handle_uninstall(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.setup.install import uninstall_host

    for line in uninstall_host(ctx.platform, home=ctx.home).lines():
        ctx.out(line)
    return 0


# --------------------------------------------------------------------------------------------
# doctor


def configure_doctor(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the checks as JSON")


def handle_doctor(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.setup.check import exit_code, format_checks
    from nativehost.setup.doctor import run_checks

    checks = run_checks(ctx.platform, ctx.home, env=ctx.env)
    if args.json:
        ctx.out(json.dumps([c.to_json() for c in checks], indent=2))
    else:
        ctx.out(format_checks(checks))
    return exit_code(checks)


# --------------------------------------------------------------------------------------------
# extension-path


def handle_extension_path(args: argparse.Namespace, ctx: Context) -> int:
    from nativehost.demo.launch import extension_dir

    path = extension_dir()
    if not (path / "manifest.json").is_file():
        raise UserError(
            f"no extension at {path}: reinstall browy-host (the extension ships inside it)"
        )
    ctx.out(str(path))
    return 0
