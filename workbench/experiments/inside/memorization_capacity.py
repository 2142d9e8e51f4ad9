"""memorization-capacity: the largest random table a 1-layer Transformer recalls perfectly, against its
parameters and heads (Mahdavi et al. 2024, arXiv 2306.02010).
"""
from __future__ import annotations

import itertools

import pandas as pd
import plotly.graph_objects as go

from ...analysis import load_model
from ...figures.style import color, paper_style
from ...probes.memorization import memorization_capacity, table_bits, table_exact_match
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from ..verdicts import Claim, Outcome, UntestedClaim, by_seeds
from . import common


CAPACITY_SHAPES = [(32, 1), (32, 4), (64, 4)]  # (d_model, heads)
CAPACITY_TABLES = [64, 256, 1024]
CAPACITY_SEEDS = [0, 1, 2]


def capacity_variants(fast: bool) -> list[Variant]:
    shapes, tables, steps, seeds = ((CAPACITY_SHAPES[:1], [16, 64], 30, [0]) if fast else
                                    (CAPACITY_SHAPES, CAPACITY_TABLES, 1500, CAPACITY_SEEDS))
    out = []
    for (d_model, heads), size, seed in itertools.product(shapes, tables, seeds):
        config = common.config(["task.name=memorize", f"task.table_size={size}", "task.key_length=3", "task.n_keys=16",
                                "model.n_layers=1", f"model.d_model={d_model}", f"model.n_heads={heads}",
                                "train.lr=3e-3", "train.warmup=50", "train.batch_size=128", "train.threads=1",
                                "train.weight_decay=0", f"train.steps={steps}", "probes.every=0", f"train.seed={seed}"])
        out.append(Variant(config, {"d_model": d_model, "heads": heads, "table_size": size, "seed": seed}))
    return out


def capacity_analyze(finished, fast):
    rows = []
    for variant, run in finished:
        model, task = load_model(run)
        rows.append({**variant.labels, "accuracy": table_exact_match(model, task), "bits": table_bits(task.params),
                     "n_parameters": sum(p.numel() for p in model.parameters())})
    table = pd.DataFrame(rows)
    shapes = []  # one per (seed, shape)
    for (seed, d_model, heads), part in table.groupby(["seed", "d_model", "heads"]):
        capacity = memorization_capacity(part.to_dict("records"))
        largest = part.sort_values("table_size").iloc[-1]
        shapes.append({"seed": int(seed), "d_model": int(d_model), "heads": int(heads),
                       "n_parameters": int(part.n_parameters.iloc[0]), **capacity,
                       "largest_table": int(largest.table_size), "accuracy_on_largest": float(largest.accuracy)})
    shapes.sort(key=lambda s: (s["seed"], s["n_parameters"], s["heads"]))
    seeds = sorted({s["seed"] for s in shapes})
    headline = "; ".join(f"d={s['d_model']} h={s['heads']} ({s['n_parameters']} params): largest perfect table "
                         f"{s['largest_perfect_table']}, {s['accuracy_on_largest']:.0%} of {s['largest_table']} rows"
                         for s in shapes if s["seed"] == seeds[0]) + f" (seed {seeds[0]}; every seed per claim)"
    return table, {"shapes": shapes, "tables": sorted(int(t) for t in table.table_size.unique()), "headline": headline}


def _pair(summary: dict, small: tuple[int, int], large: tuple[int, int]) -> tuple[dict, dict]:
    """seed -> True / False / None (grid cannot tell) for `large` memorizing a larger table than `small`."""
    passed, numbers = {}, {}
    for seed in sorted({s["seed"] for s in summary.get("shapes", [])}):
        found = {(s["d_model"], s["heads"]): s for s in summary["shapes"] if s["seed"] == seed}
        if small not in found or large not in found:
            continue
        a, b = found[small], found[large]
        if a["n_parameters"] == b["n_parameters"]:
            passed[seed] = None  # the design gives both the same parameters: it cannot test growth with them
        else:
            passed[seed] = (None if a["largest_perfect_table"] == b["largest_perfect_table"] else
                            b["largest_perfect_table"] > a["largest_perfect_table"])
        numbers[seed] = (f"{_shape_text(a)} vs {_shape_text(b)}")
    return passed, numbers


