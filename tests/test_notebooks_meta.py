"""Every teaching notebook keeps the shape a lecturer relies on (nbval checks that they run).

- a markdown cell with the learning goals;
- an assert cell, stating what the result should show;
- exercises with their solutions folded away (<details>);
- code that only imports workbench, the standard library, torch, ipywidgets and IPython, and computes
  no metric of its own: no reductions or softmaxes on tensors or frames (a number the notebook needs
  belongs in workbench, where it is tested and shared with the dashboard).
"""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
ALLOWED_IMPORTS = {"workbench", "torch", "ipywidgets", "IPython"} | set(sys.stdlib_module_names)
# Calls that compute a metric: notebooks read numbers from workbench instead.
METRIC_CALLS = {"softmax", "log_softmax", "logsumexp", "mean", "sum", "std", "var", "median", "quantile",
                "argmax", "argmin", "topk", "einsum", "matmul", "norm", "cumsum", "entropy", "agg", "aggregate"}


def cells(path: Path, kind: str) -> list[str]:
    notebook = json.loads(path.read_text())
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == kind]


def code_tree(source: str) -> ast.Module:
    # IPython magics and shell escapes are not Python; blank them out before parsing
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    return ast.parse("\n".join(lines))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_learning_goals_come_first(path):
    markdown = cells(path, "markdown")
    assert markdown and re.search(r"learning goals", markdown[0], re.IGNORECASE), \
        f"{path.name}: the first markdown cell should state the learning goals"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_an_assert_cell_states_the_result(path):
    asserting = [source for source in cells(path, "code")
                 if any(isinstance(node, ast.Assert) for node in ast.walk(code_tree(source)))]
    assert asserting, f"{path.name}: needs a cell that asserts what the result should show"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercises_have_folded_solutions(path):
    markdown = "\n".join(cells(path, "markdown"))
    assert re.search(r"exercise", markdown, re.IGNORECASE), f"{path.name}: no exercises"
    assert "<details>" in markdown, f"{path.name}: fold the solutions away in <details>"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_only_imports_what_teaching_needs(path):
    for source in cells(path, "code"):
        for node in ast.walk(code_tree(source)):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""] if node.level == 0 else []
            else:
                continue
            for module in modules:
                assert module.split(".")[0] in ALLOWED_IMPORTS, \
                    f"{path.name}: imports {module!r}; notebooks import only workbench, stdlib, torch, ipywidgets, IPython"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_computes_no_metric_itself(path):
    for source in cells(path, "code"):
        for node in ast.walk(code_tree(source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert node.func.attr not in METRIC_CALLS, \
                    f"{path.name}: `.{node.func.attr}(...)` computes a metric in the notebook; add it to workbench"
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                raise AssertionError(f"{path.name}: `@` computes in the notebook; add the computation to workbench")


def test_the_metric_rule_catches_what_it_should():
    flagged = []
    for source in ["p = scores.softmax(-1)", "x = table.value.mean()", "y = a @ b", "import numpy as np"]:
        tree = code_tree(source)
        flagged.append(any(
            (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in METRIC_CALLS)
            or (isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult))
            or (isinstance(n, ast.Import) and n.names[0].name.split(".")[0] not in ALLOWED_IMPORTS)
            for n in ast.walk(tree)))
    assert flagged == [True, True, True, True]
    assert not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in METRIC_CALLS
                   for n in ast.walk(code_tree("result = run_experiment('x', fast=True)\n%time train(c)")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nbval_markers_are_cell_tags_not_comments_students_read(path):
    marked = [source.splitlines()[0] for source in cells(path, "code")
              if re.search(r"^\s*#\s*(NBVAL_|PYTEST_VALIDATE_)", source, re.MULTILINE)]
    assert not marked, f"{path.name}: use the cell tag (e.g. nbval-ignore-output) instead of the comment: {marked}"
