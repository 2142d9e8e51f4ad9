"""memorization-capacity: the largest random table a 1-layer attention-only Transformer recalls perfectly,
found by bisection, for 1, 2, 4 and 8 heads of a fixed head dimension (Mahdavi et al. 2024, "Memorization
Capacity of Multi-Head Attention in Transformers", arXiv 2306.02010), in two shapes:

- `memorization-capacity`: the heads split d_model (d_model = 8 H, as GPT-2's heads do), so each head's
  projections widen with H too and the layer's parameters grow as H^2;
- `memorization-capacity-fixed-d`: the paper's layer, H heads with their own d x d projections at a fixed
  embedding dimension d = 8 (model.attention_head_dim), so parameters grow as H.

Each (heads, seed) pair bisects on its own, in lockstep with the others so a round's runs train side by
side: a first round on a coarse grid brackets the capacity, later rounds split the bracket at its
geometric midpoint until high / low <= PRECISION or ROUNDS rounds have run (bisection.py).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...analysis import load_model
from ...figures.style import color, paper_style
from ...probes.memorization import table_bits, table_exact_match
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from ..bisection import bracket, next_size
from ..verdicts import Claim, Outcome, UntestedClaim, by_seeds
from . import common

# Head dimension 8: the 8-head model is then d_model 64, whose 2000-step runs take ~10 s on one core,
# so the whole bisection fits the 30-minute budget on 2 cores; at 16 the 8-head model is 4x the cost.
HEAD_DIM = 8
HEADS = (1, 2, 4, 8)
SEEDS = (0, 1, 2)
GRID = (16, 64, 256, 1024)  # the first round: a bracket 4x wide for any capacity from 16 to 1024 rows
PRECISION = 1.25  # stop when the smallest failure is within 1.25x of the largest success below it
ROUNDS = 6  # the grid, then at most 5 bisections (4x -> 2x -> 1.41x -> 1.19x takes 3)
STEPS, LR = 2000, 3e-3
KEY_LENGTH, N_KEYS = 3, 16  # 16^3 = 4096 distinct keys: the largest table there is
FAST = {"heads": (1, 4), "seeds": (0,), "grid": (16, 128), "precision": 2.0, "rounds": 3, "steps": 1000}
FULL = {"heads": HEADS, "seeds": SEEDS, "grid": GRID, "precision": PRECISION, "rounds": ROUNDS, "steps": STEPS}
SLOPE_TOLERANCE = 0.25  # see the "linear" claim's rule


def _plan(fast: bool) -> dict:
    return FAST if fast else FULL


@dataclass(frozen=True)
class Shape:
    """How H heads of dimension HEAD_DIM sit in the model."""
    own_projections: bool  # False: the heads split d_model = HEAD_DIM x H; True: d_model = HEAD_DIM for every H

    def d_model(self, heads: int) -> int:
        return HEAD_DIM if self.own_projections else heads * HEAD_DIM

    def overrides(self, heads: int) -> list[str]:
        own = [f"model.attention_head_dim={HEAD_DIM}"] if self.own_projections else []
        return [f"model.d_model={self.d_model(heads)}", f"model.n_heads={heads}", *own]


SPLIT, FIXED_D = Shape(own_projections=False), Shape(own_projections=True)


def _variant(shape: Shape, heads: int, seed: int, size: int, round_: int, steps: int) -> Variant:
    # Attention only (mlp_ratio 0): the claim is about the attention layer. max_positions 8 covers the
    # 7-token rows, so no unused position table counts as parameters. Each seed draws its own table.
    config = common.config(["task.name=memorize", f"task.table_size={size}", f"task.key_length={KEY_LENGTH}",
                            f"task.n_keys={N_KEYS}", f"task.table_seed={seed}", "model.n_layers=1",
                            *shape.overrides(heads), "model.mlp_ratio=0",
                            "model.max_positions=8", "model.init=fan_in", f"train.lr={LR}", "train.warmup=50",
                            "train.batch_size=128", "train.threads=1", "train.weight_decay=0",
                            f"train.steps={steps}", "probes.every=0", f"train.seed={seed}"])
    return Variant(config, {"heads": heads, "head_dim": HEAD_DIM, "table_size": size, "seed": seed, "round": round_})


def capacity_variants(shape: Shape, fast: bool) -> list[Variant]:
    """The first round: every (heads, seed) on the coarse grid."""
    plan = _plan(fast)
    return [_variant(shape, h, seed, size, 0, plan["steps"])
            for h, seed, size in itertools.product(plan["heads"], plan["seeds"], plan["grid"])]


@lru_cache(maxsize=4096)
def _measure(run_path: str) -> tuple[float, int, float]:
    """(share of the table recalled exactly, parameters, bits in the table) of a finished run: read once
    per process, since every round's next_round and the analysis ask again (a finished run never changes)."""
    from ...store import Run

    model, task = load_model(Run(run_path))
    return table_exact_match(model, task), sum(p.numel() for p in model.parameters()), table_bits(task.params)


