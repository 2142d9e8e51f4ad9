"""Memorization capacity: the largest random table a 1-layer attention-only Transformer recalls perfectly,
found by bisection (Mahdavi et al. 2024, "Memorization Capacity of Multi-Head Attention in Transformers",
arXiv 2306.02010: H heads with Theta(H d^2) parameters memorize Omega(H n) examples of n < d tokens).
Three recipes, each sweeping one factor of H n:

- `memorization-capacity`: 1, 2, 4 and 8 heads of dimension 8 that split d_model (d_model = 8 H, as
  GPT-2's heads do), so each head's projections widen with H too and the parameters grow as H^2;
- `memorization-capacity-fixed-d`: the paper's layer, H heads with their own d x d projections at a fixed
  embedding dimension d = 8 (model.attention_head_dim), so parameters grow as H;
- `memorization-context`: the paper's layer at 2 heads and d = 16, with keys of 2 to 12 symbols, so the
  context n grows while every parameter stays.

Each (point, seed) pair bisects on its own, in lockstep with the others so a round's runs train side by
side: a first round on a coarse grid brackets the capacity, later rounds split the bracket at its
geometric midpoint until high / low <= the recipe's precision or its rounds have run (bisection.py).
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
from ...tasks.memorize import MAX_TABLE
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from ..bisection import bracket, next_size
from ..verdicts import Claim, Outcome, by_seeds
from . import common

# Head dimension 8: the 8-head model is then d_model 64, whose 2000-step runs take ~10 s on one core,
# so the whole bisection fits the 30-minute budget on 2 cores; at 16 the 8-head model is 4x the cost.
HEAD_DIM = 8
HEADS = (1, 2, 4, 8)
SEEDS = (0, 1, 2)
GRID = (16, 64, 256, 1024)  # the first round: a bracket 4x wide for any capacity from 16 to 1024 rows
STEPS, LR = 2000, 3e-3
KEY_LENGTH, N_KEYS = 3, 16  # 16^3 = 4096 distinct keys: the largest table there is
SLOPE_TOLERANCE = 0.25  # see the "linear" claims' rule
FAST = {"seeds": (0,), "grid": (16, 128), "precision": 2.0, "rounds": 3, "steps": 1000}

# memorization-context: the paper's layer at 2 heads of their own 16 x 16 projections. d = 16 leaves room
# for contexts n from 4 to 14 tokens, all below d as the theorem assumes; 32 key symbols give even 2-symbol
# keys 1024 distinct rows; the position table has 16 rows at every n, so every point has the same parameters.
CONTEXT_D, CONTEXT_HEADS, CONTEXT_KEYS = 16, 2, 32
CONTEXTS = (4, 6, 10, 14)  # ^, the key's n - 2 symbols and =: the tokens the answer's query sees


@dataclass(frozen=True)
class HeadSweep:
    """1, 2, 4 and 8 heads of dimension HEAD_DIM on 3-symbol keys."""
    own_projections: bool  # False: the heads split d_model = HEAD_DIM x H; True: d_model = HEAD_DIM for every H
    axis = "heads"
    short, short_title = "h", "heads"
    head_dim = HEAD_DIM
    points, fast_points = HEADS, (1, 4)
    precision, rounds = 1.25, 6  # the grid, then at most 5 bisections (4x -> 2x -> 1.41x -> 1.19x takes 3)
    steps_text, plural = "1 to 2 to 4 to 8 heads", "head counts"

    def d_model(self, heads: int) -> int:
        return HEAD_DIM if self.own_projections else heads * HEAD_DIM

    def overrides(self, heads: int) -> list[str]:
        # max_positions 8 covers the 7-token rows, so no unused position table counts as parameters
        own = [f"model.attention_head_dim={HEAD_DIM}"] if self.own_projections else []
        return [f"task.key_length={KEY_LENGTH}", f"task.n_keys={N_KEYS}", f"model.d_model={self.d_model(heads)}",
                f"model.n_heads={heads}", *own, "model.max_positions=8"]

    def labels(self, heads: int) -> dict:
        return {"heads": heads, "head_dim": HEAD_DIM}

    def record(self, heads: int) -> dict:
        return {"heads": heads, "d_model": self.d_model(heads)}

    def ceiling(self, heads: int) -> int:
        return N_KEYS ** KEY_LENGTH

    def axis_title(self, shapes: pd.DataFrame) -> str:
        one_width = "d_model" in shapes and shapes.d_model.nunique() == 1  # the paper's layer: every H at one d
        fixed_d = f",<br>d_model {int(shapes.d_model.iloc[0])}" if one_width else ""  # two lines: the panel is narrow
        return f"heads (head dimension {HEAD_DIM}{fixed_d})"


@dataclass(frozen=True)
class ContextSweep:
    """Keys of n - 2 symbols at a fixed layer: the context n grows, the parameters do not."""
    axis = "context"
    short, short_title = "n", "context n"
    head_dim = CONTEXT_D
    points, fast_points = CONTEXTS, (4, 10)
    # 1.15x: over n = 4 to 14 a bracket this wide moves a slope by at most 0.22 (the linear rule's tolerance)
    precision, rounds = 1.15, 7
    steps_text, plural = "n = " + " to ".join(map(str, CONTEXTS)) + " tokens", "context sizes"

    def overrides(self, context: int) -> list[str]:
        return [f"task.key_length={context - 2}", f"task.n_keys={CONTEXT_KEYS}", f"model.d_model={CONTEXT_D}",
                f"model.n_heads={CONTEXT_HEADS}", f"model.attention_head_dim={CONTEXT_D}",
                f"model.max_positions={CONTEXT_D}"]

    def labels(self, context: int) -> dict:
        return {"context": context, "key_length": context - 2, "heads": CONTEXT_HEADS}

    def record(self, context: int) -> dict:
        return {"context": context, "key_length": context - 2, "heads": CONTEXT_HEADS, "d_model": CONTEXT_D}

    def ceiling(self, context: int) -> int:
        return min(CONTEXT_KEYS ** (context - 2), MAX_TABLE)

    def axis_title(self, shapes: pd.DataFrame) -> str:
        return f"context n (tokens; {CONTEXT_HEADS} heads, d {CONTEXT_D})"


SPLIT, FIXED_D, CONTEXT = HeadSweep(own_projections=False), HeadSweep(own_projections=True), ContextSweep()


def _plan(sweep, fast: bool) -> dict:
    if fast:
        return {**FAST, "points": sweep.fast_points}
    return {"points": sweep.points, "seeds": SEEDS, "grid": GRID, "precision": sweep.precision,
            "rounds": sweep.rounds, "steps": STEPS}


def _variant(sweep, point: int, seed: int, size: int, round_: int, steps: int) -> Variant:
    # Attention only (mlp_ratio 0): the claim is about the attention layer. Each seed draws its own table.
    config = common.config(["task.name=memorize", f"task.table_size={size}", f"task.table_seed={seed}",
                            "model.n_layers=1", *sweep.overrides(point), "model.mlp_ratio=0",
                            "model.init=fan_in", f"train.lr={LR}", "train.warmup=50",
                            "train.batch_size=128", "train.threads=1", "train.weight_decay=0",
                            f"train.steps={steps}", "probes.every=0", f"train.seed={seed}"])
    return Variant(config, {**sweep.labels(point), "table_size": size, "seed": seed, "round": round_})


def capacity_variants(sweep, fast: bool) -> list[Variant]:
    """The first round: every (point, seed) on the coarse grid."""
    plan = _plan(sweep, fast)
    return [_variant(sweep, point, seed, size, 0, plan["steps"])
            for point, seed, size in itertools.product(plan["points"], plan["seeds"], plan["grid"])
            if size <= sweep.ceiling(point)]


@lru_cache(maxsize=4096)
def _measure(run_path: str) -> tuple[float, int, float]:
    """(share of the table recalled exactly, parameters, bits in the table) of a finished run: read once
    per process, since every round's next_round and the analysis ask again (a finished run never changes)."""
    from ...store import Run

    model, task = load_model(Run(run_path))
    return table_exact_match(model, task), sum(p.numel() for p in model.parameters()), table_bits(task.params)


