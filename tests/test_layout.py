"""The project's shape: layers import downwards only, and each package is this project's.

Layers (conventions.md item 15): ``messages`` <- ``actors`` <- ``supervisors`` <- ``nativehost``.
A module may import its own layer and the ones below it, never one above.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["messages", "actors", "supervisors", "nativehost"]


def _imports(path: Path) -> set[str]:
    """Top-level package names imported by a module (absolute imports, also inside functions)."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _modules() -> list[tuple[str, Path]]:
    return [(layer, p) for layer in LAYERS for p in sorted((ROOT / layer).rglob("*.py"))]


@pytest.mark.parametrize(("layer", "path"), _modules(), ids=str)
def test_a_module_imports_only_its_own_layer_and_those_below(layer: str, path: Path) -> None:
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    wrong = _imports(path) & above
    assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)} from a higher layer"


def test_the_import_scanner_finds_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    from nativehost.daemon.process import x\n    import actors.runtime.actor\n"
    )
    assert _imports(module) == {"nativehost", "actors"}


@pytest.mark.parametrize("package", LAYERS)
def test_each_package_resolves_to_this_project(package: str) -> None:
    # The names are common words (PyPI has packages called `actors` and `messages`): make sure
    # the ones imported are ours, from this checkout.
    module = importlib.import_module(package)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().parent == ROOT / package


def test_the_distribution_is_installed_under_its_brand_prefixed_name() -> None:
    dist = importlib.metadata.distribution("browy-host")
    scripts = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    assert scripts["browy"] == "nativehost.cli.main:main"
    assert scripts["browy-host"] == "nativehost.relay.main:main"