def _tried(finished) -> dict[tuple[int, int], dict[int, bool]]:
    """(heads, seed) -> table size -> memorized perfectly."""
    tried = {}
    for variant, run in finished:
        labels = variant.labels
        tried.setdefault((labels["heads"], labels["seed"]), {})[labels["table_size"]] = \
            _measure(str(run.path))[0] >= 1.0
    return tried


def capacity_next_round(shape: Shape, finished, fast: bool) -> list[Variant]:
    plan = _plan(fast)
    round_ = 1 + max(variant.labels["round"] for variant, _ in finished)
    if round_ >= plan["rounds"]:
        return []
    out = []
    for (heads, seed), tried in sorted(_tried(finished).items()):
        size = next_size(tried, plan["precision"], floor=2, ceiling=N_KEYS ** KEY_LENGTH)
        if size is not None:
            out.append(_variant(shape, heads, seed, size, round_, plan["steps"]))
    return out


def _slope(xs, ys) -> float | None:
    """Least-squares slope of log y on log x; None without two distinct points."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def capacity_analyze(shape: Shape, finished, fast):
    rows = []
    for variant, run in finished:
        accuracy, n_parameters, bits = _measure(str(run.path))
        rows.append({**variant.labels, "accuracy": accuracy, "memorized": accuracy >= 1.0, "bits": bits,
                     "n_parameters": n_parameters})
    table = pd.DataFrame(rows).sort_values(["seed", "heads", "round", "table_size"], ignore_index=True)
    shapes = []
    for (seed, heads), part in table.groupby(["seed", "heads"]):
        b = bracket(dict(zip(part.table_size.astype(int), part.memorized.astype(bool))))
        params = int(part.n_parameters.iloc[0])
        bits = b.low * float(part.bits.iloc[0]) / int(part.table_size.iloc[0])  # every row holds as many bits
        shapes.append({"seed": int(seed), "heads": int(heads), "d_model": shape.d_model(int(heads)),
                       "n_parameters": params,
                       "low": b.low, "high": b.high, "largest_memorized": b.largest_success, "monotone": b.monotone,
                       "capacity": b.estimate, "bits": bits, "bits_per_parameter": bits / params,
                       "rounds": int(part["round"].max()) + 1, "sizes_tried": sorted(int(s) for s in part.table_size)})
    fits = {}
    for seed in sorted({s["seed"] for s in shapes}):
        mine = [s for s in shapes if s["seed"] == seed]
        closed = all(s["capacity"] for s in mine)
        fits[str(seed)] = {
            "slope_vs_heads": _slope([s["heads"] for s in mine], [s["capacity"] for s in mine]) if closed else None,
            "slope_vs_parameters": (_slope([s["n_parameters"] for s in mine], [s["capacity"] for s in mine])
                                    if closed else None)}
    first = min(fits)
    headline = "; ".join(f"h={s['heads']} ({s['n_parameters']} params): {_bracket_text(s)}"
                         for s in shapes if str(s["seed"]) == first)
    slope = fits[first]["slope_vs_heads"]
    headline += (f"; slope vs heads {slope:.2f}" if slope is not None else "") + f" (seed {first}; every seed per claim)"
    return table, {"shapes": shapes, "fits": fits, "head_dim": HEAD_DIM, "precision": _plan(fast)["precision"],
                   "headline": headline}


def _bracket_text(shape: dict) -> str:
    high = f"fails {shape['high']}" if shape["high"] is not None else "fails none tried"
    text = f"memorizes {shape['low']}, {high}"
    return text if shape["monotone"] else text + f" (but memorizes {shape['largest_memorized']})"


def _by_seed(summary: dict) -> dict[int, list[dict]]:
    seeds = {}
    for shape in summary.get("shapes", []):
        if "low" not in shape:  # a summary from before the bisection (a grid's result): not this claim's numbers
            continue
        seeds.setdefault(shape["seed"], []).append(shape)
    return {seed: sorted(shapes, key=lambda s: s["heads"]) for seed, shapes in sorted(seeds.items())}


def decide_heads(summary: dict) -> Outcome:
    passed, numbers = {}, {}
    for seed, shapes in _by_seed(summary).items():
        pairs = list(zip(shapes, shapes[1:]))
        # two shapes that both memorized every size tried, or both none, cannot be ordered
        if any(a["low"] == b["low"] and ((a["high"] is None and b["high"] is None) or a["low"] == 0)
               for a, b in pairs):
            passed[seed] = None
        else:
            passed[seed] = bool(pairs) and all(b["low"] > a["low"] for a, b in pairs)
        numbers[seed] = "; ".join(f"h={s['heads']}: {_bracket_text(s)}" for s in shapes)
    return by_seeds(passed, numbers, undecided="two head counts memorized every table tried, or none")


def decide_linear(summary: dict) -> Outcome:
    passed, numbers = {}, {}
    for seed, shapes in _by_seed(summary).items():
        slope = summary.get("fits", {}).get(str(seed), {}).get("slope_vs_heads")
        passed[seed] = None if slope is None else slope >= 1 - SLOPE_TOLERANCE
        numbers[seed] = (f"slope {slope:.2f}" if slope is not None else "an open bracket") + " over h=" + \
            ",".join(str(s["heads"]) for s in shapes)
    return by_seeds(passed, numbers, undecided="a bracket stayed open: a head count memorized every table "
                                               "tried, or none")


LOG_TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]


def capacity_figure(result: ExperimentResult):
    """Capacity (each seed's bracket as an error bar around its geometric midpoint) against heads and
    against parameters, log-log, with the slope fitted over every seed; bits per parameter beside."""
    shapes = pd.DataFrame(result.summary.get("shapes", []))
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.13)
    if not len(shapes):
        return paper_style(fig, width="double", height=300)
    closed = shapes.dropna(subset=["capacity"])
    one_width = "d_model" in shapes and shapes.d_model.nunique() == 1  # the paper's layer: every H at one d
    fixed_d = f",<br>d_model {int(shapes.d_model.iloc[0])}" if one_width else ""  # two lines: the panel is narrow
    axes = ((1, "heads", f"heads (head dimension {HEAD_DIM}{fixed_d})"), (2, "n_parameters", "parameters"))
    for col, x, title in axes:
        for i, (seed, part) in enumerate(shapes.groupby("seed")):
            low = part["low"].astype(float)
            high = part["high"].astype(float).fillna(low)  # an open bracket: its lower end only
            middle = np.sqrt(low.clip(lower=1) * high.clip(lower=1))
            fig.add_trace(go.Scatter(x=part[x], y=middle, mode="markers+lines", name=f"seed {seed}",
                                     legendgroup=f"seed {seed}", showlegend=col == 1, marker=dict(color=color(i)),
                                     line=dict(color=color(i), width=1),
                                     error_y=dict(type="data", symmetric=False, array=high - middle,
                                                  arrayminus=middle - low.clip(lower=1))), row=1, col=col)
        slope = _slope(list(closed[x]), list(closed["capacity"]))
        if slope is not None:
            xs = np.array(sorted(closed[x].unique()), dtype=float)
            intercept = np.mean(np.log(closed["capacity"])) - slope * np.mean(np.log(closed[x].astype(float)))
            fig.add_trace(go.Scatter(x=xs, y=np.exp(intercept) * xs ** slope, mode="lines",
                                     line=dict(dash="dash", color="black", width=1.5),
                                     name=f"fit vs {x.replace('n_', '')}: slope {slope:.2f}"), row=1, col=col)
        fig.update_xaxes(title_text=title, type="log", row=1, col=col,
                         tickvals=sorted(shapes.heads.unique()) if x == "heads" else [t * 10 ** k for k in (2, 3, 4)
                                                                                      for t in (1, 2, 5)])
        fig.update_yaxes(title_text="capacity (table rows)", type="log", tickvals=LOG_TICKS, row=1, col=col)
    for i, (seed, part) in enumerate(shapes.groupby("seed")):
        fig.add_trace(go.Scatter(x=part["heads"], y=part["bits_per_parameter"], mode="markers+lines",
                                 marker=dict(color=color(i)), line=dict(color=color(i), width=1),
                                 legendgroup=f"seed {seed}", showlegend=False, name=f"seed {seed}"), row=1, col=3)
    fig.update_xaxes(title_text="heads", type="log", tickvals=sorted(shapes.heads.unique()), row=1, col=3)
    fig.update_yaxes(title_text="bits per parameter", rangemode="tozero", row=1, col=3)
    return paper_style(fig, width="double", height=320)


MEMORIZATION_PAPERS = ("2306.02010",)
OURS = (f"trained by AdamW, not the paper's construction; heads split d_model = {HEAD_DIM} x heads, so each "
        "head's projections also widen with H (attention parameters grow as H^2, not H); attention-only block")
PAPERS_LAYER = (f"the paper's layer shape, H heads with their own {HEAD_DIM} x {HEAD_DIM} query, key and value "
                f"projections at a fixed embedding dimension d = {HEAD_DIM} (model.attention_head_dim), rows of 7 "
                "tokens (context n < d), trained by AdamW, not the paper's construction; attention-only block")
BISECTION = (f"each shape's largest perfectly memorized table is found by bisection (grid {', '.join(map(str, GRID))} "
             f"rows, then geometric midpoints until high/low <= {PRECISION}, at most {ROUNDS} rounds), {STEPS} steps at "
             f"lr {LR:g}, seeds 0-2 (each its own table).")
HEADS_RULE = ("per seed: the bisection's lower end (the largest table memorized below the smallest failure) strictly "
              "increases from 1 to 2 to 4 to 8 heads; a seed cannot tell when two head counts memorized every table "
              "tried, or none; then the shared rule over >= 3 seeds")
LINEAR_RULE = (f"per seed: the least-squares slope of log capacity (the bracket's geometric midpoint) on log heads is "
               f">= {1 - SLOPE_TOLERANCE:g}. Linear growth is slope 1; each capacity is known within the bracket "
               f"precision {PRECISION}x, which over heads 1 to 8 moves a two-point slope by up to "
               f"2 ln {PRECISION} / ln 8 = {2 * math.log(PRECISION) / math.log(8):.2f}, so the tolerance is "
               f"{SLOPE_TOLERANCE}. A seed cannot tell when a bracket stayed open; then the shared rule over "
               ">= 3 seeds")
CONTEXT_UNTESTED = UntestedClaim("Capacity grows with the context size n", MEMORIZATION_PAPERS,
                                 "tables with longer keys (task.key_length) at each head count")


def _register(name: str, shape: Shape, description: str, claims: list[Claim]) -> None:
    register_experiment(Experiment(
        name=name, description=description, variants=partial(capacity_variants, shape),
        analyze=partial(capacity_analyze, shape), figure=capacity_figure,
        next_round=partial(capacity_next_round, shape),
        claims=claims, untested=[CONTEXT_UNTESTED]))


_register("memorization-capacity", SPLIT,
          f"1-layer attention-only Transformers (no MLP) with 1, 2, 4 and 8 heads of dimension {HEAD_DIM} "
          f"(d_model {HEAD_DIM} to {8 * HEAD_DIM}) memorizing random tables of 3-symbol keys -> 1 of 16 values; "
          + BISECTION,
          [Claim("heads", f"Memorization capacity grows with the number of heads at a fixed head dimension ({HEAD_DIM})",
                 MEMORIZATION_PAPERS, "H heads with Theta(H d^2) parameters memorize Omega(H n) examples", OURS,
                 HEADS_RULE, decide_heads),
           Claim("linear", "Memorization capacity grows at least linearly with the number of heads (Omega(H n) at a "
                 "fixed context n)", MEMORIZATION_PAPERS, "Omega(H n) examples", OURS, LINEAR_RULE, decide_linear)])

_register("memorization-capacity-fixed-d", FIXED_D,
          f"1-layer attention-only Transformers (no MLP) of embedding dimension {HEAD_DIM} with 1, 2, 4 and 8 heads, "
          f"each with its own {HEAD_DIM} x {HEAD_DIM} query, key and value projections (model.attention_head_dim="
          f"{HEAD_DIM}: the layer's parameters grow as H), memorizing random tables of 3-symbol keys -> 1 of 16 "
          "values; " + BISECTION,
          [Claim("heads", f"At a fixed embedding dimension (d = {HEAD_DIM}), memorization capacity grows with the number "
                 "of heads, each with its own d x d projections", MEMORIZATION_PAPERS,
                 "H heads with Theta(H d^2) parameters memorize Omega(H n) examples", PAPERS_LAYER, HEADS_RULE,
                 decide_heads),
           Claim("linear", f"At a fixed embedding dimension (d = {HEAD_DIM}), memorization capacity grows at least "
                 "linearly with the number of heads, i.e. with the Theta(H d^2) parameters (Omega(H n) at a fixed "
                 "context n)", MEMORIZATION_PAPERS, "Omega(H n) examples", PAPERS_LAYER, LINEAR_RULE, decide_linear)])
