"""memorization-capacity (seeds 004 #147, #48): the largest random table a 1-layer Transformer recalls
perfectly, against its parameters and heads.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ...figures.style import color, paper_style
from ...probes.memorization import memorization_capacity, table_bits, table_exact_match
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from . import common


CAPACITY_SHAPES = [(32, 1), (32, 4), (64, 4)]  # (d_model, heads)
CAPACITY_TABLES = [64, 256, 1024]


def capacity_variants(fast: bool) -> list[Variant]:
    shapes, tables, steps = (CAPACITY_SHAPES[:1], [16, 64], 30) if fast else (CAPACITY_SHAPES, CAPACITY_TABLES, 1500)
    out = []
    for d_model, heads in shapes:
        for size in tables:
            config = common.config(["task.name=memorize", f"task.table_size={size}", "task.key_length=3", "task.n_keys=16",
                              "model.n_layers=1", f"model.d_model={d_model}", f"model.n_heads={heads}",
                              "train.lr=3e-3", "train.warmup=50", "train.batch_size=128", "train.threads=1",
                              "train.weight_decay=0", f"train.steps={steps}", "probes.every=0"])
            out.append(Variant(config, {"d_model": d_model, "heads": heads, "table_size": size}))
    return out


def capacity_analyze(finished, fast):
    rows = []
    for variant, run in finished:
        model, task = run.load_model()
        rows.append({**variant.labels, "accuracy": table_exact_match(model, task), "bits": table_bits(task.params),
                     "n_parameters": sum(p.numel() for p in model.parameters())})
    table = pd.DataFrame(rows)
    shapes = []
    for (d_model, heads), part in table.groupby(["d_model", "heads"]):
        capacity = memorization_capacity(part.to_dict("records"))
        shapes.append({"d_model": int(d_model), "heads": int(heads), "n_parameters": int(part.n_parameters.iloc[0]),
                       **capacity})
    shapes.sort(key=lambda s: s["n_parameters"])
    sizes = [s["largest_perfect_table"] for s in shapes]
    # "Grows" needs a real increase somewhere; equal capacities (e.g. all at the largest table
    # tried) say nothing about growth.
    grows = all(a <= b for a, b in zip(sizes, sizes[1:])) and sizes[-1] > sizes[0]
    ceiling = max(table.table_size)
    verdict = ("capacity grows with parameters" if grows else
               f"not shown: every shape memorized the largest table tried ({ceiling} rows); the grid needs larger tables"
               if all(size == ceiling for size in sizes) else "capacity does not grow with parameters here")
    headline = "; ".join(f"d={s['d_model']} h={s['heads']} ({s['n_parameters']} params): largest perfect table "
                         f"{s['largest_perfect_table']}, {s['bits_per_parameter']:.3f} bits/param" for s in shapes)
    summary = {"shapes": shapes, "capacity_grows_with_parameters": grows, "headline": headline,
               "verdict": verdict}
    return table, summary


def capacity_figure(result: ExperimentResult):
    fig = go.Figure()
    for i, ((d_model, heads), part) in enumerate(result.table.groupby(["d_model", "heads"])):
        part = part.sort_values("table_size")
        fig.add_trace(go.Scatter(x=part.table_size, y=part.accuracy, mode="lines+markers", line=dict(color=color(i)),
                                 name=f"d={d_model}, heads={heads} ({int(part.n_parameters.iloc[0])} params)"))
    fig.update_xaxes(title="table size (rows)", type="log", tickvals=sorted(result.table.table_size.unique()),
                     tickformat="~g")  # the sizes tried, not plotly's bare minor digits
    fig.update_yaxes(title="share of the table recalled exactly", range=[0, 1.05])
    return paper_style(fig, width="single", height=300)


register_experiment(Experiment(
    name="memorization-capacity",
    description="1-layer Transformers memorizing random key->value tables of growing size, for 3 shapes.",
    claim="H heads with Theta(H d^2) parameters memorize Omega(H n) examples",
    source="seeds 004 #147, #48", paper_number="Omega(H n) examples",
    target="largest perfectly memorized table vs parameters and heads; bits per parameter",
    variants=capacity_variants, analyze=capacity_analyze, figure=capacity_figure))
