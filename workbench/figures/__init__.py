"""Figures: plotly builders from stored runs, one paper style, export to PNG/SVG/PDF.

The builders and the style load on first use (PEP 562), so `workbench --help`, which lists the
export figures, does not pay for importing plotly. `export` stays eager: it needs no plotly, and
binding it here keeps `workbench.figures.export` the function, as before, not its module.
"""
from __future__ import annotations

import importlib

from .export import export, to_bytes  # noqa: F401

_LAZY = {"attention_grid": "builders", "attention_map": "builders", "length_curve": "builders",
         "metric_over_steps": "builders", "PALETTE": "style", "WIDTHS": "style", "paper_style": "style"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
