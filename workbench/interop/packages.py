"""The optional packages of the interop extra, loaded on demand with a one-line error when absent.

The extra `interop` (`pip install -e '.[interop]'`, which make runs) brings Hugging Face
transformers, TransformerLens and nnsight.
The rest of the workbench never imports them.

One trap, handled here: transformers 5 imports the PyPI package `kernels` whenever it is
installed (it is one of its dependencies). Run from the repository root (pytest, `python -m
workbench`), the current folder is first on sys.path, so `import kernels` would find the
repository's own kernels/ folder (which the workbench imports as `workbench.kernels`) instead, and
transformers would fail on import. `load` puts the installed distribution under that name first.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

from ..errors import ConfigError

EXTRA = "interop"
INSTALL_HINT = f"pip install -e '.[{EXTRA}]' in the workbench repository (make installs it)"
REPO_ROOT = Path(__file__).resolve().parents[2]


def load(name: str, purpose: str):
    """Import an optional package, or raise a ConfigError (exit 2) that names the extra to install."""
    # transformers 5 "kernelizes" every model it loads with kernels fetched from the Hugging Face hub
    # (GPU code; a download, which the workbench never makes at run time): off unless asked for.
    os.environ.setdefault("USE_HUB_KERNELS", "0")
    _prefer_installed_kernels()
    try:
        return importlib.import_module(name)
    except ImportError as error:
        missing = (error.name or name).split(".")[0]
        raise ConfigError(purpose, missing, f"this needs the {EXTRA} extra, which is not installed: "
                                            f"{INSTALL_HINT}") from None


@contextlib.contextmanager
def quiet(transformers):
    """No progress bars or advice from transformers on stderr while the workbench loads and saves
    models, so the commands print what they document; the previous settings come back after."""
    logging = transformers.utils.logging
    bars, verbosity = logging.is_progress_bar_enabled(), logging.get_verbosity()
    logging.disable_progress_bar()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        if bars:
            logging.enable_progress_bar()
        logging.set_verbosity(verbosity)


def available(name: str) -> bool:
    """Whether an optional package can be imported (for tests and for choosing a code path)."""
    _prefer_installed_kernels()
    return importlib.util.find_spec(name) is not None


def _from_repository(module) -> bool:
    origin = getattr(module, "__file__", None) or ""
    return bool(origin) and Path(origin).resolve().is_relative_to(REPO_ROOT)


def _prefer_installed_kernels() -> None:
    """Make `kernels` the installed PyPI distribution, not the repository's folder (see above)."""
    current = sys.modules.get("kernels")
    if current is not None and not _from_repository(current):
        return
    try:
        init = Path(importlib.metadata.distribution("kernels").locate_file("kernels/__init__.py"))
    except importlib.metadata.PackageNotFoundError:
        return  # transformers then never imports it
    if not init.is_file():
        return
    for name in [n for n in sys.modules if n == "kernels" or n.startswith("kernels.")]:
        del sys.modules[name]  # the repository's copy stays reachable as workbench.kernels
    spec = importlib.util.spec_from_file_location("kernels", init, submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["kernels"] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules["kernels"]
        raise
