"""Length-generalization figures that pair what a model attends to with what it gets right."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import SEQUENTIAL, color, paper_style, seed_band

LABELS = {"nope": "NoPE", "nope-scaled": "NoPE + log-length scaling", "nope-ssmax": "NoPE + Scalable-Softmax",
          "rope": "RoPE", "rope-scaled": "RoPE + log-length scaling", "rope-ssmax": "RoPE + Scalable-Softmax",
          # temperatures chosen after training (attention-temperature)
          "nope-uniform": "NoPE, uniform factor", "nope-head": "NoPE, head factors", "nope-aligned": "NoPE, aligned",
          "t5_bias": "T5 bias", "t5_bias-uniform": "T5 bias, uniform factor", "t5_bias-aligned": "T5 bias, aligned",
          "t5_bias-maxprob": "T5 bias, aligned by largest weight"}


def flattening_curves(table: pd.DataFrame, train_length: int, title: str | None = None,
                      by: str | None = None) -> go.Figure:
    """Left: the last layer's attention entropy at the answer against test length; right: exact match.
    One line per model (median over seeds, min-max band), log-scaled length, the training length dashed;
    with `by` (a column, e.g. pos), a row of the two panels per value, so fewer lines share a panel.

    table: columns model, seed, filler, answer_entropy, exact_match (and `by`)."""
    groups = list(table.groupby(by, sort=False)) if by else [(None, table)]
    titles = ["attention entropy at the answer (last layer)", "passkey exact match"]
    fig = make_subplots(rows=len(groups), cols=2, horizontal_spacing=0.14, vertical_spacing=0.16,
                        subplot_titles=[f"{LABELS.get(group, group)}: {text}" if by else text
                                        for group, _ in groups for text in titles])
    lengths = sorted(table.filler.unique())
    # a colour per model; with rows, per method (the name after the encoding: "t5_bias-aligned" is
    # "aligned"), so one reading has one colour in every row
    hue = (lambda name: name.split("-", 1)[1] if "-" in name else "") if by else (lambda name: name)
    palette = list(dict.fromkeys(hue(name) for name in table.model))
    for row, (_, part) in enumerate(groups, start=1):
        for name, rows in part.groupby("model", sort=False):
            i = palette.index(hue(name))
            for col, (value, scale) in enumerate((("answer_entropy", 1), ("exact_match", 100)), start=1):
                stats = rows.groupby("filler")[value].agg(["median", "min", "max", "count"]).reset_index()
                if (stats["count"] > 1).any():
                    fig.add_trace(seed_band(stats.filler, stats["min"] * scale, stats["max"] * scale, i, name),
                                  row=row, col=col)
                fig.add_trace(go.Scatter(x=stats.filler, y=stats["median"] * scale, mode="lines+markers",
                                         name=LABELS.get(name, name), legendgroup=name, showlegend=col == 1,
                                         line=dict(color=color(i), dash="dot" if "-" not in name else "solid")),
                              row=row, col=col)
        for col in (1, 2):
            fig.update_xaxes(title_text="filler tokens (log scale)", type="log", tickvals=lengths, row=row, col=col)
            fig.add_vline(x=train_length, line=dict(dash="dash", color="grey", width=1.5), opacity=1, row=row,
                          col=col)
        fig.update_yaxes(title_text="entropy (nats)", rangemode="tozero", row=row, col=1)
        fig.update_yaxes(title_text="exact match (%)", range=[-3, 103], row=row, col=2)
    fig.update_annotations(font_size=10)
    return paper_style(fig, width="double", height=320 * len(groups), title=title)


def every_seed_curves(table: pd.DataFrame, train_length: int | None = None, title: str | None = None) -> go.Figure:
    """Exact match against test length with one thin line per seed (no band: the spread between seeds
    is the point), a colour per label and its median dashed.

    table: columns label, seed, length, value (0..1)."""
    from .builders import mark_train_length

    fig = go.Figure()
    for i, (label, rows) in enumerate(table.groupby("label", sort=False)):
        for j, (seed, curve) in enumerate(rows.groupby("seed", sort=True)):
            curve = curve.sort_values("length")
            fig.add_trace(go.Scatter(x=curve.length, y=curve.value * 100, mode="lines+markers", name=str(label),
                                     line=dict(color=color(i), width=1), marker=dict(size=4), opacity=0.75,
                                     legendgroup=str(label), showlegend=j == 0,
                                     hovertemplate=f"seed {seed}<br>length %{{x}}<br>%{{y:.1f}}%<extra>{label}</extra>"))
        median = rows.groupby("length")["value"].median().reset_index()
        fig.add_trace(go.Scatter(x=median.length, y=median.value * 100, mode="lines", showlegend=False,
                                 line=dict(color=color(i), width=2.5, dash="dash"), legendgroup=str(label),
                                 hovertemplate="median %{y:.1f}%<extra>" + str(label) + "</extra>"))
    fig.update_xaxes(title="test length")
    fig.update_yaxes(title="exact match (%)", range=[-3, 103])
    return mark_train_length(paper_style(fig, height=340, title=title), train_length)


def encoding_zoo(table: pd.DataFrame, train_length: int, title: str | None = None) -> go.Figure:
    """Which encoding generalizes here. Left: exact match against test length, one line per encoding
    (median over seeds, min-max band). Right: the same medians as a grid, the encodings ordered by their
    mean beyond the training length (best on top), each cell's seeds in its hover.

    table: columns label, seed, length, value (0..1)."""
    from .builders import median_band

    fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.2,  # room for the names
                        subplot_titles=["exact match (median, seeds' range)", "median exact match (%)"])
    for i, (label, rows) in enumerate(table.groupby("label", sort=False)):
        for trace in median_band(rows, i, str(label)):
            fig.add_trace(trace, row=1, col=1)
    lengths = sorted(table.length.unique())
    medians = table.pivot_table(index="label", columns="length", values="value", aggfunc="median")
    beyond = [n for n in lengths if n > train_length] or lengths
    order = medians[beyond].mean(axis=1).sort_values(kind="stable").index.tolist()  # bottom to top
    seeds = table.groupby(["label", "length"])["value"].apply(lambda v: " / ".join(f"{x:.0%}" for x in v))
    hover = [[f"seeds {seeds[(label, n)]}" for n in lengths] for label in order]
    grid = medians.loc[order, lengths].to_numpy() * 100
    fig.add_trace(go.Heatmap(z=grid, x=list(range(len(lengths))), y=order, zmin=0, zmax=100, colorscale=SEQUENTIAL,
                             showscale=False, text=grid.round().astype(int), texttemplate="%{text}",
                             textfont=dict(size=9), customdata=hover,
                             hovertemplate="%{y} at length %{x}: %{z:.0f}%<br>%{customdata}<extra></extra>"),
                  row=1, col=2)
    fig.update_xaxes(tickvals=list(range(len(lengths))), ticktext=[str(n) for n in lengths], row=1, col=2)
    if train_length in lengths:  # between the longest trained column and the next
        fig.add_vline(x=lengths.index(train_length) + 0.5, line=dict(dash="dash", color="white", width=2), opacity=1,
                      row=1, col=2)
    fig.add_vline(x=train_length, line=dict(dash="dash", color="grey", width=1.5), opacity=1, row=1, col=1)
    fig.update_xaxes(title_text="test length (dashed: longest trained)", row=1, col=1)
    fig.update_xaxes(title_text="test length", row=1, col=2)  # one long title would run into the other
    fig.update_yaxes(title_text="exact match (%)", range=[-3, 103], row=1, col=1)
    fig.update_annotations(font_size=10)
    paper_style(fig, width="double", height=max(340, 120 + 24 * len(order)), title=title)
    return fig.update_layout(margin=dict(t=max(fig.layout.margin.t, 36)),  # room for the panels' titles
                             legend=dict(tracegroupgap=0))  # each encoding is its own group: no gaps, every name shows
