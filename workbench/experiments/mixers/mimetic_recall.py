"""mimetic-recall (seed 000 #2): Mamba with the reference vs the mimetic initialization on copy and
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
MIMETIC_STEPS, MIMETIC_SEEDS = 2000, (0, 1)
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
    reach, final = {}, {}
    for (task, init), part in curves.groupby(["task", "init"]):
        per_seed = [steps_to_reach(seed_rows.set_index("step")["value"], REACH) for _, seed_rows in part.groupby("seed")]
        last = part[part.step == part.step.max()]["value"]
        reach.setdefault(task, {})[init] = common.finite(float(np.median(per_seed)))
        final.setdefault(task, {})[init] = round(float(last.median()), 4)
    summary = {"threshold": REACH, "seeds": len(curves.seed.unique()),
               "median_steps_to_threshold": reach, "median_final_exact_match": final}
    summary.update(_mimetic_verdict(reach, final, int(curves.step.max())))
    return table, summary


def _faster(reach: dict) -> bool:
    mimetic, default = reach.get("mimetic"), reach.get("default")
    return mimetic is not None and (default is None or mimetic < default)


def _mimetic_verdict(reach: dict, final: dict, budget: int) -> dict:
    def say(task):
        r = reach.get(task, {})
        part = ", ".join(f"{init} {'at step ' + str(r[init]) if r.get(init) is not None else 'not within ' + str(budget)}"
                         f" (final {final[task][init]:.0%})" for init in ("default", "mimetic") if init in r)
        return f"{task}: {part}"

    recall_faster = _faster(reach.get("associative_recall", {}))
    verdict = ("mimetic init reaches 90% on associative recall in fewer steps than the default" if recall_faster else
               "at this scale mimetic init does NOT reach 90% on associative recall faster than the default")
    return {"target_met": bool(recall_faster), "mimetic_faster": {task: _faster(r) for task, r in reach.items()},
            "verdict": verdict, "headline": f"{verdict}. 90% reached (median): " + "; ".join(say(t) for t in reach)}


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


register_experiment(Experiment(
    name="mimetic-recall",
    description="2-layer Mamba (d_model 32, d_state 16), reference vs mimetic init, 2000 steps (batch 64, lr "
                "3e-3), on copy (4-8 symbols) and associative recall (2-6 pairs): exact match vs step (2 seeds) "
                "and the last layer's implicit attention at init and after training.",
    claim="Mamba learns to recall more easily when initialized to mimic linear attention",
    source="seed 000 #2 (Trockman et al. 2024, arXiv 2410.11135); RECIPES.md §1a", paper_number=
    "copy char-accuracy ~0.9 (mimetic) vs ~0.06 (baseline) after 5000 steps (figure)",
    target="mimetic reaches 90% exact match on associative recall in fewer steps (median of 2 seeds), or says it does not",
    variants=mimetic_variants, analyze=mimetic_analyze, figure=mimetic_figure))
