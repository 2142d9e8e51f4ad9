"""Figures of in-context learning of function classes: error against the number of in-context
examples, trained models beside the closed-form algorithms. Pure functions from tidy tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import color, log_axis, paper_style, seed_band

BASELINE_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot", "solid")


def error_vs_examples(table: pd.DataFrame, y_title: str = "squared error / d", log_y: bool = True,
                      mark: int | None = None, title: str | None = None) -> go.Figure:
    """One solid line per trained model (median over seeds, min-max band where there are several)
    and one grey dashed line per closed-form baseline, against the number of in-context examples.

    table: columns model, kind ("model" or "baseline"), seed (models), examples, error.
    mark: an x to draw a vertical rule at (e.g. 2d, where a claim is judged)."""
    fig = go.Figure()
    models = table[table.kind == "model"]
    for i, (name, rows) in enumerate(models.groupby("model", sort=False)):
        stats = rows.groupby("examples")["error"].agg(["median", "min", "max", "count"]).reset_index()
        if (stats["count"] > 1).any():
            fig.add_trace(seed_band(stats.examples, stats["min"], stats["max"], i, str(name)))
        fig.add_trace(go.Scatter(x=stats.examples, y=stats["median"], mode="lines+markers", name=str(name),
                                 line=dict(color=color(i)), marker=dict(size=4), legendgroup=str(name),
                                 hovertemplate="%{x} examples<br>error %{y:.4f}<extra>" + str(name) + "</extra>"))
    baselines = table[table.kind == "baseline"]
    for j, (name, rows) in enumerate(baselines.groupby("model", sort=False)):
        rows = rows.sort_values("examples")
        fig.add_trace(go.Scatter(x=rows.examples, y=rows.error, mode="lines", name=str(name),
                                 line=dict(color="grey", dash=BASELINE_DASHES[j % len(BASELINE_DASHES)], width=1.5),
                                 hovertemplate="%{x} examples<br>error %{y:.4f}<extra>" + str(name) + "</extra>"))
    if mark is not None:
        fig.add_vline(x=mark, line=dict(color="grey", width=1, dash="dot"), opacity=1)
    fig.update_xaxes(title="in-context examples")
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear")
    if log_y and len(models):
        # least squares spikes where the examples just determine w (d of them, with noise): keep the
        # axis on the trained models' range so the spike does not flatten every other curve
        # and at most two decades below the best model: noiseless least squares is exact (1e-14) from d
        # examples on, and an axis down there would squash every model into a line at the top
        low, high = table.error[table.error > 0].min(), models.error.max()
        best = models.error[models.error > 0].min() if (models.error > 0).any() else low
        low = max(low, best / 100)
        bottom, top = 10 ** (np.log10(low) - 0.1), high * 3
        fig.update_yaxes(range=[np.log10(bottom), np.log10(top)], **log_axis([bottom, top]))
        _note_clipped(fig, baselines, bottom)
    return paper_style(fig, height=340, title=title)


def _note_clipped(fig: go.Figure, baselines: pd.DataFrame, floor: float) -> None:
    """Say in the figure which baselines leave the axis at the bottom and from where, so a line that
    drops out of view reads as 'below the axis', not as missing."""
    notes = []
    for name, rows in baselines.groupby("model", sort=False):
        below = rows[rows.error < floor].sort_values("examples")
        if len(below):
            notes.append(f"{name}: below the axis from {int(below.examples.iloc[0])} examples "
                         f"(down to {max(below.error.min(), 0):.0e})")
    if notes:
        fig.add_annotation(text="<br>".join(notes), xref="paper", yref="paper", x=0.02, y=0.02, xanchor="left",
                           yanchor="bottom", showarrow=False, align="left", font=dict(size=10, color="grey"))


def accuracy_panels(table: pd.DataFrame, mark: int | None = None, title: str | None = None) -> go.Figure:
    """One panel per function class: accuracy per query against the number of in-context examples,
    one solid line per trained model (median over seeds, min-max band) and grey dashed lines for the
    learning algorithms; the dotted rule marks where the late queries (the judged ones) begin.

    table: columns function, model, kind, seed (models), examples, accuracy."""
    functions = list(dict.fromkeys(table.function))
    fig = make_subplots(rows=1, cols=len(functions), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=functions)
    models = list(dict.fromkeys(table[table.kind == "model"].model))
    for col, function in enumerate(functions, start=1):
        part = table[table.function == function]
        for i, name in enumerate(models):
            rows = part[part.model == name]
            stats = rows.groupby("examples")["accuracy"].agg(["median", "min", "max", "count"]).reset_index()
            if (stats["count"] > 1).any():
                fig.add_trace(seed_band(stats.examples, stats["min"] * 100, stats["max"] * 100, i, name),
                              row=1, col=col)
            fig.add_trace(go.Scatter(x=stats.examples, y=stats["median"] * 100, mode="lines", name=name,
                                     line=dict(color=color(i)), legendgroup=name, showlegend=col == 1,
                                     hovertemplate="%{x} examples<br>%{y:.1f}%<extra>" + name + "</extra>"),
                          row=1, col=col)
        for j, (name, rows) in enumerate(part[part.kind == "baseline"].groupby("model", sort=False)):
            shown = any(trace.name == name and trace.showlegend is not False for trace in fig.data)
            fig.add_trace(go.Scatter(x=rows.examples, y=rows.accuracy * 100, mode="lines", name=name,
                                     showlegend=not shown, legendgroup=name,
                                     line=dict(color="grey", dash=BASELINE_DASHES[j % len(BASELINE_DASHES)], width=1.5),
                                     hovertemplate="%{x} examples<br>%{y:.1f}%<extra>" + name + "</extra>"),
                          row=1, col=col)
        if mark is not None:
            fig.add_vline(x=mark, line=dict(color="grey", width=1, dash="dot"), opacity=1, row=1, col=col)
        fig.update_xaxes(title="in-context examples", row=1, col=col)
    fig.update_yaxes(title="accuracy (%)", range=[40, 101], row=1, col=1)
    fig = paper_style(fig, height=340, title=title)
    fig.update_layout(margin=dict(t=max(fig.layout.margin.t or 0, 40)))  # room for the panel titles
    return fig


def looped_panels(table: pd.DataFrame, mark: int, trained: int, title: str | None = None) -> go.Figure:
    """Two panels: error against the in-context examples (as error_vs_examples draws it), and the looped
    model's error at `mark` examples against the loops it is read at (median over seeds, min-max band),
    beside the other models' median there as flat lines; the dotted rule marks the loops it trained with.

    table: error_vs_examples' columns, plus rows of kind "loops" with a loops column."""
    curves = error_vs_examples(table[table.kind != "loops"], mark=mark)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, shared_yaxes=True,
                        subplot_titles=["by examples", f"at {mark} examples, by loops"])
    for trace in curves.data:
        fig.add_trace(trace, row=1, col=1)
    fig.add_vline(x=mark, line=dict(color="grey", width=1, dash="dot"), opacity=1, row=1, col=1)
    names = list(dict.fromkeys(table[table.kind == "model"].model))
    sweep = table[table.kind == "loops"]
    for looped, rows in sweep.groupby("model", sort=False):
        stats = rows.groupby("loops")["error"].agg(["median", "min", "max"]).reset_index()
        index = names.index(looped) if looped in names else len(names)
        fig.add_trace(seed_band(stats.loops, stats["min"], stats["max"], index, looped), row=1, col=2)
        fig.add_trace(go.Scatter(x=stats.loops, y=stats["median"], mode="lines+markers", name=looped,
                                 legendgroup=looped, showlegend=False, line=dict(color=color(index)),
                                 marker=dict(size=4),
                                 hovertemplate="%{x} loops<br>error %{y:.4f}<extra>" + looped + "</extra>"),
                      row=1, col=2)
    if len(sweep):
        at = table[(table.kind != "loops") & (table.examples == mark)]
        span = [int(sweep.loops.min()), int(sweep.loops.max())]
        for i, name in enumerate(names + list(dict.fromkeys(at[at.kind == "baseline"].model))):
            if name in set(sweep.model):
                continue
            model = name in names
            line = dict(color=color(i), width=1.5) if model else dict(color="grey", dash="dash", width=1.5)
            level = float(at[at.model == name].error.median())
            fig.add_trace(go.Scatter(x=span, y=[level, level], mode="lines", line=line, name=name, legendgroup=name,
                                     showlegend=False, hovertemplate=f"{name}: %{{y:.4f}}<extra></extra>"),
                          row=1, col=2)
            fig.add_annotation(x=span[1], y=np.log10(level), xref="x2", yref="y2", text=name, showarrow=False,
                               xanchor="right", yanchor="bottom", font=dict(size=10, color=line["color"]))
    fig.add_vline(x=trained, line=dict(color="grey", width=1, dash="dot"), opacity=1, row=1, col=2)
    fig.update_xaxes(title_text="in-context examples", row=1, col=1)
    fig.update_xaxes(title_text="loops read (trained at the dotted line)", row=1, col=2)
    fig.update_yaxes(title_text="squared error / d", type="log", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=2)
    if curves.layout.yaxis.range is not None:
        fig.update_yaxes(range=curves.layout.yaxis.range)
    fig = paper_style(fig, width="double", height=360, title=title)
    fig.update_layout(margin=dict(t=max(fig.layout.margin.t or 0, 40)))
    return fig


