"""One paper style for every figure: readable fonts, colour-blind-safe colours, column widths.

Widths follow common two-column venues: one column ~3.35 in, two columns ~7 in; at 96 px per inch
that is 320 and 672 px. Static export scales them up, so the text stays legible in print.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

# Okabe & Ito (2008): distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
WIDTHS = {"single": 320, "double": 672}
SEQUENTIAL = "Viridis"  # perceptually uniform, safe in greyscale
FONT = dict(family="DejaVu Sans, Arial, sans-serif", size=10)


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def dash(index: int) -> str:
    """Past the palette's eight colours a series repeats a colour, so it changes its dash instead."""
    return ("solid", "dash", "dot")[index // len(PALETTE) % 3]


def seed_band(x, low, high, index: int, group: str | None = None) -> go.Scatter:
    """The min-max band over seeds around a median line: a filled outline in the line's colour, with no
    vertex markers, no hover and no legend entry of its own (it toggles with its line's `group`)."""
    x = np.asarray(x)
    return go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([np.asarray(high), np.asarray(low)[::-1]]),
                      fill="toself", mode="lines", fillcolor=color(index), opacity=0.18, line=dict(width=0),
                      hoverinfo="skip", showlegend=False, legendgroup=group)


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


# --- log axes ------------------------------------------------------------------------------------
# Plotly's own ticks on a log axis spanning up to about five decades label every minor digit without
# its power ("5" may be 0.5 or 500), so every log axis with a data-driven range takes its ticks here.
FEW_DECADES = 3  # up to this span: 1, 2 and 5 times each power of ten; beyond it, the powers alone


def _positive(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[values > 0]


def decades(values) -> float:
    """How many factors of 10 the positive values span (0 for fewer than two of them)."""
    positive = _positive(values)
    return float(np.log10(positive.max() / positive.min())) if len(positive) > 1 else 0.0


def log_axis(values) -> dict:
    """Axis settings for a log scale over these values: ticks written out in full ("~g"), at 1, 2 and 5
    times each power of ten over up to FEW_DECADES decades and at the powers of ten beyond. Where
    the values are too close for two such ticks, plotly places its own."""
    positive = _positive(values)
    low, high = positive.min(), positive.max()
    multiples = (1, 2, 5) if decades(positive) < FEW_DECADES else (1,)
    powers = range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
    ticks = [float(f"{m}e{p}") for p in powers for m in multiples if low <= m * 10.0 ** p <= high]
    return dict(type="log", tickvals=ticks if len(ticks) > 1 else None, tickformat="~g")
