"""Small conveniences for the teaching notebooks: fast mode and budgets.

`WORKBENCH_FAST=1` (set by `make test`) runs every notebook on the same code path with smaller
budgets, so the notebooks double as tests.
"""
from __future__ import annotations

import os


def fast_mode() -> bool:
    return os.environ.get("WORKBENCH_FAST", "") not in ("", "0", "false")


def budget(full, fast):
    """`full` normally, `fast` under WORKBENCH_FAST=1."""
    return fast if fast_mode() else full
