"""What the inside-the-model experiments share: their run config, the series they read from a run's
metrics, and the line figure most of them draw."""
from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...config import RunConfig
from ...figures.style import color, dash, paper_style
from ...reports import layer_rows
from ..base import ExperimentResult


def config(overrides: list[str]) -> RunConfig:
    """A recipe's run: no held-out evals, checkpoints or snapshots unless the recipe asks for them."""
    return RunConfig.load(None, ["train.eval_every=0", "train.checkpoint_every=0", "probes.snapshots=false",
                                 *overrides])


def per_layer(metrics: pd.DataFrame, probe: str) -> dict[int, pd.Series]:
    """layer -> (step -> the probe's value in that layer)."""
    return {int(layer): part.set_index("step")["value"].sort_index()
            for layer, part in layer_rows(metrics, probe).groupby("layer")}


def series_rows(labels: dict, metric: str, series: pd.Series) -> list[dict]:
    return [{**labels, "metric": metric, "step": int(s), "value": float(v)} for s, v in series.items()]


def _natural(name: str) -> list:
    """Sort key that reads the numbers in a name as numbers: "width 32" before "width 128"."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def lines(result: ExperimentResult, metrics: list[tuple[str, str]], series_key, markers=None) -> go.Figure:
    """One panel per (metric, axis title); one line per series; optional vertical markers per series."""
    table = result.table
    fig = make_subplots(rows=1, cols=len(metrics), horizontal_spacing=0.16)  # room for each panel's y title
    names = sorted(table.apply(series_key, axis=1).unique(), key=_natural) if len(table) else []
    for col, (metric, title) in enumerate(metrics, start=1):
        rows = table[table.metric == metric]
        for i, name in enumerate(names):
            part = rows[rows.apply(series_key, axis=1) == name].sort_values("step")
            fig.add_trace(go.Scatter(x=part.step, y=part.value, mode="lines", name=name, legendgroup=name,
                                     showlegend=col == 1, line=dict(color=color(i), dash=dash(i))), row=1, col=col)
            step = (markers or {}).get(name)
            if step is not None:
                fig.add_vline(x=step, line=dict(dash="dot", color=color(i), width=1.5), opacity=1, row=1, col=col)
        fig.update_xaxes(title_text="step", row=1, col=col)
        fig.update_yaxes(title_text=title, row=1, col=col)
    return paper_style(fig, width="double", height=max(300, 110 + 30 * len(names)))  # every legend entry shows

