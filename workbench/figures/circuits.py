"""Figures of the circuits tools: a patching heatmap (layer x position), detector scores per head over
training, the logit lens, and the induction-heads experiment's curves. Pure functions from the tidy
tables that workbench.circuits returns."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import SEQUENTIAL, color, paper_style, seed_band

DIVERGING = "RdBu"  # patching effects are signed: red recovers the clean answer, blue pushes away


def patching_heatmap(sweep: pd.DataFrame, component: str = "resid_pre", tokens: list[str] | None = None,
                     title: str | None = None) -> go.Figure:
    """Effect (fraction of the clean logit difference recovered) of patching one component at each
    (layer, position); units of a component are summed into one cell per (layer, position) only when
    the sweep patched units, where each unit gets its own row instead ("L1 u2").

    sweep: columns layer, position, component, unit, effect (workbench.circuits.patching)."""
    part = sweep[sweep.component == component]
    if part.empty:
        raise ValueError(f"the sweep has no component {component!r}; it has {sorted(sweep.component.unique())}")
    per_unit = bool((part.unit >= 0).any())
    part = part.assign(row=[f"L{l} u{u}" if per_unit else f"layer {l}" for l, u in zip(part.layer, part.unit)])
    order = part.sort_values(["layer", "unit"]).row.unique().tolist()
    grid = part.pivot_table(index="row", columns="position", values="effect", aggfunc="mean").reindex(order)
    limit = max(float(np.nanmax(np.abs(grid.to_numpy()))), 1e-6)
    x = [f"{p}: {tokens[p]}" if tokens and p < len(tokens) else str(p) for p in grid.columns]
    fig = go.Figure(go.Heatmap(z=grid.to_numpy(), x=x, y=grid.index.tolist(), colorscale=DIVERGING, zmid=0,
                               zmin=-limit, zmax=limit, reversescale=True,
                               colorbar=dict(thickness=8, title=dict(text="recovered", side="right")),
                               hovertemplate="%{y}<br>position %{x}<br>recovered %{z:.2f}<extra></extra>"))
    fig.update_xaxes(title_text="position", type="category")
    fig.update_yaxes(autorange="reversed")
    height = 120 + 22 * len(order)
    return paper_style(fig, width="double", height=min(max(height, 220), 700), title=title)


def detector_scores_over_training(scores: pd.DataFrame, detector: str = "induction_score",
                                  title: str | None = None) -> go.Figure:
    """One line per (layer, head) of one detector's score against the training step.

    scores: a run's metrics rows (step, probe, layer, head, value) or any frame with those columns."""
    part = scores[(scores.probe == detector) & (scores["head"] >= 0)]
    fig = go.Figure()
    for i, ((layer, head), rows) in enumerate(part.groupby(["layer", "head"])):
        rows = rows.sort_values("step")
        fig.add_trace(go.Scatter(x=rows.step, y=rows.value, mode="lines", name=f"L{layer} h{head}",
                                 line=dict(color=color(i))))
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text=detector.replace("_", " "), range=[-0.02, 1.02])
    return paper_style(fig, width="double", height=300, title=title)


def logit_lens_figure(lens: pd.DataFrame, value: str = "logit_diff", title: str | None = None) -> go.Figure:
    """The answer's logit (or logit difference) read from the residual stream after each stage.

    lens: columns layer, stage and `value` (workbench.circuits.lens.logit_lens)."""
    labels = [f"{s}" if layer < 0 else f"L{layer} {s}" for layer, s in zip(lens.layer, lens.stage)]
    fig = go.Figure(go.Scatter(x=labels, y=lens[value], mode="lines+markers", line=dict(color=color(0))))
    fig.update_xaxes(title_text="residual stream after", type="category")
    fig.update_yaxes(title_text=value.replace("_", " "))
    return paper_style(fig, width="double", height=280, title=title)


def induction_over_training(table: pd.DataFrame, title: str | None = None) -> go.Figure:
    """The induction-heads experiment: per mixer, exact match, the best answer-induction score and the
    evaluation loss divided by its first value, against the step (median over seeds, min-max band).

    table: columns mixer, seed, metric, step, value."""
    mixers = list(dict.fromkeys(table.mixer))
    columns = min(4, max(1, len(mixers)))
    rows = -(-len(mixers) // columns)
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=[m.replace("_", " ") for m in mixers],
                        shared_yaxes=True, horizontal_spacing=0.04, vertical_spacing=0.14)
    lines = [("exact_match", "in-context accuracy"), ("answer_induction", "best induction score"),
             ("loss", "eval loss / first")]
    for k, mixer in enumerate(mixers):
        row, col = 1 + k // columns, 1 + k % columns
        for i, (metric, name) in enumerate(lines):
            part = table[(table.mixer == mixer) & (table.metric == metric)]
            if part.empty:
                continue
            if metric == "loss":  # each seed scaled by its own first reading, so the curves share 0..1
                part = part.assign(value=part.groupby("seed").value.transform(lambda v: v / v.iloc[0]))
            stats = part.groupby("step")["value"].agg(["median", "min", "max"]).reset_index()
            fig.add_trace(seed_band(stats.step, stats["min"], stats["max"], i), row=row, col=col)
            fig.add_trace(go.Scatter(x=stats.step, y=stats["median"], mode="lines", name=name, legendgroup=name,
                                     showlegend=k == 0, line=dict(color=color(i), width=1.5)), row=row, col=col)
        fig.update_xaxes(title_text="step" if row == rows else None, row=row, col=col)
    fig.update_yaxes(range=[-0.03, 1.1])
    fig.update_layout(legend=dict(orientation="h", y=-0.12))
    fig.update_annotations(font_size=9)
    return paper_style(fig, width="double", height=220 * rows + 60, title=title)


def unit_scores_heatmap(scores: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Every detector's score for every (layer, unit) of one model: rows detectors, columns units.

    scores: columns layer, unit, detector, score (workbench.circuits.detectors)."""
    part = scores.assign(column=[f"L{l} u{u}" for l, u in zip(scores.layer, scores.unit)])
    order = part.sort_values(["layer", "unit"]).column.unique().tolist()
    grid = part.pivot_table(index="detector", columns="column", values="score").reindex(columns=order)
    fig = go.Figure(go.Heatmap(z=grid.to_numpy(), x=order, y=grid.index.tolist(), colorscale=SEQUENTIAL,
                               zmin=0, zmax=1, colorbar=dict(thickness=8),
                               hovertemplate="%{y}<br>%{x}<br>score %{z:.2f}<extra></extra>"))
    fig.update_xaxes(type="category")
    return paper_style(fig, width="double", height=200, title=title)
