"""Figures of kernel measurements (workbench.kernels.measure): memory against sequence length.
(Entropy against test length, which the streaming kernels measure, is a probe figure: builders.)"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .style import color, log_axis, paper_style

MiB = 2 ** 20


def memory_vs_length(table: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Peak tensor memory (MiB, log scale) against T, one line per backend, with the size of one
    head's T x T score matrix dashed for scale. `table` is entropy_memory's output."""
    fig = go.Figure()
    for i, (backend, rows) in enumerate(table.groupby("backend", sort=False)):
        rows = rows.sort_values("T")
        fig.add_trace(go.Scatter(x=rows["T"], y=rows.peak_bytes / MiB, mode="lines+markers", name=str(backend),
                                 line=dict(color=color(i)),
                                 hovertemplate="T %{x}<br>%{y:.2f} MiB<extra>" + str(backend) + "</extra>"))
    scale = table.drop_duplicates("T").sort_values("T")
    fig.add_trace(go.Scatter(x=scale["T"], y=scale.scores_bytes / MiB, mode="lines", name="one T x T map",
                             line=dict(color="grey", dash="dash"), hoverinfo="skip"))
    # one tick per measured length; the memory axis ticks as every log axis does (style.log_axis)
    fig.update_xaxes(title="sequence length T (log scale)", type="log", tickvals=sorted(table["T"].unique()), tickformat="~g")
    fig.update_yaxes(title="peak tensor memory (MiB, log scale)",
                     **log_axis(pd.concat([table.peak_bytes, table.scores_bytes]) / MiB))
    return paper_style(fig, height=320, title=title)


def peak_memory_vs_length(table: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Measured peak resident memory (MiB, log-log) against T for each path (median over seeds, a dot per
    seed), the chunked path's algorithmic bound dashed and the reference's T x T floor dotted.

    table: columns seed, T, backend, peak_bytes, bound_bytes (the chunked bound or the reference floor)."""
    fig = go.Figure()
    for i, (backend, rows) in enumerate(table.groupby("backend", sort=False)):
        stats = rows.groupby("T").agg(peak=("peak_bytes", "median"), bound=("bound_bytes", "first")).reset_index()
        fig.add_trace(go.Scatter(x=stats["T"], y=stats.peak / MiB, mode="lines+markers", name=f"{backend}, measured",
                                 line=dict(color=color(i)), legendgroup=str(backend),
                                 hovertemplate="T %{x}<br>%{y:.1f} MiB<extra>" + str(backend) + "</extra>"))
        fig.add_trace(go.Scatter(x=rows["T"], y=rows.peak_bytes / MiB, mode="markers", showlegend=False,
                                 marker=dict(color=color(i), size=5, opacity=0.5), legendgroup=str(backend),
                                 hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=stats["T"], y=stats.bound / MiB, mode="lines", legendgroup=str(backend),
                                 name="chunked bound" if backend == "chunked" else "one H x T x T map (floor)",
                                 line=dict(color=color(i), dash="dash" if backend == "chunked" else "dot", width=1.5),
                                 hoverinfo="skip"))
    fig.update_xaxes(title="sequence length T (log scale)", type="log", tickvals=sorted(table["T"].unique()),
                     tickformat="~g")
    fig.update_yaxes(title="peak resident memory added (MiB, log scale)",
                     **log_axis(pd.concat([table.peak_bytes, table.bound_bytes]).clip(lower=MiB) / MiB))
    return paper_style(fig, height=320, title=title)