def _shape_text(shape: dict) -> str:
    return (f"h={shape['heads']} d={shape['d_model']} ({shape['n_parameters']} params): "
            f"{shape['largest_perfect_table']} perfect, {shape['accuracy_on_largest']:.0%} of {shape['largest_table']}")


def decide_heads(summary: dict) -> Outcome:
    passed, numbers = _pair(summary, (32, 1), (32, 4))
    return by_seeds(passed, numbers, undecided="heads split d_model here, so 1 and 4 heads have the same "
                                                "parameters; the paper's heads each add Theta(d^2)")


def decide_parameters(summary: dict) -> Outcome:
    passed, numbers = _pair(summary, (32, 4), (64, 4))
    return by_seeds(passed, numbers, undecided="both shapes land on the same step of the table grid, which "
                                               "grows 4x per step, more than the 2.5x in parameters")


def capacity_figure(result: ExperimentResult):
    fig = go.Figure()
    for i, ((d_model, heads), part) in enumerate(result.table.groupby(["d_model", "heads"])):
        name = f"d={d_model}, heads={heads} ({int(part.n_parameters.iloc[0])} params)"
        median = part.groupby("table_size", as_index=False)["accuracy"].median()
        fig.add_trace(go.Scatter(x=median.table_size, y=median.accuracy, mode="lines", line=dict(color=color(i)),
                                 name=name + " median", legendgroup=name))
        fig.add_trace(go.Scatter(x=part.table_size, y=part.accuracy, mode="markers", marker=dict(color=color(i), size=6),
                                 name=name + ", each seed", legendgroup=name, showlegend=False,
                                 text=[f"seed {seed}" for seed in part.get("seed", [0] * len(part))]))
    fig.update_xaxes(title="table size (rows, log scale)", type="log", tickvals=sorted(result.table.table_size.unique()),
                     tickformat="~g")  # the sizes tried, not plotly's bare minor digits
    fig.update_yaxes(title="share of the table recalled exactly", range=[0, 1.05])
    return paper_style(fig, width="single", height=300)


MEMORIZATION_PAPERS = ("2306.02010",)

register_experiment(Experiment(
    name="memorization-capacity",
    description="1-layer Transformers memorizing random key->value tables of 64, 256 and 1024 rows, for 3 shapes "
                "(d_model 32 with 1 and 4 heads, d_model 64 with 4 heads), seeds 0-2.",
    variants=capacity_variants, analyze=capacity_analyze, figure=capacity_figure,
    claims=[
        Claim("heads", "Memorization capacity grows with the number of attention heads", MEMORIZATION_PAPERS,
              "H heads with Theta(H d^2) parameters memorize Omega(H n) examples", "paper",
              "per seed: 4 heads memorize a strictly larger table than 1 head at d_model 32; a seed cannot tell "
              "when the two have the same parameter count or land on the same table size; then the shared rule "
              "over >= 3 seeds", decide_heads),
        Claim("parameters", "Memorization capacity grows with parameters (d_model 32 -> 64 at 4 heads, 2.5x "
              "the parameters)", MEMORIZATION_PAPERS, "capacity grows with parameters",
              "width instead of heads", "per seed: d_model 64 memorizes a strictly larger table than d_model 32; "
              "a seed cannot tell when both land on the same table size; then the shared rule over >= 3 seeds",
              decide_parameters)],
    untested=[UntestedClaim("Capacity scales as Omega(H n) with H heads of Theta(d^2) parameters each",
                            MEMORIZATION_PAPERS, "heads with their own d x d projections (here heads split "
                            "d_model) and a table grid finer than 4x per step")]))
