"""install-host / uninstall-host over a temporary HOME and filesystem root."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nativehost.config import load_config
from nativehost.origins import BROWY_PUBLISHED_IDS, OUR_EXTENSION_ID
from nativehost.setup.install import (
    InstallError,
    install_host,
    read_install_record,
    uninstall_host,
)
from nativehost.setup.platforms import BROWSERS, OSName, Platform

OTHER_ID = "abcdefghijklmnopabcdefghijklmnop"
OUR_ORIGIN = f"chrome-extension://{OUR_EXTENSION_ID}/"

EXPECTED_DIRS = {
    (OSName.LINUX, False): {
        "chrome": ".config/google-chrome/NativeMessagingHosts",
        "chromium": ".config/chromium/NativeMessagingHosts",
        "edge": ".config/microsoft-edge/NativeMessagingHosts",
        "brave": ".config/BraveSoftware/Brave-Browser/NativeMessagingHosts",
        "vivaldi": ".config/vivaldi/NativeMessagingHosts",
    },
    (OSName.LINUX, True): {
        "chrome": "etc/opt/chrome/native-messaging-hosts",
        "chromium": "etc/chromium/native-messaging-hosts",
        "edge": "etc/opt/edge/native-messaging-hosts",
        "brave": "etc/opt/chrome/native-messaging-hosts",
        "vivaldi": "etc/opt/vivaldi/native-messaging-hosts",
    },
    (OSName.MACOS, False): {
        "chrome": "Library/Application Support/Google/Chrome/NativeMessagingHosts",
        "chromium": "Library/Application Support/Chromium/NativeMessagingHosts",
        "edge": "Library/Application Support/Microsoft Edge/NativeMessagingHosts",
        "brave": "Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts",
        "vivaldi": "Library/Application Support/Vivaldi/NativeMessagingHosts",
    },
    (OSName.MACOS, True): {
        "chrome": "Library/Google/Chrome/NativeMessagingHosts",
        "chromium": "Library/Application Support/Chromium/NativeMessagingHosts",
        "edge": "Library/Microsoft/Edge/NativeMessagingHosts",
        "brave": "Library/BraveSoftware/Brave-Browser/NativeMessagingHosts",
        "vivaldi": "Library/Application Support/Vivaldi/NativeMessagingHosts",
    },
}


@pytest.fixture
def linux(tmp_path: Path) -> Platform:
    return Platform(OSName.LINUX, home=tmp_path / "user", root=tmp_path / "root")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "browy"


def manifest_at(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("system", [False, True], ids=["user", "system"])
@pytest.mark.parametrize("os_name", list(OSName))
@pytest.mark.parametrize("browser", BROWSERS)
def test_install_writes_the_manifest_where_each_browser_looks(
    tmp_path: Path, browser: str, os_name: OSName, system: bool
) -> None:
    platform = Platform(os_name, home=tmp_path / "user", root=tmp_path / "root")
    report = install_host(platform, home=tmp_path / "browy", browsers=[browser], system=system)
    base = platform.root if system else platform.home
    expected = base / EXPECTED_DIRS[(os_name, system)][browser] / "com.browy.host.json"
    assert [m.path for m in report.manifests] == [expected]
    manifest = manifest_at(expected)
    assert manifest["name"] == "com.browy.host"
    assert manifest["type"] == "stdio"
    assert manifest["path"] == str(report.launcher)
    assert manifest["allowed_origins"] == [OUR_ORIGIN]
    assert report.launcher.is_relative_to(tmp_path)


def test_install_without_browsers_uses_the_ones_found(linux: Platform, home: Path) -> None:
    (linux.home / ".config" / "chromium").mkdir(parents=True)
    (linux.root / "usr" / "bin").mkdir(parents=True)
    (linux.root / "usr" / "bin" / "microsoft-edge").touch()
    report = install_host(linux, home=home)
    assert [m.browser for m in report.manifests] == ["chromium", "edge"]


def test_install_with_no_browser_found_says_what_to_do(linux: Platform, home: Path) -> None:
    with pytest.raises(InstallError, match="--browser"):
        install_host(linux, home=home)


def test_install_honours_xdg_config_home(tmp_path: Path, home: Path) -> None:
    platform = Platform(
        OSName.LINUX,
        home=tmp_path / "user",
        root=tmp_path / "root",
        xdg_config_home=tmp_path / "xdg",
    )
    report = install_host(platform, home=home, browsers=["chrome"])
    assert (
        report.manifests[0].path
        == tmp_path / "xdg/google-chrome/NativeMessagingHosts/com.browy.host.json"
    )


def test_a_target_dir_alone_writes_only_there(linux: Platform, home: Path, tmp_path: Path) -> None:
    (linux.home / ".config" / "chromium").mkdir(parents=True)
    target = tmp_path / "profile" / "NativeMessagingHosts"
    report = install_host(linux, home=home, target_dirs=[target])
    assert [m.path for m in report.manifests] == [target / "com.browy.host.json"]
    assert not (linux.home / ".config/chromium/NativeMessagingHosts").exists()


def test_the_launcher_is_an_executable_shell_script_with_an_absolute_path(
    linux: Platform, home: Path, tmp_path: Path
) -> None:
    report = install_host(linux, home=home, browsers=["chromium"], python="/opt/venv/bin/python")
    launcher = report.launcher
    assert launcher.is_absolute()
    assert os.access(launcher, os.X_OK)
    text = launcher.read_text()
    assert text.startswith("#!/bin/sh\n")
    assert 'exec /opt/venv/bin/python -m nativehost.relay.main "$@"' in text
    assert f'BROWY_HOME="${{BROWY_HOME:-{home}}}"' in text


def test_the_launcher_runs_and_passes_browy_home_and_arguments(
    linux: Platform, home: Path, tmp_path: Path
) -> None:
    fake_python = tmp_path / "fake-python"
    fake_python.write_text('#!/bin/sh\necho "$BROWY_HOME|$*"\n')
    fake_python.chmod(0o755)
    launcher = install_host(
        linux, home=home, browsers=["chromium"], python=str(fake_python)
    ).launcher
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    out = subprocess.run(
        [str(launcher), OUR_ORIGIN], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"{home}|-m nativehost.relay.main {OUR_ORIGIN}"
    # The browser's own BROWY_HOME wins (tests and profiles point it elsewhere).
    out = subprocess.run(
        [str(launcher), OUR_ORIGIN],
        env={**env, "BROWY_HOME": "/elsewhere"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith("/elsewhere|")


def test_a_launcher_path_with_odd_characters_is_quoted(linux: Platform, tmp_path: Path) -> None:
    home = tmp_path / 'we"ird $home'
    fake_python = tmp_path / "py thon"
    fake_python.write_text('#!/bin/sh\necho "$BROWY_HOME"\n')
    fake_python.chmod(0o755)
    launcher = install_host(
        linux, home=home, browsers=["chromium"], python=str(fake_python)
    ).launcher
    out = subprocess.run([str(launcher)], env={}, capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(home)


def test_a_system_launcher_does_not_fix_browy_home(tmp_path: Path, home: Path) -> None:
    platform = Platform(OSName.LINUX, home=tmp_path / "user", root=tmp_path / "root")
    report = install_host(platform, home=home, browsers=["chrome"], system=True)
    assert report.launcher == tmp_path / "root/usr/local/lib/browy/browy-host"
    assert "BROWY_HOME" not in report.launcher.read_text()


def test_brave_and_chrome_share_one_system_manifest_on_linux(tmp_path: Path, home: Path) -> None:
    platform = Platform(OSName.LINUX, home=tmp_path / "user", root=tmp_path / "root")
    report = install_host(platform, home=home, browsers=["chrome", "brave"], system=True)
    assert len(report.manifests) == 1


def test_extension_ids_are_written_to_config_and_manifest(linux: Platform, home: Path) -> None:
    report = install_host(linux, home=home, browsers=["chromium"], extension_ids=[OTHER_ID])
    manifest = manifest_at(report.manifests[0].path)
    assert manifest["allowed_origins"] == [OUR_ORIGIN, f"chrome-extension://{OTHER_ID}/"]
    assert load_config(home, env={}).host.allowed_origins == manifest["allowed_origins"]


def test_every_origin_ends_with_a_slash(linux: Platform, home: Path) -> None:
    report = install_host(
        linux, home=home, browsers=["chromium"], extension_ids=[OTHER_ID], compat_browy=True
    )
    origins = manifest_at(report.manifests[0].path)["allowed_origins"]
    assert isinstance(origins, list)
    assert all(o.startswith("chrome-extension://") and o.endswith("/") for o in origins)


def test_published_ids_are_allowed_only_with_compat_browy(linux: Platform, home: Path) -> None:
    report = install_host(linux, home=home, browsers=["chromium"])
    origins = manifest_at(report.manifests[0].path)["allowed_origins"]
    assert isinstance(origins, list)
    assert not any(i in o for o in origins for i in BROWY_PUBLISHED_IDS)

    report = install_host(linux, home=home, browsers=["chromium"], compat_browy=True)
    origins = manifest_at(report.manifests[0].path)["allowed_origins"]
    assert origins == [OUR_ORIGIN, *(f"chrome-extension://{i}/" for i in BROWY_PUBLISHED_IDS)]
    assert load_config(home, env={}).host.compat_browy is True


def test_a_published_id_given_without_compat_is_refused(linux: Platform, home: Path) -> None:
    with pytest.raises(InstallError, match="--compat-browy"):
        install_host(
            linux, home=home, browsers=["chromium"], extension_ids=[BROWY_PUBLISHED_IDS[0]]
        )


def test_a_malformed_extension_id_is_refused(linux: Platform, home: Path) -> None:
    with pytest.raises(InstallError, match="not an extension id"):
        install_host(linux, home=home, browsers=["chromium"], extension_ids=["xyz"])


def test_reinstalling_without_ids_keeps_the_configured_ones(linux: Platform, home: Path) -> None:
    install_host(linux, home=home, browsers=["chromium"], extension_ids=[OTHER_ID])
    report = install_host(linux, home=home, browsers=["chromium"])
    assert OTHER_ID in report.extension_ids


def test_install_is_idempotent(linux: Platform, home: Path) -> None:
    first = install_host(linux, home=home, browsers=["chromium", "chrome"])
    contents = {m.path: m.path.read_bytes() for m in first.manifests}
    launcher_text = first.launcher.read_text()
    second = install_host(linux, home=home, browsers=["chromium", "chrome"])
    assert [m.status for m in first.manifests] == ["created", "created"]
    assert [m.status for m in second.manifests] == ["unchanged", "unchanged"]
    assert {m.path: m.path.read_bytes() for m in second.manifests} == contents
    assert second.launcher.read_text() == launcher_text
    assert not list(first.manifests[0].path.parent.glob("*.browy-backup*"))


def test_a_changed_id_list_updates_the_manifest(linux: Platform, home: Path) -> None:
    install_host(linux, home=home, browsers=["chromium"])
    report = install_host(linux, home=home, browsers=["chromium"], extension_ids=[OTHER_ID])
    assert report.manifests[0].status == "updated"


def foreign_manifest(directory: Path) -> bytes:
    directory.mkdir(parents=True, exist_ok=True)
    data = json.dumps(
        {
            "name": "com.browy.host",
            "path": "/usr/lib/node-browy/host",
            "type": "stdio",
            "allowed_origins": [f"chrome-extension://{BROWY_PUBLISHED_IDS[0]}/"],
        }
    ).encode()
    (directory / "com.browy.host.json").write_bytes(data)
    return data


def test_a_foreign_manifest_is_backed_up_and_restored(linux: Platform, home: Path) -> None:
    directory = linux.hosts_dir("chrome")
    original = foreign_manifest(directory)
    report = install_host(linux, home=home, browsers=["chrome"])
    backup = directory / "com.browy.host.json.browy-backup"
    assert report.manifests[0].backup == backup
    assert backup.read_bytes() == original
    assert manifest_at(directory / "com.browy.host.json")["path"] == str(report.launcher)

    # Installing again does not back up our own manifest over the foreign one.
    again = install_host(linux, home=home, browsers=["chrome"])
    assert again.manifests[0].backup is None
    assert backup.read_bytes() == original

    result = uninstall_host(linux, home=home)
    assert (directory / "com.browy.host.json").read_bytes() == original
    assert not backup.exists()
    assert result.restored == [directory / "com.browy.host.json"]


def test_an_invalid_foreign_manifest_is_backed_up_too(linux: Platform, home: Path) -> None:
    directory = linux.hosts_dir("chromium")
    directory.mkdir(parents=True)
    (directory / "com.browy.host.json").write_text("{not json")
    report = install_host(linux, home=home, browsers=["chromium"])
    assert report.manifests[0].backup is not None
    assert report.manifests[0].backup.read_text() == "{not json"


def test_uninstall_removes_manifests_launcher_and_record(
    linux: Platform, home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "profile" / "NativeMessagingHosts"
    report = install_host(linux, home=home, browsers=["chromium", "edge"], target_dirs=[target])
    result = uninstall_host(linux, home=home)
    assert sorted(result.removed) == sorted(m.path for m in report.manifests)
    assert not report.launcher.exists()
    assert read_install_record(home) == {"launchers": [], "manifests": []}


def test_uninstall_leaves_foreign_manifests_alone(linux: Platform, home: Path) -> None:
    directory = linux.hosts_dir("vivaldi")
    original = foreign_manifest(directory)
    result = uninstall_host(linux, home=home)
    assert result.removed == []
    assert (directory / "com.browy.host.json").read_bytes() == original
