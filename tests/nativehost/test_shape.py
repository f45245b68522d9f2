"""nativehost's shape: no import cycles, no importlib for our modules, no re-exports, small modules.

Imports are read from the source (also those inside functions, which run later but still tie the
modules together), so a cycle cannot hide behind a lazy import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
OURS = ("messages", "actors", "supervisors", "nativehost")
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in sorted((ROOT / "nativehost").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imported(path: Path) -> set[str]:
    """The nativehost modules *path* imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        for name in names:
            module = name
            while module and module not in MODULES:
                module = module.rpartition(".")[0]
            if module:
                found.add(module)
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of *graph*, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for other in sorted(graph[module]):
            if state.get(other) == 1:
                return [*path[path.index(other) :], other]
            if other not in state and (found := visit(other)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_no_nativehost_module_takes_part_in_an_import_cycle() -> None:
    graph = {name: _imported(path) - {name} for name, path in MODULES.items()}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle_through_a_lazy_import() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("path", MODULES.values(), ids=lambda p: str(p.relative_to(ROOT)))
def test_our_modules_are_imported_with_import_statements_not_importlib(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name in ("import_module", "__import__") and node.args:
                target = node.args[0]
                assert not (
                    isinstance(target, ast.Constant) and str(target.value).startswith(OURS)
                ), f"{path.relative_to(ROOT)}:{node.lineno} imports {target.value} by name"


@pytest.mark.parametrize("path", MODULES.values(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_module_is_at_most_400_lines_with_a_docstring_and_all(path: Path) -> None:
    text = path.read_text("utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    tree = ast.parse(text)
    assert ast.get_docstring(tree), "no module docstring"
    if path.name not in ("__init__.py", "__main__.py"):
        names = {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        assert "__all__" in names


@pytest.mark.parametrize("path", MODULES.values(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_module_exports_only_what_it_defines_never_a_name_it_imports(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"))
    imported = {
        alias.asname or alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            exported = list(ast.literal_eval(node.value))
    assert not set(exported) & imported, "re-exports " + ", ".join(sorted(set(exported) & imported))
