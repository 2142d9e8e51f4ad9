"""Figure builders: pure functions from stored data (or a Run) to plotly Figures.

The dashboard pages and the notebooks call these; none of them computes a metric.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from ..tasks.common import RANDOM_START
from .style import SEQUENTIAL, color, dash, decades, log_axis, paper_style, seed_band

SHORT_SERIES = 30  # series with at most this many points are drawn with markers
MAP_WIDTH = 480  # one map: wide enough for token labels, close to square


def _labels(tokens: list[str]) -> list[str]:
    # plotly merges equal category labels, so each token gets its index
    return [f"{i}:{t}" for i, t in enumerate(tokens)]


def _thinned(labels: list[str], most: int) -> list[str]:
    """At most about `most` of the labels, evenly spaced: past ~20 tokens every label overlaps its neighbours."""
    return labels[::max(1, math.ceil(len(labels) / most))]


MAP_TICKS, GRID_TICKS = 24, 10  # token labels per axis on one map, and on a small map of the grid


def attention_map(pattern: np.ndarray, tokens: list[str], title: str | None = None,
                  zmax: float | None = None) -> go.Figure:
    """One (T, T) query x key map with tokens on both axes; hover shows query, key and weight."""
    pattern = np.asarray(pattern, dtype=float)
    T = pattern.shape[-1]
    labels = _labels(tokens[:T] + ["?"] * max(0, T - len(tokens)))
    fig = go.Figure(go.Heatmap(
        z=pattern, x=labels, y=labels, colorscale=SEQUENTIAL, zmin=0, zmax=zmax,
        hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>",
        colorbar=dict(thickness=10)))
    ticks = _thinned(labels, MAP_TICKS)
    fig.update_yaxes(autorange="reversed", title="query", tickfont=dict(size=10), tickvals=ticks)
    fig.update_xaxes(title="key", tickfont=dict(size=10), tickvals=ticks, tickangle=-90 if T > 12 else 0)
    return paper_style(fig, width=MAP_WIDTH, height=420, title=title)


def attention_grid(patterns: dict[int, np.ndarray], tokens: list[str], title: str | None = None) -> go.Figure:
    """A grid of small maps, one row per layer and one column per head: patterns[layer] is (H, T, T)."""
    layers = sorted(patterns)
    heads = max(patterns[layer].shape[0] for layer in layers)
    fig = make_subplots(rows=len(layers), cols=heads, horizontal_spacing=0.03, vertical_spacing=0.06,
                        subplot_titles=[f"L{layer} H{h}" for layer in layers for h in range(heads)])
    T = next(iter(patterns.values())).shape[-1]
    labels = _labels(tokens[:T] + ["?"] * max(0, T - len(tokens)))
    for r, layer in enumerate(layers):
        for h in range(patterns[layer].shape[0]):
            fig.add_trace(go.Heatmap(
                z=np.asarray(patterns[layer][h], dtype=float), x=labels, y=labels, coloraxis="coloraxis",
                hovertemplate=f"layer {layer} head {h}<br>query %{{y}}<br>key %{{x}}<br>weight %{{z:.3f}}<extra></extra>"),
                row=r + 1, col=h + 1)
    # tokens on the outer axes only (the first column's queries, the last row's keys), thinned
    ticks = _thinned(labels, GRID_TICKS)
    fig.update_yaxes(autorange="reversed", showticklabels=False, tickvals=ticks, tickfont=dict(size=8))
    fig.update_xaxes(showticklabels=False, tickvals=ticks, tickfont=dict(size=8), tickangle=-90)
    for r in range(1, len(layers) + 1):
        fig.update_yaxes(showticklabels=True, title=dict(text="query", font=dict(size=9)), row=r, col=1)
    for h in range(1, heads + 1):
        fig.update_xaxes(showticklabels=True, title=dict(text="key", font=dict(size=9)), row=len(layers), col=h)
    fig.update_layout(coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, colorbar=dict(thickness=10)))
    paper_style(fig, height=240 * len(layers) + 70, title=title)
    return fig.update_layout(margin=dict(t=48 if title else 28, l=64, b=70))  # room for titles and tokens


def length_curve(curves: pd.DataFrame, train_length: int | None = None, title: str | None = None,
                 x: str = "length", x_title: str = "test length") -> go.Figure:
    """Exact match vs test length (or another column `x`). `curves` has columns label, length (or `x`),
    value (several seeds per label give a median line with a min-max band)."""
    fig = go.Figure()
    for i, (label, rows) in enumerate(curves.groupby("label", sort=False)):
        for trace in median_band(rows, i, str(label), x):
            fig.add_trace(trace)
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title="exact match (%)", range=[-3, 103])
    return mark_train_length(paper_style(fig, height=320, title=title), train_length)


def median_band(rows: pd.DataFrame, index: int, label: str, x: str = "length") -> list[go.Scatter]:
    """One label's exact match (`value`, 0..1) against `x`: the median over seeds as a line, with the
    seeds' min-max band behind it when there is more than one seed."""
    stats = rows.groupby(x)["value"].agg(["median", "min", "max", "count"]).reset_index()
    traces = []
    if (stats["count"] > 1).any():
        traces.append(seed_band(stats[x], stats["min"] * 100, stats["max"] * 100, index, label))
    traces.append(go.Scatter(x=stats[x], y=stats["median"] * 100, mode="lines+markers", name=label,
                             line=dict(color=color(index), dash=dash(index)), legendgroup=label,
                             hovertemplate=f"{x} %{{x}}<br>exact match %{{y:.1f}}%<extra>{label}</extra>"))
    return traces


