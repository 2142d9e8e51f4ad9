"""The house has no back stairs: walking every import of the package (module level and inside
functions alike, since an import deferred to call time is still a dependency) finds no cycle, no
import from models into tasks (coupled_ids.py is the leaf both read), and none from the store into
models (analysis.py loads a stored model)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "workbench"
FORBIDDEN = [  # (importer, imported): prefixes of dotted module names
    ("workbench.models", "workbench.tasks"),
    ("workbench.store", "workbench.models"),
    ("workbench.models", "workbench.circuits"),  # the causal tools build on the models, never the reverse
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The workbench modules `name` imports; `from package import module` counts as the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.update(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target
                         for alias in node.names)
    return {target for target in found if target.split(".")[0] == "workbench" and target != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), plus self-imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_walk_sees_the_package(graph):
    assert len(graph) > 50 and "workbench.store" in graph and "workbench.models.positions" in graph
    assert "workbench.store" in graph["workbench.analysis"]  # edges are found


def test_no_import_cycle(graph):
    assert cycles(graph) == []


def against_the_layers(graph: dict[str, set[str]], importer: str, imported: str) -> list[str]:
    def inside(module: str, prefix: str) -> bool:
        return module == prefix or module.startswith(prefix + ".")

    return sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if inside(module, importer) and inside(target, imported))


@pytest.mark.parametrize("importer, imported", FORBIDDEN)
def test_no_import_against_the_layers(graph, importer, imported):
    assert against_the_layers(graph, importer, imported) == []


def test_the_walk_catches_a_back_stair(tmp_path):
    """The rules can fail: a cycle, and a late import from models into tasks inside a function."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    source = tmp_path / "positions.py"
    source.write_text("def f():\n    from ..tasks.common import column\n    from . import hooks\n")
    known = set(modules())
    found = imports_of("workbench.models.positions", source, known)
    assert found == {"workbench.tasks.common", "workbench.models.hooks"}
    assert against_the_layers({"workbench.models.positions": found}, *FORBIDDEN[0]) == [
        "workbench.models.positions -> workbench.tasks.common"]
