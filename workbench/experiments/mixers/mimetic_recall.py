"""mimetic-recall (Trockman et al. 2024, arXiv 2410.11135): Mamba with the reference vs the mimetic initialization on copy and
associative recall; accuracy vs step and the implicit attention maps at init and after training.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...config import RunConfig
from ...figures.mixers import curves_with_maps
from ...figures.runs import snapshot_patterns
from ...reports import model_series
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from ..verdicts import Claim, Outcome, by_seeds
from . import common
from .common import MIXER_OVERRIDES, steps_to_reach

MIMETIC_TASKS = {
    "copy": ["task.name=copy", "task.min_length=4", "task.max_length=8", "task.alphabet=8"],
    "associative_recall": ["task.name=associative_recall", "task.min_pairs=2", "task.max_pairs=6",
                           "task.n_keys=8", "task.n_values=8"],
}
MIMETIC_MODEL = ["model.n_layers=2", "model.d_model=32", "model.d_state=16", "train.batch_size=64",
                 "train.lr=3e-3", "train.warmup=50"]
# Budget from pilots: at 800 steps the reference init was at ~58% on associative recall, at 2000
# steps both inits have room to reach 90%; an evaluation every 100 steps resolves the crossing.
MIMETIC_STEPS, MIMETIC_SEEDS = 2000, (0, 1, 2)
REACH = 0.9


def mimetic_variants(fast: bool) -> list[Variant]:
    budget = common.budget(fast, MIMETIC_STEPS, evaluations=20)
    steps = RunConfig.load(None, budget).train.steps
    out = []
    for task, task_overrides in MIMETIC_TASKS.items():
        for init in ("default", "mimetic"):
            for seed in MIMETIC_SEEDS[:1] if fast else MIMETIC_SEEDS:
                # probes.every = steps: a snapshot of the implicit maps at init and one at the end
                config = common.config(*task_overrides, *MIXER_OVERRIDES["mamba"], *MIMETIC_MODEL, *budget,
                                 f"model.ssm_init={init}", f"train.seed={seed}", f"probes.every={steps}")
                out.append(Variant(config, {"task": task, "init": init, "seed": seed}))
    return out


def _map_rows(labels: dict, run) -> list[dict]:
    """The last layer's implicit attention (channel mean of |alpha|) of probe example 0, at the
    first and the last snapshot, as tidy rows."""
    rows = []
    steps = run.snapshot_steps()
    for step in (steps[0], steps[-1]) if steps else ():
        patterns, _, _ = snapshot_patterns(run, step)
        pattern = patterns[max(patterns)][0]
        for (query, key), value in np.ndenumerate(pattern):
            rows.append({**labels, "metric": "implicit_attention", "step": step, "query": query, "key": key,
                         "value": float(value)})
    return rows


def mimetic_analyze(finished, fast):
    rows = []
    for variant, run in finished:
        for step, value in model_series(run.metrics(), "exact_match").items():
            rows.append({**variant.labels, "metric": "exact_match", "step": int(step), "query": -1, "key": -1,
                         "value": float(value)})
        if variant.labels["seed"] == MIMETIC_SEEDS[0]:
            rows += _map_rows(variant.labels, run)
    table = pd.DataFrame(rows)
    curves = table[table.metric == "exact_match"]
    reach, final = {}, {}  # task -> init -> seed -> first step at >= REACH (None: never) / final exact match
    for (task, init, seed), part in curves.groupby(["task", "init", "seed"]):
        curve = part.set_index("step")["value"].sort_index()
        reach.setdefault(task, {}).setdefault(init, {})[str(seed)] = common.finite(steps_to_reach(curve, REACH))
        final.setdefault(task, {}).setdefault(init, {})[str(seed)] = round(float(curve.iloc[-1]), 4)
    budget = int(curves.step.max())
    summary = {"threshold": REACH, "budget": budget, "steps_to_threshold": reach, "final_exact_match": final,
               "headline": "; ".join(f"{task}: " + ", ".join(
                   f"{init} " + "/".join(_reach_text(reach[task][init][s], budget) for s in sorted(reach[task][init]))
                   for init in ("default", "mimetic") if init in reach[task]) for task in reach)
               + f" (steps to {REACH:.0%} exact match, each seed)"}
    return table, summary


def _reach_text(step, budget: int) -> str:
    return f"step {step}" if step is not None else f"not by {budget}"


def _decide_faster(task: str):
    def decide(summary: dict) -> Outcome:
        """Per seed: the mimetic run reaches 90% at an earlier evaluation than the default one (a run that never
        reaches it counts as later than any that does; neither reaching it is a failure)."""
        reach = summary.get("steps_to_threshold", {}).get(task, {})
        final = summary.get("final_exact_match", {}).get(task, {})
        seeds = sorted(set(reach.get("default", {})) & set(reach.get("mimetic", {})), key=int)
        passed, numbers = {}, {}
        for seed in seeds:
            default, mimetic = reach["default"][seed], reach["mimetic"][seed]
            passed[int(seed)] = mimetic is not None and (default is None or mimetic < default)
            numbers[int(seed)] = (f"default {_reach_text(default, summary['budget'])} (final "
                                  f"{final['default'][seed]:.0%}), mimetic {_reach_text(mimetic, summary['budget'])} "
                                  f"(final {final['mimetic'][seed]:.0%})")
        return by_seeds(passed, numbers)

    return decide


def mimetic_figure(result: ExperimentResult):
    table = result.table
    curves = table[(table.metric == "exact_match")].assign(label=lambda t: t.task.str.replace("_", " ") + ", " + t.init)
    maps = {}
    recall = table[(table.metric == "implicit_attention") & (table.task == "associative_recall")]
    for (init, step), part in recall.groupby(["init", "step"], sort=True):
        size = int(part["query"].max()) + 1
        pattern = np.zeros((size, size))
        pattern[part["query"].to_numpy(), part["key"].to_numpy()] = part["value"].to_numpy()
        maps[f"{init}, step {step}"] = pattern
    return curves_with_maps(curves[["label", "seed", "step", "value"]], maps)


TROCKMAN_2024 = ("2410.11135",)
FASTER_RULE = (f"per seed: the mimetic run reaches {REACH:.0%} exact match at an earlier evaluation (every 100 steps) "
               "than the default run; a run that never reaches it counts as later than one that does, and neither "
               "reaching it fails; then the shared rule over >= 3 seeds")

register_experiment(Experiment(
    name="mimetic-recall",
    description="2-layer Mamba (d_model 32, d_state 16), reference vs mimetic init, 2000 steps (batch 64, lr "
                "3e-3), on copy (4-8 symbols) and associative recall (2-6 pairs), seeds 0-2: exact match vs step "
                "and the last layer's implicit attention at init and after training.",
    variants=mimetic_variants, analyze=mimetic_analyze, figure=mimetic_figure,
    claims=[
        Claim("recall", "Mimetic initialization lets Mamba learn associative recall in fewer steps than its default "
              "initialization", TROCKMAN_2024, "recall becomes much easier to learn (qualitative)", "paper",
              FASTER_RULE, _decide_faster("associative_recall")),
        Claim("copy", "Mimetic initialization lets Mamba learn to copy in fewer steps than its default "
              "initialization", TROCKMAN_2024, "copy char-accuracy ~0.9 (mimetic) vs ~0.06 (default) after "
              "5000 steps (figure)", "paper", FASTER_RULE, _decide_faster("copy")),
    ]))
