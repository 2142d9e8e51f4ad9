"""Figures of the looped-linear-transformer recipes: error against depth (icl-depth-and-looping) and the
learned step matrix beside the inverse covariance (icl-preconditioned-gd)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import color, paper_style

DEPTH_MODELS = ("looped", "stacked", "stacked-truncated", "gradient descent")


def error_vs_depth(table: pd.DataFrame, title: str | None = None) -> go.Figure:
    """One panel per training kappa: error at the query against depth (loops, layers, or steps of gradient
    descent), median over seeds; solid on the training kappa, dotted on the shifted one.

    table: columns kappa, eval_kappa, seed, model, depth, error."""
    kappas = sorted(table[table.seed >= 0].kappa.unique())
    fig = make_subplots(rows=1, cols=len(kappas), subplot_titles=[f"trained at kappa {k:g}" for k in kappas],
                        shared_yaxes=True)
    for col, kappa in enumerate(kappas, start=1):
        trained = table[(table.kappa == kappa) & (table.seed >= 0)]
        for i, model in enumerate(DEPTH_MODELS):
            for shifted in (False, True):
                if model == "gradient descent":
                    shifts = sorted(trained.eval_kappa.unique())
                    rows = table[(table.model == model) & (table.kappa == (shifts[-1] if shifted else kappa))]
                else:
                    rows = trained[(trained.model == model) & ((trained.eval_kappa != kappa) == shifted)]
                if rows.empty:
                    continue
                stats = rows.groupby("depth").error.median().reset_index()
                name = f"{model} (kappa x shift)" if shifted else model
                fig.add_trace(go.Scatter(x=stats.depth, y=stats.error, mode="lines+markers", name=name,
                                         legendgroup=name, showlegend=col == 1,
                                         line=dict(color=color(i), dash="dot" if shifted else "solid")),
                              row=1, col=col)
    fig.update_yaxes(type="log")
    fig.update_yaxes(title_text="error at the query (squared error / d)", col=1)
    fig.update_xaxes(title_text="depth (layers, loops or steps)")
    fig.update_layout(legend=dict(orientation="h", y=-0.3))
    fig = paper_style(fig, width="double", height=380, title=title)
    fig.update_layout(margin=dict(t=40))
    return fig


def preconditioner_panels(table: pd.DataFrame, summary: dict, title: str | None = None) -> go.Figure:
    """Three panels: the read-out step matrix P (seed 0, scaled to unit norm), Sigma^-1 (unit norm), and
    error against loops for the model (each seed) beside preconditioned gradient descent."""
    seeds = summary.get("step_matrices", {})
    P = np.array(seeds[sorted(seeds, key=int)[0]]) if seeds else np.zeros((1, 1))
    inverse = np.array(summary.get("inverse_covariance", [[0.0]]))
    scale = lambda m: m / max(np.linalg.norm(m), 1e-12)  # noqa: E731
    fig = make_subplots(rows=1, cols=3, subplot_titles=["learned P (seed 0)", "Σ⁻¹", "error at the query (log)"],
                        column_widths=[0.22, 0.22, 0.56], horizontal_spacing=0.05)
    top = float(max(np.abs(scale(P)).max(), np.abs(scale(inverse)).max(), 1e-12))
    for col, matrix in ((1, scale(P)), (2, scale(inverse))):
        fig.add_trace(go.Heatmap(z=matrix, zmin=-top, zmax=top, colorscale="RdBu", reversescale=True,
                                 showscale=col == 2, colorbar=dict(x=0.445, len=0.8, thickness=10)), row=1, col=col)
        fig.update_yaxes(autorange="reversed", row=1, col=col)
    for i, (model, rows) in enumerate(table.groupby("model", sort=False)):
        for j, (seed, part) in enumerate(rows.groupby("seed")):
            fig.add_trace(go.Scatter(x=part.loops, y=part.error, mode="lines+markers", name=model,
                                     legendgroup=model, showlegend=j == 0, line=dict(color=color(i))), row=1, col=3)
    fig.update_yaxes(type="log", row=1, col=3)
    fig.update_xaxes(title_text="loops / steps", row=1, col=3)
    fig.update_layout(legend=dict(orientation="h", y=-0.25, x=0.55, xanchor="left"))
    fig.update_xaxes(domain=[0.56, 1.0], row=1, col=3)
    fig = paper_style(fig, width="double", height=340, title=title)
    fig.update_layout(margin=dict(t=40))
    return fig
