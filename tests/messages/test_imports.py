"""What messages/ may import: the relay's start-up cost and the layering rule (conventions 15)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = ROOT / "messages"


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def _heavy_modules_after_importing(module: str) -> set[str]:
    code = (
        f"import sys, {module}\n"
        "print(' '.join({'pydantic', 'pydantic_core', 'asyncio'} & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(result.stdout.split())


@pytest.mark.parametrize("module", ["messages.codec", "messages.link", "messages.errors"])
def test_the_relay_side_modules_load_without_pydantic_or_asyncio(module: str) -> None:
    assert _heavy_modules_after_importing(module) == set()


def test_the_wire_models_do_load_pydantic() -> None:
    # The control for the test above: the probe does see pydantic when it is imported.
    assert "pydantic" in _heavy_modules_after_importing("messages.wire")


@pytest.mark.parametrize("path", sorted(MESSAGES.glob("*.py")), ids=lambda p: p.name)
def test_no_messages_module_imports_asyncio_or_a_higher_layer(path: Path) -> None:
    forbidden = {"asyncio", "actors", "supervisors", "nativehost"}
    assert _imported_roots(path) & forbidden == set()


def test_the_import_scanner_sees_imports() -> None:
    # Guards the test above against passing vacuously.
    assert {"orjson", "messages", "struct"} <= _imported_roots(MESSAGES / "codec.py")
