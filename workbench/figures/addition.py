"""Figures of where addition models attend (workbench.probes.addition_attention)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .style import color, paper_style


def significance_bars(summary: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Stacked bars, one per head: the mean attention mass of an answer query on operand digits
    of the significance it predicts ("same"), one below ("below"), other digits and other tokens.
    `summary` is significance_summary's output."""
    fig = go.Figure()
    for i, (group, rows) in enumerate(summary.groupby("group", sort=True, observed=True)):
        fig.add_trace(go.Bar(x=[f"head {h}" for h in rows["head"]], y=rows["mass"], name=str(group),
                             marker_color=color(i),
                             hovertemplate="%{x}<br>mass %{y:.2f}<extra>" + str(group) + "</extra>"))
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="attention mass", range=[0, 1.02])
    return paper_style(fig, height=300, title=title)