def mark_train_length(fig: go.Figure, train_length: int | None) -> go.Figure:
    """A dashed line at the longest length seen in training, named above the plot."""
    return mark_x(fig, train_length or None, "longest trained")


def mark_x(fig: go.Figure, x: float | None, text: str) -> go.Figure:
    """A dashed line at x, named above the plot (inside it, the name sat on the curves, which often run
    along the axis's top or bottom). Call after paper_style, which sets the margins, and after the x
    axis's type is set."""
    if x is not None:
        fig.add_vline(x=x, line=dict(dash="dash", color="grey", width=1.5), opacity=1)  # explicit: the template zeroes shape lines
        # an annotation on a log axis is placed by the log10 of its value (a shape by the value itself)
        fig.add_annotation(x=np.log10(x) if fig.layout.xaxis.type == "log" else x, xref="x", y=1, yref="paper",
                           yanchor="bottom", showarrow=False, text=text, font=dict(size=9, color="grey"))
        fig.update_layout(margin=dict(t=max(fig.layout.margin.t or 0, 24)))
    return fig


def offset_curves(curves: dict[int, dict[int | str, float]], default_offset: int | None = None,
                  title: str | None = None) -> go.Figure:
    """Exact match against the first id of coupled position ids, one line per test length, with the
    evaluation's default start marked. `curves` is analysis.evaluate_offsets's {length: {offset: rate}}."""
    frame = pd.DataFrame([{"label": f"length {length}", "offset": offset, "value": value}
                          for length, curve in curves.items() for offset, value in curve.items()
                          if not isinstance(offset, str)])
    fig = length_curve(frame, title=title, x="offset", x_title="first coupled position id (offset)")
    for i, (length, curve) in enumerate(curves.items()):  # random starts have no place on the axis: a level
        if RANDOM_START in curve:
            fig.add_hline(y=curve[RANDOM_START] * 100, line=dict(color=color(i), dash="dot", width=1),
                          annotation_text=f"length {length}, random starts", annotation_font=dict(size=9),
                          annotation_position="bottom right" if i % 2 else "top right")  # near levels stay apart
    return mark_x(fig, default_offset, "evaluation default")


def temperature_curves(curves: dict[int, dict[str, dict]], train_length: int | None = None,
                       title: str | None = None) -> go.Figure:
    """Exact match against test length, one line per temperature reading (a fixed factor, or the factors
    chosen at each length), with the longest trained length marked. `curves` is
    analysis.evaluate_temperatures's {length: {reading: {"exact_match", "factor"}}}."""
    frame = pd.DataFrame([{"label": reading, "length": length, "value": numbers["exact_match"]}
                          for length, row in curves.items() for reading, numbers in row.items()])
    fig = length_curve(frame, title=title)
    fig.update_xaxes(type="log", tickvals=sorted(curves), title="test length (log scale)")
    return mark_train_length(fig, train_length)  # after the axis turns log: the mark is placed by its type


def entropy_by_length(rows: list[dict] | pd.DataFrame, probe: str = "entropy", train_length: int | None = None,
                      title: str | None = None) -> go.Figure:
    """Mean attention entropy against test length, one line per layer (the layer mean over heads), with
    the longest trained length marked when given. `rows` are workbench.probes.entropy_vs_length's tidy rows."""
    frame = pd.DataFrame(rows)
    frame = frame[(frame.probe == probe) & (frame["head"] == -1)].sort_values("length")
    fig = go.Figure()
    for i, (layer, layer_rows) in enumerate(frame.groupby("layer")):
        fig.add_trace(go.Scatter(x=layer_rows.length, y=layer_rows.value, mode="lines+markers", name=f"layer {layer}",
                                 line=dict(color=color(i)),
                                 hovertemplate="length %{x}<br>%{y:.3f}<extra>layer " + str(layer) + "</extra>"))
    fig.update_xaxes(title="test length (log scale)", type="log", tickvals=sorted(frame.length.unique()),
                     tickformat="~g")
    fig.update_yaxes(title="attention entropy (nats)" if probe == "entropy" else "normalized attention entropy")
    return mark_train_length(paper_style(fig, height=320, title=title), train_length)


