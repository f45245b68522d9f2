"""Where Chromium-family browsers look for native messaging host manifests, per OS.

A :class:`Platform` is a value: the OS layout, the user's home directory, the filesystem root (for
system-wide directories) and ``XDG_CONFIG_HOME``. Tests build one over a temporary folder, so
install, uninstall and doctor never touch the real ``/etc`` or ``~`` (architecture.md section 1:
platform specifics are injectable).

Manifest locations (https://developer.chrome.com/docs/extensions/develop/concepts/native-messaging
"Native messaging host location"; the other browsers follow Chromium's scheme under their own
names). On Linux the user directories live under ``$XDG_CONFIG_HOME`` (default ``~/.config``).
Uncertain entries say so where they are defined.

Browsers installed as Flatpak or Snap run hosts inside their sandbox, where our launcher and
interpreter do not exist: :meth:`Platform.sandboxed_browsers` finds them so ``doctor`` can explain.
Windows (registry based) is not a target yet.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

__all__ = [
    "BROWSERS",
    "BrowserLayout",
    "OSName",
    "Platform",
    "SandboxedBrowser",
    "UnsupportedPlatform",
    "layout",
]


class UnsupportedPlatform(Exception):
    """This OS has no native messaging layout here (Windows uses the registry)."""


class OSName(StrEnum):
    LINUX = "linux"
    MACOS = "macos"


@dataclass(frozen=True, slots=True, kw_only=True)
class BrowserLayout:
    """One browser on one OS. Paths are relative: to the user's config root (Linux:
    ``$XDG_CONFIG_HOME``; macOS: ``~/Library/Application Support``) or to the filesystem root."""

    name: str
    label: str
    user_dir: str  # the browser's user data dir, relative to the config root
    system_hosts_dir: str  # relative to the filesystem root
    apps: tuple[str, ...]  # executables / app bundles relative to the root: "is it installed"
    flatpak_ids: tuple[str, ...] = ()
    snap_names: tuple[str, ...] = ()

    @property
    def user_hosts_subdir(self) -> str:
        return f"{self.user_dir}/NativeMessagingHosts"


_LINUX: tuple[BrowserLayout, ...] = (
    BrowserLayout(
        name="chrome",
        label="Google Chrome",
        user_dir="google-chrome",
        system_hosts_dir="etc/opt/chrome/native-messaging-hosts",
        apps=("usr/bin/google-chrome", "usr/bin/google-chrome-stable", "opt/google/chrome/chrome"),
        flatpak_ids=("com.google.Chrome",),
    ),
    BrowserLayout(
        name="chromium",
        label="Chromium",
        user_dir="chromium",
        system_hosts_dir="etc/chromium/native-messaging-hosts",
        apps=("usr/bin/chromium", "usr/bin/chromium-browser", "usr/lib/chromium/chromium"),
        flatpak_ids=("org.chromium.Chromium",),
        snap_names=("chromium",),
    ),
    BrowserLayout(
        name="edge",
        label="Microsoft Edge",
        user_dir="microsoft-edge",
        system_hosts_dir="etc/opt/edge/native-messaging-hosts",
        apps=("usr/bin/microsoft-edge", "usr/bin/microsoft-edge-stable", "opt/microsoft/msedge"),
        flatpak_ids=("com.microsoft.Edge",),
    ),
    BrowserLayout(
        name="brave",
        label="Brave",
        user_dir="BraveSoftware/Brave-Browser",
        # Uncertain: installers disagree (/etc/opt/brave, /etc/brave, /etc/opt/chrome). Several
        # (gopass, browserpass reports) found that Brave's Linux build reads Chrome's system
        # directory and has none of its own, so we register it there.
        system_hosts_dir="etc/opt/chrome/native-messaging-hosts",
        apps=("usr/bin/brave-browser", "usr/bin/brave", "opt/brave.com/brave/brave"),
        flatpak_ids=("com.brave.Browser",),
        snap_names=("brave",),
    ),
    BrowserLayout(
        name="vivaldi",
        label="Vivaldi",
        user_dir="vivaldi",
        system_hosts_dir="etc/opt/vivaldi/native-messaging-hosts",
        apps=("usr/bin/vivaldi", "usr/bin/vivaldi-stable", "opt/vivaldi/vivaldi"),
        flatpak_ids=("com.vivaldi.Vivaldi",),
    ),
)

_MACOS: tuple[BrowserLayout, ...] = (
    BrowserLayout(
        name="chrome",
        label="Google Chrome",
        user_dir="Google/Chrome",
        system_hosts_dir="Library/Google/Chrome/NativeMessagingHosts",
        apps=("Applications/Google Chrome.app",),
    ),
    BrowserLayout(
        name="chromium",
        label="Chromium",
        user_dir="Chromium",
        system_hosts_dir="Library/Application Support/Chromium/NativeMessagingHosts",
        apps=("Applications/Chromium.app",),
    ),
    BrowserLayout(
        name="edge",
        label="Microsoft Edge",
        user_dir="Microsoft Edge",
        system_hosts_dir="Library/Microsoft/Edge/NativeMessagingHosts",
        apps=("Applications/Microsoft Edge.app",),
    ),
    BrowserLayout(
        name="brave",
        label="Brave",
        user_dir="BraveSoftware/Brave-Browser",
        # Uncertain: most installers use this; one Brave fork documents
        # /Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts.
        system_hosts_dir="Library/BraveSoftware/Brave-Browser/NativeMessagingHosts",
        apps=("Applications/Brave Browser.app",),
    ),
    BrowserLayout(
        name="vivaldi",
        label="Vivaldi",
        user_dir="Vivaldi",
        system_hosts_dir="Library/Application Support/Vivaldi/NativeMessagingHosts",
        apps=("Applications/Vivaldi.app",),
    ),
)

_LAYOUTS: dict[OSName, dict[str, BrowserLayout]] = {
    OSName.LINUX: {b.name: b for b in _LINUX},
    OSName.MACOS: {b.name: b for b in _MACOS},
}

BROWSERS: tuple[str, ...] = tuple(b.name for b in _LINUX)


def layout(os_name: OSName, browser: str) -> BrowserLayout:
    """The layout of *browser* on *os_name*; ValueError naming the choices if unknown."""
    try:
        return _LAYOUTS[os_name][browser]
    except KeyError:
        raise ValueError(f"unknown browser {browser!r} (known: {', '.join(BROWSERS)})") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxedBrowser:
    browser: str
    kind: str  # "flatpak" | "snap"
    path: Path


@dataclass(frozen=True, slots=True)
class Platform:
    """An OS layout over a home directory and a filesystem root (``/`` for real)."""

    os: OSName
    home: Path
    root: Path = Path("/")
    xdg_config_home: Path | None = None

    @classmethod
    def current(cls, env: Mapping[str, str] | None = None) -> Platform:
        """The running machine's platform, from *env* (default ``os.environ``).

        ``BROWY_PLATFORM`` (linux|macos) and ``BROWY_FS_ROOT`` override the OS and the root, so
        a test can run the real CLI in a subprocess over a temporary tree.
        """
        env = os.environ if env is None else env
        forced = env.get("BROWY_PLATFORM")
        if forced:
            try:
                os_name = OSName(forced)
            except ValueError:
                raise UnsupportedPlatform(
                    f"BROWY_PLATFORM={forced!r}: use linux or macos"
                ) from None
        elif sys.platform.startswith("linux") or sys.platform.startswith("freebsd"):
            os_name = OSName.LINUX
        elif sys.platform == "darwin":
            os_name = OSName.MACOS
        else:
            raise UnsupportedPlatform(
                f"{sys.platform} is not supported yet (native host registration on Windows "
                "uses the registry)"
            )
        home = Path(env.get("HOME") or Path.home()).expanduser()
        xdg = env.get("XDG_CONFIG_HOME")
        return cls(
            os=os_name,
            home=home,
            root=Path(env.get("BROWY_FS_ROOT") or "/"),
            xdg_config_home=Path(xdg) if xdg else None,
        )

    # -- paths ------------------------------------------------------------------------------

    def under_root(self, relative: str) -> Path:
        return self.root / relative.lstrip("/")

    def config_root(self) -> Path:
        """Where browsers keep their user data dirs."""
        if self.os is OSName.MACOS:
            return self.home / "Library" / "Application Support"
        if self.xdg_config_home is not None and self.xdg_config_home.is_absolute():
            return self.xdg_config_home
        return self.home / ".config"

    def browser_dir(self, browser: str) -> Path:
        """The browser's default user data dir (its existence means "this user ran it")."""
        return self.config_root() / layout(self.os, browser).user_dir

    def hosts_dir(self, browser: str, *, system: bool = False) -> Path:
        """The ``NativeMessagingHosts`` directory of *browser*, per user or system-wide."""
        spec = layout(self.os, browser)
        if system:
            return self.under_root(spec.system_hosts_dir)
        return self.config_root() / spec.user_hosts_subdir

    def system_launcher_dir(self) -> Path:
        """Where a system-wide install puts the launcher (readable by every user)."""
        if self.os is OSName.MACOS:
            return self.under_root("Library/Application Support/Browy")
        return self.under_root("usr/local/lib/browy")

    # -- detection --------------------------------------------------------------------------

    def installed_browsers(self) -> list[str]:
        """Browsers this user has run (their data dir exists) or that are installed natively."""
        found: list[str] = []
        for name in BROWSERS:
            spec = layout(self.os, name)
            if self.browser_dir(name).is_dir() or any(
                self.under_root(app).exists() for app in spec.apps
            ):
                found.append(name)
        return found

    def sandboxed_browsers(self) -> list[SandboxedBrowser]:
        """Flatpak and Snap installs: native messaging cannot reach a host outside the sandbox."""
        if self.os is not OSName.LINUX:
            return []
        found: list[SandboxedBrowser] = []
        for name in BROWSERS:
            spec = layout(self.os, name)
            for app_id in spec.flatpak_ids:
                for base in (
                    self.home / ".var" / "app" / app_id,
                    self.under_root(f"var/lib/flatpak/app/{app_id}"),
                ):
                    if base.is_dir():
                        found.append(SandboxedBrowser(browser=name, kind="flatpak", path=base))
                        break
            for snap in spec.snap_names:
                for base in (self.under_root(f"snap/{snap}"), self.home / "snap" / snap):
                    if base.is_dir():
                        found.append(SandboxedBrowser(browser=name, kind="snap", path=base))
                        break
        return found

    def candidate_manifest_dirs(self) -> list[tuple[str, Path]]:
        """Every (browser, directory) where a host manifest could be, user then system, once."""
        seen: set[Path] = set()
        out: list[tuple[str, Path]] = []
        for system in (False, True):
            for name in BROWSERS:
                path = self.hosts_dir(name, system=system)
                if path not in seen:
                    seen.add(path)
                    out.append((name, path))
        return out
