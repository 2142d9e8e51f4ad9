"""Package discovery that pyproject.toml alone cannot express.

All metadata lives in pyproject.toml. The one thing added here is the package list: every
folder under workbench/, plus the top-level kernels/ folder, which pyproject.toml's
[tool.setuptools.package-dir] maps to `workbench.kernels` (a top-level package called `kernels`
would clash with the PyPI package of that name). Automatic discovery cannot follow such a
mapping, and a hand-written list breaks the install whenever a folder is added, or is still
empty in a fresh clone.
"""
from setuptools import find_namespace_packages, setup

SKIPPED = ["*__pycache__*", "*.ipynb_checkpoints*"]


def workbench_packages() -> list[str]:
    core = find_namespace_packages(include=["workbench", "workbench.*"], exclude=SKIPPED)
    kernels = find_namespace_packages(where="kernels", exclude=SKIPPED)
    return core + ["workbench.kernels"] + [f"workbench.kernels.{name}" for name in kernels]


setup(packages=workbench_packages())
