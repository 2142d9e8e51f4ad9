"""Figures that compare sequence mixers: learning curves beside implicit attention maps, and
accuracy against model width in the Zoology manner. Pure functions from tidy tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .builders import median_band
from .style import SEQUENTIAL, color, paper_style, seed_band


def curves_with_maps(curves: pd.DataFrame, maps: dict[str, np.ndarray], y_title: str = "exact match (%)",
                     title: str | None = None) -> go.Figure:
    """Left: value vs step, one line per `label` (median over seeds, min-max band where there are
    several). Right: one small heatmap per entry of `maps` ({"title": (T, T) array}), each scaled
    to its own maximum, so the shape of a map shows whatever its size.

    curves: columns label, seed, step, value (value in 0..1)."""
    names = list(maps)
    columns = max(1, (len(names) + 1) // 2)
    specs = [[{"rowspan": 2}] + [{}] * columns, [None] + [{}] * columns]
    fig = make_subplots(rows=2, cols=1 + columns, specs=specs, column_widths=[0.45] + [0.55 / columns] * columns,
                        subplot_titles=[""] + names[:columns] + names[columns:], horizontal_spacing=0.05,
                        vertical_spacing=0.12)
    for i, (label, rows) in enumerate(curves.groupby("label", sort=False)):
        stats = rows.groupby("step")["value"].agg(["median", "min", "max", "count"]).reset_index()
        if (stats["count"] > 1).any():
            fig.add_trace(seed_band(stats.step, stats["min"] * 100, stats["max"] * 100, i, str(label)), row=1, col=1)
        fig.add_trace(go.Scatter(x=stats.step, y=stats["median"] * 100, mode="lines+markers", name=str(label),
                                 line=dict(color=color(i)), legendgroup=str(label), marker=dict(size=4),
                                 hovertemplate="step %{x}<br>%{y:.1f}%<extra>" + str(label) + "</extra>"),
                      row=1, col=1)
    fig.update_xaxes(title_text="step", row=1, col=1)
    fig.update_yaxes(title_text=y_title, range=[-3, 103], row=1, col=1)
    for k, name in enumerate(names):
        row, col = 1 + k // columns, 2 + k % columns
        pattern = np.asarray(maps[name], dtype=float)
        scale = pattern.max() if pattern.size and pattern.max() > 0 else 1.0
        fig.add_trace(go.Heatmap(z=pattern / scale, coloraxis="coloraxis",
                                 hovertemplate=f"{name}<br>query %{{y}}<br>key %{{x}}<br>weight / max %{{z:.3f}}"
                                               "<extra></extra>"), row=row, col=col)
        fig.update_yaxes(autorange="reversed", showticklabels=False, row=row, col=col)
        fig.update_xaxes(showticklabels=False, row=row, col=col)
    fig.update_layout(coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=1,
                                     colorbar=dict(thickness=8, title=dict(text="/ max", side="right"))),
                      legend=dict(orientation="h", y=-0.18))
    fig.update_annotations(font_size=9)
    return paper_style(fig, width="double", height=380, title=title)


def accuracy_vs_width(table: pd.DataFrame, facet: str = "pairs", value: str = "query_accuracy",
                      y_title: str = "accuracy per query (%)", title: str | None = None) -> go.Figure:
    """One panel per value of `facet` (e.g. key-value pairs): value vs model width, one line per
    mixer (the median over seeds, their min-max band behind it); hover shows the recurrent state size.
    table: columns mixer, width, state_size, facet, value, and seed where there are several."""
    facets = sorted(table[facet].unique())
    fig = make_subplots(rows=1, cols=len(facets), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[f"{v} {facet}" for v in facets])
    for col, level in enumerate(facets, start=1):
        part = table[table[facet] == level]
        for i, (mixer, rows) in enumerate(part.groupby("mixer", sort=False)):
            # the line's hover is replaced below: it names the state size, not the measure
            *band, line = median_band(rows.rename(columns={value: "value"}), i, str(mixer), x="width")
            state = rows.groupby("width").state_size.first()
            line.update(customdata=state.loc[line.x].to_numpy(), showlegend=col == 1,
                        hovertemplate="width %{x}<br>%{y:.1f}%<br>state %{customdata:,}<extra>" + str(mixer) + "</extra>")
            for trace in (*band, line):
                fig.add_trace(trace, row=1, col=col)
        fig.update_xaxes(title_text="width (log scale)", type="log", tickvals=sorted(table.width.unique()), row=1, col=col)
    fig.update_yaxes(title_text=y_title, range=[-3, 103], row=1, col=1)
    fig.update_annotations(font_size=9)
    return paper_style(fig, width="double", height=300, title=title)


def excess_loss_curves(table: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Excess loss over the Bayes-optimal predictor (nats) against context position, one line per
    mixer (median over seeds, min-max band where there are several); the dashed zero line is the
    Bayes predictor itself, which no model can beat on average. Rows whose mixer ends with
    "(reference)" are estimators drawn dotted beside the models.

    table: columns mixer, seed, position, excess_loss."""
    fig = go.Figure()
    for i, (mixer, rows) in enumerate(table.groupby("mixer", sort=False)):
        stats = rows.groupby("position")["excess_loss"].agg(["median", "min", "max", "count"]).reset_index()
        if (stats["count"] > 1).any():
            fig.add_trace(seed_band(stats.position, stats["min"], stats["max"], i, str(mixer)))
        reference = str(mixer).endswith("(reference)")  # an estimator drawn for comparison, not a model
        fig.add_trace(go.Scatter(x=stats.position, y=stats["median"], mode="lines", name=str(mixer),
                                 line=dict(color=color(i), dash="dot" if reference else None), legendgroup=str(mixer),
                                 hovertemplate="position %{x}<br>excess %{y:.4f} nats<extra>" + str(mixer)
                                               + "</extra>"))
    fig.add_hline(y=0, line=dict(dash="dash", color="grey", width=1.5), opacity=1)  # the template zeroes shape lines
    fig.add_annotation(x=1, xref="paper", xanchor="right", y=0, yanchor="bottom", showarrow=False,
                       text="Bayes (Laplace)", font=dict(size=9, color="grey"))
    fig.update_xaxes(title="context position (symbols seen + 1)")
    fig.update_yaxes(title="excess loss over Bayes (nats)")
    return paper_style(fig, height=320, title=title)


