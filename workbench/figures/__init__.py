"""Figures: plotly builders from stored runs, one paper style, export to PNG/SVG/PDF."""
from .builders import attention_grid, attention_map, length_curve, metric_over_steps  # noqa: F401
from .export import export, to_bytes  # noqa: F401
from .style import PALETTE, WIDTHS, paper_style  # noqa: F401