PANELS_PER_ROW = 4


def function_class_panels(table: pd.DataFrame, mark: int | dict | None = None, title: str | None = None,
                          by: str = "function", emphasis: tuple[str, ...] = (),
                          y_title: str = "squared error / E[y²]") -> go.Figure:
    """One panel per value of column `by` (a function class, or a prompt shift), each drawn as
    error_vs_examples draws one table: the trained models (median over seeds, min-max band) and grey lines
    for that panel's baselines, each panel on its own log axis (the errors differ in scale); each name in
    the legend once. Baselines named in `emphasis` (the ones a claim is judged against) are drawn solid
    black, so they stand apart from the grey dashes. `mark`: the judged number of examples, one for every
    panel or {panel: examples}."""
    functions = list(dict.fromkeys(table[by]))
    marks = mark if isinstance(mark, dict) else {function: mark for function in functions}
    # more than PANELS_PER_ROW panels wrap onto further rows: seven side by side leave no room for a title
    columns = min(len(functions), PANELS_PER_ROW)
    rows = -(-len(functions) // columns)
    fig = make_subplots(rows=rows, cols=columns, horizontal_spacing=0.08, vertical_spacing=0.3 / rows,
                        subplot_titles=[_two_lines(name) if columns > 2 else name for name in functions])
    shown = set()
    for index, function in enumerate(functions):
        row, col = 1 + index // columns, 1 + index % columns
        judged = marks.get(function)
        panel = error_vs_examples(table[table[by] == function], mark=judged)
        for trace in panel.data:
            if trace.name is not None and trace.showlegend is not False:
                trace.showlegend = trace.name not in shown
                shown.add(trace.name)
            if trace.name in emphasis:
                trace.line = dict(color="black", dash="solid", width=1.5)
            fig.add_trace(trace, row=row, col=col)
        if judged is not None:
            fig.add_vline(x=judged, line=dict(color="grey", width=1, dash="dot"), opacity=1, row=row, col=col)
        if index + columns >= len(functions):  # the lowest panel of its column names the axis
            fig.update_xaxes(title_text="in-context examples", row=row, col=col)
        axis = panel.layout.yaxis
        fig.update_yaxes(type="log", range=axis.range, tickvals=axis.tickvals, tickformat=axis.tickformat,
                         row=row, col=col)
    for row in range(1, rows + 1):
        fig.update_yaxes(title_text=y_title, row=row, col=1)
    fig = paper_style(fig, width="double", height=360 + 300 * (rows - 1), title=title)
    room = 70 if columns > 2 else 40  # the panel titles, on two lines where the panels are narrow
    fig.update_layout(margin=dict(t=max(fig.layout.margin.t or 0, room)))
    return fig


def _two_lines(title: str) -> str:
    """A panel title broken at the space nearest its middle, so narrow panels' titles do not overlap."""
    spaces = [i for i, ch in enumerate(title) if ch == " "]
    if len(title) <= 14 or not spaces:
        return title
    cut = min(spaces, key=lambda i: abs(i - len(title) / 2))
    return title[:cut] + "<br>" + title[cut + 1:]
