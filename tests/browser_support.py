"""Skipping (or, in CI, failing) a test that needs a browser the machine lacks. A module of its own,
not conftest.py: notebooks/ has a conftest too, so `import conftest` in a test finds either one."""
from __future__ import annotations

import os

import pytest


def skip_without_browser() -> None:
    """Skip (or, where WORKBENCH_REQUIRE_BROWSER is set, fail) unless a browser is there."""
    from workbench.figures.chromium import missing_browser

    reason = missing_browser()
    if reason is None:
        return
    if os.environ.get("WORKBENCH_REQUIRE_BROWSER"):
        pytest.fail(f"{reason} (WORKBENCH_REQUIRE_BROWSER is set: `make system` should have installed it)")
    pytest.skip(reason)
