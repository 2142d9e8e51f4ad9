"""Notebook cells tagged `needs-browser` (they export a figure through kaleido) are skipped, with the
one-line reason, on a machine without a browser; nbval items carry their cell. Where
WORKBENCH_REQUIRE_BROWSER is set (.ci/run) the cell runs, and fails, rather than hide the gap."""
import os

import pytest

NEEDS_BROWSER_TAG = "needs-browser"


def pytest_collection_modifyitems(config, items):
    from workbench.figures.chromium import missing_browser

    reason = missing_browser()
    if reason is None or os.environ.get("WORKBENCH_REQUIRE_BROWSER"):
        return
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and NEEDS_BROWSER_TAG in cell.get("metadata", {}).get("tags", []):
            item.add_marker(pytest.mark.skip(reason=reason))
