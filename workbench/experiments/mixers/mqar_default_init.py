"""mqar-default-init (Zoology: Arora et al. 2023, arXiv 2312.04927): attention on mqar-vs-width's task at width 64,
started from the default init (GPT-2's N(0, 0.02)) as Zoology's models are, on mqar-vs-width's budget and longer.
"""
from __future__ import annotations

import pandas as pd

from ...figures.builders import length_curve
from ...figures.style import color
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from ..verdicts import Claim, Outcome
from . import common
from .mqar_vs_width import (MQAR_MIXER_OVERRIDES, MQAR_PAIRS, MQAR_SEEDS, MQAR_STEPS, MQAR_TASK, MQAR_TRAIN,
                            TARGET_ACCURACY, TARGET_WIDTH, ZOOLOGY, query_rows, solves_every_pairs)

# mqar-vs-width trains every mixer from fan-in init: its pilots (notes/mqar-vs-width.md) found that the default
# init learns recall far later. This recipe measures how much later, on Zoology's own init: mqar-vs-width's
# 1000 steps, then 3x and 6x that (an earlier pilot on a smaller vocabulary found the circuit between 3000 and
# 6000 steps). Each budget is its own run with its own schedule, so a row reads the budget, not a midpoint.
DEFAULT_INIT_TRAIN = [*(o for o in MQAR_TRAIN if not o.startswith("model.init=")), "model.init=gpt2"]
DEFAULT_INIT_STEPS = (MQAR_STEPS, 3 * MQAR_STEPS, 6 * MQAR_STEPS)


def default_init_variants(fast: bool) -> list[Variant]:
    out = []
    for steps in DEFAULT_INIT_STEPS[:1] if fast else DEFAULT_INIT_STEPS:
        for seed in MQAR_SEEDS[:1] if fast else MQAR_SEEDS:
            config = common.config(*MQAR_TASK, *MQAR_MIXER_OVERRIDES["attention"], *DEFAULT_INIT_TRAIN,
                                   f"model.d_model={TARGET_WIDTH}",
                                   f"task.eval_lengths={','.join(map(str, MQAR_PAIRS))}",
                                   *common.budget(fast, steps, evaluations=4), f"train.seed={seed}")
            out.append(Variant(config, {"mixer": "attention", "init": "gpt2", "width": TARGET_WIDTH, "steps": steps,
                                        "seed": seed}))
    return out


def default_init_analyze(finished, fast):
    table = pd.DataFrame(query_rows(finished, fast))
    grid: dict = {}  # steps -> pairs -> seed -> per-query accuracy
    for row in table.itertuples():
        grid.setdefault(str(row.steps), {}).setdefault(str(row.pairs), {})[str(row.seed)] = round(
            float(row.query_accuracy), 4)
    hardest = str(int(table.pairs.max()))
    headline = "attention, default init, per-query accuracy at " + hardest + " pairs (each seed): " + "; ".join(
        f"{steps} steps " + "/".join(f"{v:.0%}" for _, v in common.by_number(by_pairs[hardest].items()))
        for steps, by_pairs in common.by_number(grid.items()))
    return table, {"query_accuracy": grid, "pairs": [int(p) for p in sorted(table.pairs.unique())],
                   "headline": headline}


def decide_at(steps: int):
    def decide(summary: dict) -> Outcome:
        return solves_every_pairs(summary.get("query_accuracy", {}).get(str(steps), {}), summary.get("pairs"))
    decide.__doc__ = f"Per seed, the {steps}-step runs: >= 99% of queries answered at every number of pairs."
    return decide


def default_init_figure(result: ExperimentResult):
    table = result.table
    curves = table.assign(label=table.pairs.map(lambda p: f"{p} pairs"), value=table.query_accuracy)
    fig = length_curve(curves[["label", "steps", "value"]], None, x="steps",
                       x_title="training steps (each its own run)")
    fig.update_xaxes(tickvals=sorted(table.steps.unique()))
    # picking one of the context's L values at random answers 1/L of the queries: the floor to read against
    for i, pairs in enumerate(sorted(table.pairs.unique())):
        fig.add_hline(y=100 / pairs, line=dict(color=color(i), width=1, dash="dot"),
                      annotation_text=f"1/{pairs}: a random value of the context", annotation_font_size=9)
    return fig.update_yaxes(title="accuracy per query (%)")


def _claim(key: str, steps: int, budget: str) -> Claim:
    return Claim(key, f"Attention solves multi-query associative recall (>= {TARGET_ACCURACY:.0%} per query) at width "
                 f"{TARGET_WIDTH} for 2-8 key-value pairs from the default (GPT-2, N(0, 0.02)) initialization, "
                 f"within {steps} training steps ({budget})", ZOOLOGY, "attention ~100% on MQAR at every width",
                 "paper",
                 f"per seed: the {steps}-step run reaches >= {TARGET_ACCURACY:.0%} per-query accuracy at every number "
                 "of pairs tested (mqar-vs-width's rule); then the shared rule over >= 3 seeds", decide_at(steps))


register_experiment(Experiment(
    name="mqar-default-init",
    description=f"mqar-vs-width's attention (2 layers, 4 heads, RoPE, width {TARGET_WIDTH}) on Zoology's MQAR variant "
                "(2-8 key-value pairs, hidden answers, random filler, distinct values, 64 keys and 64 values), "
                "started from the default init (N(0, 0.02)) as Zoology's models are, trained "
                f"{', '.join(map(str, DEFAULT_INIT_STEPS))} steps (batch 64, lr 3e-3; each budget its own run), "
                "seeds 0-2: per-query accuracy at 2, 4 and 8 pairs against the budget.",
    variants=default_init_variants, analyze=default_init_analyze, figure=default_init_figure,
    claims=[_claim("default-init", DEFAULT_INIT_STEPS[0], "mqar-vs-width's budget for every mixer"),
            _claim("default-init-6x", DEFAULT_INIT_STEPS[-1], "6x that budget")]))