def _tried(sweep, finished) -> dict[tuple[int, int], dict[int, bool]]:
    """(point, seed) -> table size -> memorized perfectly."""
    tried = {}
    for variant, run in finished:
        labels = variant.labels
        tried.setdefault((labels[sweep.axis], labels["seed"]), {})[labels["table_size"]] = \
            _measure(str(run.path))[0] >= 1.0
    return tried


def capacity_next_round(sweep, finished, fast: bool) -> list[Variant]:
    plan = _plan(sweep, fast)
    round_ = 1 + max(variant.labels["round"] for variant, _ in finished)
    if round_ >= plan["rounds"]:
        return []
    out = []
    for (point, seed), tried in sorted(_tried(sweep, finished).items()):
        size = next_size(tried, plan["precision"], floor=2, ceiling=sweep.ceiling(point))
        if size is not None:
            out.append(_variant(sweep, point, seed, size, round_, plan["steps"]))
    return out


def _slope(xs, ys) -> float | None:
    """Least-squares slope of log y on log x; None without two distinct points."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def capacity_analyze(sweep, finished, fast):
    axis = sweep.axis
    rows = []
    for variant, run in finished:
        accuracy, n_parameters, bits = _measure(str(run.path))
        rows.append({**variant.labels, "accuracy": accuracy, "memorized": accuracy >= 1.0, "bits": bits,
                     "n_parameters": n_parameters})
    table = pd.DataFrame(rows).sort_values(["seed", axis, "round", "table_size"], ignore_index=True)
    shapes = []
    for (seed, point), part in table.groupby(["seed", axis]):
        b = bracket(dict(zip(part.table_size.astype(int), part.memorized.astype(bool))))
        params = int(part.n_parameters.iloc[0])
        bits = b.low * float(part.bits.iloc[0]) / int(part.table_size.iloc[0])  # every row holds as many bits
        shapes.append({"seed": int(seed), **sweep.record(int(point)), "n_parameters": params,
                       "low": b.low, "high": b.high, "largest_memorized": b.largest_success, "monotone": b.monotone,
                       "capacity": b.estimate, "bits": bits, "bits_per_parameter": bits / params,
                       "rounds": int(part["round"].max()) + 1, "sizes_tried": sorted(int(s) for s in part.table_size)})
    fits = {}
    for seed in sorted({s["seed"] for s in shapes}):
        mine = [s for s in shapes if s["seed"] == seed]
        closed = all(s["capacity"] for s in mine)
        fits[str(seed)] = {
            f"slope_vs_{axis}": _slope([s[axis] for s in mine], [s["capacity"] for s in mine]) if closed else None,
            "slope_vs_parameters": (_slope([s["n_parameters"] for s in mine], [s["capacity"] for s in mine])
                                    if closed else None)}
    first = min(fits)
    headline = "; ".join(f"{sweep.short}={s[axis]} ({s['n_parameters']} params): {_bracket_text(s)}"
                         for s in shapes if str(s["seed"]) == first)
    slope = fits[first][f"slope_vs_{axis}"]
    headline += (f"; slope vs {axis} {slope:.2f}" if slope is not None else "") + \
        f" (seed {first}; every seed per claim)"
    return table, {"shapes": shapes, "fits": fits, "head_dim": sweep.head_dim,
                   "precision": _plan(sweep, fast)["precision"], "headline": headline}


def _bracket_text(shape: dict) -> str:
    high = f"fails {shape['high']}" if shape["high"] is not None else "fails none tried"
    text = f"memorizes {shape['low']}, {high}"
    return text if shape["monotone"] else text + f" (but memorizes {shape['largest_memorized']})"


def _by_seed(sweep, summary: dict) -> dict[int, list[dict]]:
    seeds = {}
    for shape in summary.get("shapes", []):
        if "low" not in shape:  # a summary from before the bisection (a grid's result): not this claim's numbers
            continue
        seeds.setdefault(shape["seed"], []).append(shape)
    return {seed: sorted(shapes, key=lambda s: s[sweep.axis]) for seed, shapes in sorted(seeds.items())}


def decide_grows(sweep, summary: dict) -> Outcome:
    passed, numbers = {}, {}
    for seed, shapes in _by_seed(sweep, summary).items():
        pairs = list(zip(shapes, shapes[1:]))
        # two shapes that both memorized every size tried, or both none, cannot be ordered
        if any(a["low"] == b["low"] and ((a["high"] is None and b["high"] is None) or a["low"] == 0)
               for a, b in pairs):
            passed[seed] = None
        else:
            passed[seed] = bool(pairs) and all(b["low"] > a["low"] for a, b in pairs)
        numbers[seed] = "; ".join(f"{sweep.short}={s[sweep.axis]}: {_bracket_text(s)}" for s in shapes)
    return by_seeds(passed, numbers, undecided=f"two {sweep.plural} memorized every table tried, or none")


def decide_linear(sweep, summary: dict) -> Outcome:
    passed, numbers = {}, {}
    for seed, shapes in _by_seed(sweep, summary).items():
        slope = summary.get("fits", {}).get(str(seed), {}).get(f"slope_vs_{sweep.axis}")
        passed[seed] = None if slope is None else slope >= 1 - SLOPE_TOLERANCE
        numbers[seed] = (f"slope {slope:.2f}" if slope is not None else "an open bracket") + \
            f" over {sweep.short}=" + ",".join(str(s[sweep.axis]) for s in shapes)
    return by_seeds(passed, numbers, undecided=f"a bracket stayed open: a {sweep.plural[:-1]} memorized every "
                                               "table tried, or none")


LOG_TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]


def _seed_lines(fig, shapes: pd.DataFrame, x: str, y, col: int, legend: bool, error=None) -> None:
    for i, (seed, part) in enumerate(shapes.groupby("seed")):
        fig.add_trace(go.Scatter(x=part[x], y=y(part), mode="markers+lines", name=f"seed {seed}",
                                 legendgroup=f"seed {seed}", showlegend=legend, marker=dict(color=color(i)),
                                 line=dict(color=color(i), width=1), error_y=error(part) if error else None),
                      row=1, col=col)


def capacity_figure(sweep, result: ExperimentResult):
    """Capacity (each seed's bracket as an error bar around its geometric midpoint) against the swept
    factor and, where they differ, against parameters, log-log, with the slope fitted over every seed;
    bits per parameter beside."""
    shapes = pd.DataFrame(result.summary.get("shapes", []))
    axis = sweep.axis
    if not len(shapes):
        return paper_style(make_subplots(rows=1, cols=3), width="double", height=300)
    panels = [(axis, sweep.axis_title(shapes))]
    if shapes.n_parameters.nunique() > 1:
        panels.append(("n_parameters", "parameters"))
    fig = make_subplots(rows=1, cols=len(panels) + 1, horizontal_spacing=0.13)
    closed = shapes.dropna(subset=["capacity"])

    def middle(part):
        low = part["low"].astype(float).clip(lower=1)
        return np.sqrt(low * part["high"].astype(float).fillna(low))  # an open bracket: its lower end only

    def bracket_bars(part):
        low = part["low"].astype(float).clip(lower=1)
        high = part["high"].astype(float).fillna(low)
        return dict(type="data", symmetric=False, array=high - middle(part), arrayminus=middle(part) - low)

    for col, (x, title) in enumerate(panels, start=1):
        _seed_lines(fig, shapes, x, middle, col, legend=col == 1, error=bracket_bars)
        slope = _slope(list(closed[x]), list(closed["capacity"]))
        if slope is not None:
            xs = np.array(sorted(closed[x].unique()), dtype=float)
            intercept = np.mean(np.log(closed["capacity"])) - slope * np.mean(np.log(closed[x].astype(float)))
            fig.add_trace(go.Scatter(x=xs, y=np.exp(intercept) * xs ** slope, mode="lines",
                                     line=dict(dash="dash", color="black", width=1.5),
                                     name=f"fit vs {x.replace('n_', '')}: slope {slope:.2f}"), row=1, col=col)
        ticks = sorted(shapes[axis].unique()) if x == axis else [t * 10 ** k for k in (2, 3, 4) for t in (1, 2, 5)]
        fig.update_xaxes(title_text=title, type="log", row=1, col=col, tickvals=ticks)
        fig.update_yaxes(title_text="capacity (table rows)", type="log", tickvals=LOG_TICKS, row=1, col=col)
    bits_col = len(panels) + 1
    _seed_lines(fig, shapes, axis, lambda part: part["bits_per_parameter"], bits_col, legend=False)
    fig.update_xaxes(title_text=sweep.short_title, type="log",
                     tickvals=sorted(shapes[axis].unique()), row=1, col=bits_col)
    fig.update_yaxes(title_text="bits per parameter", rangemode="tozero", row=1, col=bits_col)
    return paper_style(fig, width="double", height=320)


MEMORIZATION_PAPERS = ("2306.02010",)
OURS = (f"trained by AdamW, not the paper's construction; heads split d_model = {HEAD_DIM} x heads, so each "
        "head's projections also widen with H (attention parameters grow as H^2, not H); attention-only block")
PAPERS_LAYER = (f"the paper's layer shape, H heads with their own {HEAD_DIM} x {HEAD_DIM} query, key and value "
                f"projections at a fixed embedding dimension d = {HEAD_DIM} (model.attention_head_dim), rows of 7 "
                "tokens (context n < d), trained by AdamW, not the paper's construction; attention-only block")
CONTEXT_LAYER = (f"the paper's layer shape at a fixed H = {CONTEXT_HEADS} and d = {CONTEXT_D} (each head its own "
                 f"{CONTEXT_D} x {CONTEXT_D} projections), the context n grown by longer keys over {CONTEXT_KEYS} "
                 "symbols, every parameter the same at each n, trained by AdamW, not the paper's construction; "
                 "attention-only block")


def _bisection(sweep) -> str:
    return (f"each shape's largest perfectly memorized table is found by bisection (grid "
            f"{', '.join(map(str, GRID))} rows, then geometric midpoints until high/low <= {sweep.precision}, at "
            f"most {sweep.rounds} rounds), {STEPS} steps at lr {LR:g}, seeds 0-2 (each its own table).")


def _grows_rule(sweep) -> str:
    return ("per seed: the bisection's lower end (the largest table memorized below the smallest failure) strictly "
            f"increases from {sweep.steps_text}; a seed cannot tell when two {sweep.plural} memorized every table "
            "tried, or none; then the shared rule over >= 3 seeds")


def _linear_rule(sweep) -> str:
    span = max(sweep.points) / min(sweep.points)
    return (f"per seed: the least-squares slope of log capacity (the bracket's geometric midpoint) on log {sweep.axis} "
            f"is >= {1 - SLOPE_TOLERANCE:g}. Linear growth is slope 1; each capacity is known within the bracket "
            f"precision {sweep.precision}x, which over {sweep.axis} {min(sweep.points)} to {max(sweep.points)} moves "
            f"a two-point slope by up to 2 ln {sweep.precision} / ln {span:g} = "
            f"{2 * math.log(sweep.precision) / math.log(span):.2f}, so the tolerance is {SLOPE_TOLERANCE}. A seed "
            "cannot tell when a bracket stayed open; then the shared rule over >= 3 seeds")


def _claims(sweep, grows: str, linear: str, method: str) -> list[Claim]:
    return [Claim(sweep.axis, grows, MEMORIZATION_PAPERS, "H heads with Theta(H d^2) parameters memorize Omega(H n) "
                  "examples", method, _grows_rule(sweep), partial(decide_grows, sweep)),
            Claim("linear", linear, MEMORIZATION_PAPERS, "Omega(H n) examples", method, _linear_rule(sweep),
                  partial(decide_linear, sweep))]


def _register(name: str, sweep, description: str, claims: list[Claim]) -> None:
    register_experiment(Experiment(
        name=name, description=description, variants=partial(capacity_variants, sweep),
        analyze=partial(capacity_analyze, sweep), figure=partial(capacity_figure, sweep),
        next_round=partial(capacity_next_round, sweep), claims=claims))


_register("memorization-capacity", SPLIT,
          f"1-layer attention-only Transformers (no MLP) with 1, 2, 4 and 8 heads of dimension {HEAD_DIM} "
          f"(d_model {HEAD_DIM} to {8 * HEAD_DIM}) memorizing random tables of 3-symbol keys -> 1 of 16 values; "
          + _bisection(SPLIT),
          _claims(SPLIT, f"Memorization capacity grows with the number of heads at a fixed head dimension ({HEAD_DIM})",
                  "Memorization capacity grows at least linearly with the number of heads (Omega(H n) at a fixed "
                  "context n)", OURS))

_register("memorization-capacity-fixed-d", FIXED_D,
          f"1-layer attention-only Transformers (no MLP) of embedding dimension {HEAD_DIM} with 1, 2, 4 and 8 heads, "
          f"each with its own {HEAD_DIM} x {HEAD_DIM} query, key and value projections (model.attention_head_dim="
          f"{HEAD_DIM}: the layer's parameters grow as H), memorizing random tables of 3-symbol keys -> 1 of 16 "
          "values; " + _bisection(FIXED_D),
          _claims(FIXED_D, f"At a fixed embedding dimension (d = {HEAD_DIM}), memorization capacity grows with the "
                  "number of heads, each with its own d x d projections",
                  f"At a fixed embedding dimension (d = {HEAD_DIM}), memorization capacity grows at least linearly "
                  "with the number of heads, i.e. with the Theta(H d^2) parameters (Omega(H n) at a fixed context n)",
                  PAPERS_LAYER))

_register("memorization-context", CONTEXT,
          f"1-layer attention-only Transformers (no MLP) of embedding dimension {CONTEXT_D} with {CONTEXT_HEADS} "
          "heads, "
          f"each with its own {CONTEXT_D} x {CONTEXT_D} projections, memorizing random tables whose keys have 2, 4, 8 "
          f"and 12 symbols of {CONTEXT_KEYS} (a context n of 4 to 14 tokens, all below d) -> 1 of 16 values, at the "
          "same parameters for every n; " + _bisection(CONTEXT),
          _claims(CONTEXT, f"At fixed heads ({CONTEXT_HEADS}) and embedding dimension (d = {CONTEXT_D}), memorization "
                  "capacity grows with the context size n (n < d)",
                  f"At fixed heads ({CONTEXT_HEADS}) and d = {CONTEXT_D}, memorization capacity grows at least "
                  "linearly with the context size n (Omega(H n) at fixed H)", CONTEXT_LAYER))

# what each capacity recipe sweeps, for the Memorization page's choice between them
CAPACITY_RECIPES = {"memorization-capacity": "heads (splitting d_model)",
                    "memorization-capacity-fixed-d": "heads (each its own d x d projections)",
                    "memorization-context": "context size n (2 heads, same parameters)"}