def hybrid_bars(table: pd.DataFrame, hardest: dict[str, int], title: str | None = None) -> go.Figure:
    """One panel per task: each model's score at the task's hardest length (MQAR: accuracy per query;
    copying: exact match), a bar at the median over seeds and a dot per seed.

    table: columns task, model, seed, length, exact_match, query_accuracy."""
    tasks = list(dict.fromkeys(table.task))
    fig = make_subplots(rows=1, cols=len(tasks), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[f"{task}: {'accuracy per query' if task == 'mqar' else 'exact match'} at "
                                        f"{hardest[task]}" for task in tasks])
    for col, task in enumerate(tasks, start=1):
        value = "query_accuracy" if task == "mqar" else "exact_match"
        part = table[(table.task == task) & (table.length == hardest[task])]
        models = list(dict.fromkeys(part.model))
        medians = part.groupby("model", sort=False)[value].median()
        fig.add_trace(go.Bar(x=models, y=[medians[m] * 100 for m in models], showlegend=False,
                             marker_color=[color(i) for i in range(len(models))], opacity=0.55,
                             hovertemplate="%{x}<br>median %{y:.1f}%<extra></extra>"), row=1, col=col)
        fig.add_trace(go.Scatter(x=part.model, y=part[value] * 100, mode="markers", showlegend=False,
                                 marker=dict(color="black", size=6), customdata=part.seed,
                                 hovertemplate="%{x}, seed %{customdata}<br>%{y:.1f}%<extra></extra>"), row=1, col=col)
    fig.update_yaxes(title_text="%", range=[0, 103], row=1, col=1)
    fig.update_annotations(font_size=10)
    return paper_style(fig, width="double", height=300, title=title)
