"""Point kaleido at the system Chromium, so static export never downloads a browser.

Kaleido 1.x renders PNG/SVG/PDF in a headless Chromium that it starts through choreographer.
Choreographer looks for a browser in this order: a copy it downloaded itself
(`kaleido_get_chrome`), then the `BROWSER_PATH` environment variable, then `chrome`,
`chromium`, ... on PATH. We never download (tests and CI run offline, and Debian's `chromium`
package is the one browser we support), so `configure_chromium()` sets `BROWSER_PATH` to the
system Chromium before the first export. A `BROWSER_PATH` the user already set always wins.
Without any browser, `require_browser()` says so in one line (MissingSystemPackage) instead of
kaleido's traceback. `retry_kaleido_startup()` wraps one export against a start-up race inside
kaleido itself.
"""
from __future__ import annotations

import os
import shutil
from typing import Callable, TypeVar

T = TypeVar("T")

BROWSER_PATH_VARIABLE = "BROWSER_PATH"  # read by choreographer.utils.get_browser_path
CHROMIUM_NAMES = ("chromium", "chromium-browser")  # Debian's and Ubuntu's names
NO_BROWSER = ("figure export needs Chromium and this machine has none (no chromium on PATH, BROWSER_PATH unset); "
              "install it with `sudo apt-get install chromium` (Debian/Ubuntu; `make system` does it), "
              "or set BROWSER_PATH to a Chromium-based browser")


def find_chromium() -> str | None:
    """The path of the system Chromium, or None when none is on PATH."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def configure_chromium() -> str | None:
    """Make kaleido use the system Chromium; return the browser path in effect (None: not found).

    Safe to call any number of times: it only fills in `BROWSER_PATH` when it is unset.
    """
    current = os.environ.get(BROWSER_PATH_VARIABLE)
    if current:
        return current
    path = find_chromium()
    if path:
        os.environ[BROWSER_PATH_VARIABLE] = path
    return path


def missing_browser() -> str | None:
    """None when figure export has a browser to render with; otherwise the one line that says what to
    install (the tests that need a browser skip with it)."""
    return None if configure_chromium() else NO_BROWSER


def require_browser() -> str:
    """The browser's path, or MissingSystemPackage with the one line of missing_browser()."""
    from ..errors import MissingSystemPackage

    path = configure_chromium()
    if path is None:
        raise MissingSystemPackage(NO_BROWSER)
    return path


# Kaleido 1.x (seen with 1.5) asks Chromium for the page's JavaScript context right after
# starting navigation; on a busy machine it sometimes gets the blank page's context instead,
# and the export fails with "kaleido_scopes is not defined". A fresh attempt starts a fresh page.
KALEIDO_STARTUP_RACE = "kaleido_scopes is not defined"


def retry_kaleido_startup(write: Callable[[], T], attempts: int = 3) -> T:
    """Call `write()` (an export through kaleido), retrying only on kaleido's start-up race."""
    for _ in range(attempts - 1):
        try:
            return write()
        except Exception as error:  # kaleido's JavascriptError; matched by message, not by class
            if KALEIDO_STARTUP_RACE not in str(error):
                raise
    return write()
