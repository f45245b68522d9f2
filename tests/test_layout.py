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


# --- the import graph: no cycles, lazy imports included ------------------------------------------


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports anywhere (top level, in functions, under
    ``TYPE_CHECKING``): a lazy import must never hide a cycle."""
    modules = {_module_name(p): p for _, p in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in modules
                    else node.module
                    for alias in node.names
                ]
            else:
                continue
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_takes_part_in_an_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_sees_a_cycle_made_by_a_lazy_import() -> None:
    # Guards the test above: a cycle through a function-level import is still a cycle.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(("layer", "path"), _modules(), ids=str)
def test_no_module_imports_one_of_ours_by_name_at_run_time(layer: str, path: Path) -> None:
    # importlib.import_module("actors.…") would hide an edge from the cycle check above.
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).split(".")[0] in LAYERS
        ):
            raise AssertionError(f"{path.relative_to(ROOT)} imports {node.args[0].value} by name")


# --- the shape the design names ----------------------------------------------------------------


#: The six actors of architecture.md section 2, each an actor class in a module named after it.
SIX_ACTORS = [
    ("actors.relay.stdio_framer", "StdioFramer", "asyncio"),
    ("actors.agent.session_router", "SessionRouter", "asyncio"),
    ("actors.agent.turn_scheduler", "TurnScheduler", "asyncio"),
    ("actors.browser.cdp_proxy", "CDPProxy", "asyncio"),
    ("actors.browser.tool_worker", "ToolWorker", "asyncio"),
    ("actors.runtime.logger", "Logger", "thread"),
]


@pytest.mark.parametrize(("module", "name", "kind"), SIX_ACTORS)
def test_each_actor_the_design_names_is_an_actor_in_a_module_named_after_it(
    module: str, name: str, kind: str
) -> None:
    from actors.runtime.actor import Actor
    from actors.runtime.threaded import ThreadActor

    cls = getattr(importlib.import_module(module), name)
    base = Actor if kind == "asyncio" else ThreadActor
    assert isinstance(cls, type) and issubclass(cls, base), f"{name} is not an actor"
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
    assert module.rsplit(".", 1)[1] == snake.replace("c_d_p_", "cdp_"), module
    assert cls.__doc__ and (importlib.import_module(module).__doc__ or ""), f"{name}: no docstring"


@pytest.mark.parametrize("path", sorted((ROOT / "supervisors").glob("*.py")), ids=lambda p: p.name)
def test_no_supervisor_module_imports_the_agent(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module)
    agent = sorted(m for m in imported if m == "actors.agent" or m.startswith("actors.agent."))
    assert not agent, f"{path.name} imports {agent}: supervisors/ holds supervision only"


@pytest.mark.parametrize(("layer", "path"), _modules(), ids=str)
def test_no_module_is_over_400_lines(layer: str, path: Path) -> None:
    # A module that grows past 400 lines is split by meaning (the developers' guide).
    lines = len(path.read_text("utf-8").splitlines())
    assert lines <= 400, f"{path.relative_to(ROOT)} has {lines} lines"