FLAT_SHARE = 0.05  # a share that moves less than this is drawn on the whole 0-1 axis


def share_axis(fig: go.Figure, values) -> go.Figure:
    """A y axis for a share (0 to 1). Where the values barely move (a lone point, a flat line), plotly
    centres its range on them, e.g. -1 to 1 around a single 0; the whole 0-1 range reads right.
    Where they move, plotly's own zoom shows how."""
    values = pd.Series(values, dtype=float).dropna()
    if len(values) and values.max() - values.min() < FLAT_SHARE:
        fig.update_yaxes(range=[-0.03, 1.03])
    return fig


def metric_over_steps(frame: pd.DataFrame, y_title: str, title: str | None = None, log_y: bool = False,
                      markers: dict[str, int] | None = None) -> go.Figure:
    """Lines of value vs step, one per `series` (column), e.g. one per layer/head or per run.

    `markers` maps a label (e.g. 'diverged', 'collapse') to a step marked with a vertical line."""
    fig = go.Figure()
    for i, (series, rows) in enumerate(frame.groupby("series", sort=False)):
        rows = rows.sort_values("step")
        mode = "lines+markers" if len(rows) <= SHORT_SERIES else "lines"  # a lone point needs a marker
        fig.add_trace(go.Scatter(x=rows.step, y=rows.value, mode=mode, name=str(series), line=dict(color=color(i)),
                                 marker=dict(size=4),
                                 hovertemplate="step %{x}<br>%{y:.4g}<extra>" + str(series) + "</extra>"))
    for label, step in (markers or {}).items():
        fig.add_vline(x=step, line=dict(dash="dot", color="#D55E00", width=1.5), opacity=1, annotation_text=label,
                      annotation_font_size=9)
    steps = frame.step.unique()
    # one step (a single evaluation) would get fractional ticks around it: label just that step
    fig.update_xaxes(title="step", tickvals=list(steps) if len(steps) == 1 else None)
    # A log axis only pays over a factor of 10 or more; over a narrower range (one evaluation point, a
    # loss that has settled) plotly crowds it with minor tick labels.
    if log_y and decades(frame.value) >= 1:
        fig.update_yaxes(title=f"{y_title} (log scale)", **log_axis(frame.value))
    else:
        fig.update_yaxes(title=y_title, type="linear")
    return paper_style(fig, height=320, title=title)


def neuron_activity_curves(curves: dict[int, dict[int, np.ndarray]], title: str | None = None) -> go.Figure:
    """Each MLP neuron's firing share (the share of tokens on which it is nonzero), most active first:
    curves[layer][step] is one sorted array. One panel per layer, one line per step, light to dark as
    training goes on. The x axis is the rank as a share of the layer's width, so MLPs of different
    widths compare, and the area under a line is then the layer's nonzero fraction."""
    layers = sorted(curves)
    steps = sorted({step for by_step in curves.values() for step in by_step})
    shades = sample_colorscale(SEQUENTIAL, [0.85 * (1 - i / max(1, len(steps) - 1)) for i in range(len(steps))])
    fig = make_subplots(rows=1, cols=len(layers), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[f"layer {layer}" for layer in layers])
    for col, layer in enumerate(layers, start=1):
        for shade, step in zip(shades, steps):
            if step not in curves[layer]:
                continue
            shares = np.asarray(curves[layer][step], dtype=float)
            rank = (np.arange(len(shares)) + 0.5) / len(shares)
            fig.add_trace(go.Scatter(
                x=rank, y=shares, mode="lines", name=f"step {step}", legendgroup=str(step), showlegend=col == 1,
                line=dict(color=shade, width=1.5),
                hovertemplate=f"layer {layer}, step {step}<br>neuron rank %{{x:.2f}}<br>fires on %{{y:.1%}} of tokens"
                              "<extra></extra>"), row=1, col=col)
    fig.update_annotations(font_size=11)  # the panel titles, at the size of the axis titles
    fig.update_xaxes(title="neuron rank (share of width)", range=[0, 1])
    fig.update_yaxes(range=[-0.02, 1.02])
    fig.update_yaxes(title="share of tokens it fires on", row=1, col=1)
    paper_style(fig, height=320, title=title)
    return fig.update_layout(margin=dict(t=48 if title else 28))  # room for the panel titles
