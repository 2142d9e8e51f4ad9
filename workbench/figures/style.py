"""One paper style for every figure: readable fonts, colour-blind-safe colours, column widths.

Widths follow common two-column venues: one column ~3.35 in, two columns ~7 in; at 96 px per inch
that is 320 and 672 px. Static export scales them up, so the text stays legible in print.
"""
from __future__ import annotations

import plotly.graph_objects as go

# Okabe & Ito (2008): distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
WIDTHS = {"single": 320, "double": 672}
SEQUENTIAL = "Viridis"  # perceptually uniform, safe in greyscale
FONT = dict(family="DejaVu Sans, Arial, sans-serif", size=10)


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def paper_style(fig: go.Figure, width: str | int | None = None, height: int | None = None,
                title: str | None = None) -> go.Figure:
    """Apply the house style in place; no title inside the plot unless one is asked for."""
    fig.update_layout(
        template="simple_white", font=FONT, colorway=PALETTE,
        margin=dict(l=48, r=12, t=28 if title else 12, b=40),
        legend=dict(font=dict(size=9), bgcolor="rgba(255,255,255,0.6)"),
        title=dict(text=title) if title else None,
    )
    if width is not None:
        fig.update_layout(width=WIDTHS.get(width, width) if isinstance(width, str) else width)
    if height is not None:
        fig.update_layout(height=height)
    return fig
