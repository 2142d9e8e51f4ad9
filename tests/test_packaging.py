"""The package ships every module, kernels/ arrives as workbench.kernels, torch stays a range."""
from __future__ import annotations

import importlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; on 3.10 the metadata checks are skipped

REPO_ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def python_files(folder: Path, package: str) -> set[str]:
    """Where each .py file below `folder` lands in the wheel, as a path inside the package."""
    prefix = package.replace(".", "/")
    return {
        f"{prefix}/{path.relative_to(folder).as_posix()}"
        for path in folder.rglob("*.py")
        if "__pycache__" not in path.parts and ".ipynb_checkpoints" not in path.parts
    }


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    # --no-build-isolation: build with the installed setuptools, offline and in a few seconds
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO_ROOT)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=out)
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = out.glob("workbench-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_wheel_holds_every_module_with_kernels_under_workbench(wheel_files):
    expected = python_files(REPO_ROOT / "workbench", "workbench") | python_files(REPO_ROOT / "kernels", "workbench.kernels")
    assert "workbench/kernels/__init__.py" in expected
    missing = sorted(expected - wheel_files)
    assert not missing, f"left out of the wheel: {missing}"
    assert not any(name.startswith("kernels/") for name in wheel_files), "kernels/ must not ship as a top-level package"


def test_kernels_folder_imports_as_workbench_kernels():
    kernels = importlib.import_module("workbench.kernels")
    assert Path(kernels.__file__).resolve().parent == REPO_ROOT / "kernels"


def test_torch_is_a_range_the_tested_release_satisfies():
    torch = next(Requirement(dep) for dep in PYPROJECT["project"]["dependencies"] if Requirement(dep).name == "torch")
    assert torch.specifier.contains("2.13.0")
    assert not any(spec.operator in ("==", "===") for spec in torch.specifier), "a pin would fight the Makefile's torch"


def test_console_script_points_at_the_cli():
    assert PYPROJECT["project"]["scripts"]["workbench"] == "workbench.cli:main"
