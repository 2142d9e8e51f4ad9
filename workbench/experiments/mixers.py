"""Where Transformers beat state-space and recurrent models, and why (seeds 000 #2, 002 #2, #100,
004 #68, #73): the sequence-mixer experiments.

- `mimetic-recall`: Mamba with the reference vs the mimetic initialization on copy and associative
  recall; accuracy vs step and the implicit attention maps at init and after training.
- `mqar-vs-width`: MQAR per-query accuracy vs width and number of key-value pairs for attention,
  Mamba, Based linear attention and H3 (Zoology), beside each model's recurrent state size.
- `copy-vs-length`: copy accuracy vs string length, Transformer vs Mamba at a fixed state size.

Every recipe has a fast mode (a tiny budget, the same code path) for tests and notebooks.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..config import RunConfig
from ..evaluate import eval_generator, token_accuracy
from ..figures.builders import length_curve
from ..figures.mixers import accuracy_vs_width, curves_with_maps
from ..figures.runs import snapshot_patterns
from ..models import build_model
from ..reports import length_table
from ..tasks import build_task
from .base import Experiment, ExperimentResult, Variant, register_experiment

# Mixers need no positional encoding of their own except softmax attention (rotary keeps it
# length-agnostic); Based is the linear attention Zoology compares against.
MIXER_OVERRIDES = {
    "attention": ["model.mixer=attention", "model.pos=rope"],
    "mamba": ["model.mixer=mamba", "model.pos=nope"],
    "linear_attention": ["model.mixer=linear_attention", "model.feature_map=based", "model.pos=nope"],
    "h3": ["model.mixer=h3", "model.pos=nope"],
}
QUIET = ["train.checkpoint_every=0", "train.threads=1", "probes.entropy=false", "probes.sparsity=false"]


def _config(*overrides: str) -> RunConfig:
    return RunConfig.load(None, [*QUIET, *overrides])


def _budget(fast: bool, steps: int, evaluations: int, eval_samples: int = 256) -> list[str]:
    """Steps and evaluation cadence; the fast mode is a few steps on small batches, same code path."""
    if fast:
        return ["train.steps=4", "train.eval_every=2", "train.eval_samples=16", "train.batch_size=8",
                "train.warmup=2"]
    return [f"train.steps={steps}", f"train.eval_every={max(steps // evaluations, 1)}",
            f"train.eval_samples={eval_samples}"]


def _accuracy_over_steps(run) -> pd.Series:
    """step -> in-distribution exact match, as the trainer recorded it every train.eval_every steps."""
    metrics = run.metrics()
    rows = metrics[(metrics.probe == "exact_match") & (metrics.length == -1) & (metrics.layer == -1)]
    return rows.set_index("step")["value"].sort_index()


def steps_to_reach(curve: pd.Series, threshold: float) -> float:
    """The first evaluated step at which the curve reaches threshold; inf if it never does."""
    reached = curve[curve >= threshold]
    return float(reached.index[0]) if len(reached) else math.inf


def state_size(config: RunConfig, length: int) -> int:
    """Numbers all mixers of the model carry after `length` tokens (per sequence)."""
    task = build_task(config.task.name, config.task.params)
    model = build_model(config.model, len(task.vocab))
    return int(sum(block.mixer.state_size(length) for block in model.blocks))


def _finite(value: float) -> int | None:
    return None if math.isinf(value) or math.isnan(value) else int(value)


# --- mimetic-recall (seed 000 #2) ------------------------------------------------------------------
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
    budget = _budget(fast, MIMETIC_STEPS, evaluations=20)
    steps = RunConfig.load(None, budget).train.steps
    out = []
    for task, task_overrides in MIMETIC_TASKS.items():
        for init in ("default", "mimetic"):
            for seed in MIMETIC_SEEDS[:1] if fast else MIMETIC_SEEDS:
                # probes.every = steps: a snapshot of the implicit maps at init and one at the end
                config = _config(*task_overrides, *MIXER_OVERRIDES["mamba"], *MIMETIC_MODEL, *budget,
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
        for step, value in _accuracy_over_steps(run).items():
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
        reach.setdefault(task, {})[init] = _finite(float(np.median(per_seed)))
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


# --- mqar-vs-width (seeds 002 #2, #100, 004 #73; Zoology) ----------------------------------------
# The recipe: seq_len 0 packs the query region tight (L slots for L pairs, 4L tokens); answers are
# hidden as in Zoology and every mixer gets fan-in init and the same budget. Why those two choices:
# the pilots in MQAR_NOTES (with GPT-2's 0.02 init and the answers shown, attention never found
# the induction circuit on this budget).
MQAR_TASK = ["task.name=mqar", "task.seq_len=0", "task.min_pairs=2", "task.max_pairs=8", "task.n_keys=16",
             "task.n_values=16", "task.show_answers=false"]
MQAR_PAIRS = (2, 4, 8)
# Grid cut for a 2-core CPU: widths 32 and 64 (the target width and one below it), one seed; the
# issue's width 128 is left out (a width-128 run takes ~9 minutes here, 2.5x width 64). The
# per-run budget is the same for every mixer.
MQAR_WIDTHS, MQAR_FAST_WIDTHS = (32, 64), (32,)
MQAR_MIXERS = ("attention", "mamba", "linear_attention", "h3")
MQAR_TRAIN = ["model.n_layers=2", "model.n_heads=4", "model.d_state=16", "model.init=fan_in", "train.batch_size=64",
              "train.lr=3e-3", "train.warmup=100", "probes.every=0"]
MQAR_STEPS = 3000
MQAR_EVAL_SAMPLES, MQAR_FAST_EVAL_SAMPLES = 512, 32
TARGET_WIDTH, TARGET_ACCURACY = 64, 0.99


def mqar_variants(fast: bool) -> list[Variant]:
    out = []
    for mixer in MQAR_MIXERS:
        for width in MQAR_FAST_WIDTHS if fast else MQAR_WIDTHS:
            config = _config(*MQAR_TASK, *MIXER_OVERRIDES[mixer], *MQAR_TRAIN, f"model.d_model={width}",
                             f"task.eval_lengths={','.join(map(str, MQAR_PAIRS))}",
                             *_budget(fast, MQAR_STEPS, evaluations=4))
            out.append(Variant(config, {"mixer": mixer, "width": width, "seed": config.train.seed}))
    return out


def mqar_analyze(finished, fast):
    samples = MQAR_FAST_EVAL_SAMPLES if fast else MQAR_EVAL_SAMPLES
    rows = []
    for variant, run in finished:
        config = run.config()
        model, task = run.load_model()
        exact = length_table(run.metrics())
        for pairs in MQAR_PAIRS:
            accuracy = token_accuracy(model, task, samples, eval_generator(config.train.seed, pairs), length=pairs)
            length = task.sequence_length(pairs)
            rows.append({**variant.labels, "pairs": pairs, "query_accuracy": accuracy,
                         "exact_match": float(exact.get(pairs, float("nan"))), "seq_len": length,
                         "state_size": state_size(config, length)})
    table = pd.DataFrame(rows)
    return table, _mqar_summary(table)


def _mqar_summary(table: pd.DataFrame) -> dict:
    medians = table.groupby(["mixer", "width", "pairs"])["query_accuracy"].median()
    grid = {mixer: {str(width): {str(pairs): round(float(medians[mixer, width, pairs]), 4)
                                 for pairs in sorted(table.pairs.unique())}
                    for width in sorted(table[table.mixer == mixer].width.unique())}
            for mixer in table.mixer.unique()}
    summary = {"query_accuracy": grid, "pairs": [int(p) for p in sorted(table.pairs.unique())]}
    attention = table[(table.mixer == "attention") & (table.width == TARGET_WIDTH)]
    if len(attention):
        worst = float(attention.groupby("pairs")["query_accuracy"].median().min())
        summary["attention_worst_at_width_64"] = round(worst, 4)
        summary["target_met"] = bool(worst >= TARGET_ACCURACY)
        summary["verdict"] = (f"attention reaches {TARGET_ACCURACY:.0%} per query at width {TARGET_WIDTH} for every "
                              "number of pairs tested" if summary["target_met"] else
                              f"attention does NOT reach {TARGET_ACCURACY:.0%} per query at width {TARGET_WIDTH} "
                              f"(worst {worst:.1%}) within this CPU budget")
    else:  # the fast mode trains width 32 only
        summary["target_met"] = False
        summary["verdict"] = f"not checked: no attention model of width {TARGET_WIDTH} in this run"
    hardest = int(table.pairs.max())
    shortfalls = []
    for mixer, part in table[table.pairs == hardest].groupby("mixer", sort=False):
        best = part.groupby("width")["query_accuracy"].median()
        shortfalls.append(f"{mixer} {best.max():.0%} (best width {int(best.idxmax())})")
    summary["headline"] = (f"per-query accuracy at {hardest} pairs, best width: " + ", ".join(shortfalls)
                           + (f"; attention at width {TARGET_WIDTH}: worst {summary['attention_worst_at_width_64']:.1%}"
                              f" over {summary['pairs']} pairs" if "attention_worst_at_width_64" in summary else ""))
    return summary


def mqar_figure(result: ExperimentResult):
    return accuracy_vs_width(result.table)


MQAR_NOTES = """
Two details of the recipe decided this result: the weight init and whether the query region shows
the answers. Pilots of attention at width 64 (seed 0, batch 64, lr 3e-3), exact match over all
queries of a sample at 2 / 4 / 8 pairs:

| init | answers in the query region | steps | exact match 2 / 4 / 8 pairs |
|---|---|---|---|
| gpt2 (N(0, 0.02)) | shown | 3000 | 71% / 12% / 0% |
| gpt2 | shown, lr 1e-3 | 8000 | 71% / 15% / 0% |
| gpt2 | shown, 64 keys and values | 3000 | 62% / 6% / 0% |
| gpt2 | hidden (Zoology) | 3000 | 70% / 1% / 0% |
| gpt2 | hidden (Zoology) | 6000 | 99% / 97% / 95% |
| gpt2 | hidden, learned positions instead of RoPE | 6000 | 71% / 1% / 0% |
| fan_in (N(0, 1/fan-in)) | shown | 3000 | 100% / 100% / 100% |
| fan_in | hidden | 3000 | 100% / 100% / 100% |

With answers shown, a late query can narrow its choice to the values not asked yet, and with the
0.02 init the model settles there: its first layer gathers the context's values, its second layer's
attention stays uniform and its output weights shrink (at init the query/key gradients are ~100x
below the value gradients), so the previous-token head that recall needs never forms. Plain
associative recall (2-6 pairs, width 32, 2000 steps) shows the same: 54% exact match at 2 pairs with
the 0.02 init, 100% with fan-in. Hiding the answers, as Zoology does, lets the 0.02 init find the
circuit between 3000 and 6000 steps; fan-in init finds it within the recipe's 3000. The recipe uses both,
for every mixer.
"""

register_experiment(Experiment(
    name="mqar-vs-width",
    description="2-layer models (4 heads for attention, fan-in init) trained 3000 steps (batch 64, lr 3e-3) on "
                "MQAR with 2-8 key-value pairs, a packed query region with hidden answers (4L tokens, 16 keys "
                "and values), width 32/64 "
                "(width 128 cut for CPU time; one seed): per-query accuracy at 2, 4 and 8 pairs for attention "
                "(RoPE), Mamba, Based linear attention and H3, with each model's recurrent state size.",
    claim="Attention solves multi-query associative recall at small width; gated convolutions and SSMs need "
          "width (state) that grows with the number of pairs",
    source="seeds 002 #2 (H3), #100 (Based), 004 #73 (Zoology, Arora et al. 2023)",
    paper_number="Zoology: attention ~100% MQAR at all widths; H3/Hyena fall short at small width",
    target=f"attention >= {TARGET_ACCURACY:.0%} per query at width {TARGET_WIDTH} for every number of pairs tested",
    variants=mqar_variants, analyze=mqar_analyze, figure=mqar_figure, notes=MQAR_NOTES))


# --- copy-vs-length (seed 004 #68) -----------------------------------------------------------------
COPY_TASK = ["task.name=copy", "task.min_length=1", "task.max_length=24", "task.alphabet=8"]
COPY_LENGTHS = (4, 8, 12, 16, 24)
COPY_MODELS = {
    "attention": ["model.d_model=64", "model.n_heads=2"],
    "mamba": ["model.d_model=64", "model.d_state=8"],
}
# fan-in init for both models, as in mqar-vs-width: with GPT-2's 0.02 at width 64 attention copied
# 24 symbols 22% of the time after 1000 steps
COPY_TRAIN = ["model.n_layers=2", "model.init=fan_in", "train.batch_size=64", "train.lr=3e-3", "probes.every=0"]
COPY_STEPS = 1000
COPY_SEEDS = (0,)


def copy_variants(fast: bool) -> list[Variant]:
    out = []
    for mixer, model in COPY_MODELS.items():
        for seed in COPY_SEEDS:
            config = _config(*COPY_TASK, *MIXER_OVERRIDES[mixer], *model, *COPY_TRAIN,
                             f"task.eval_lengths={','.join(map(str, COPY_LENGTHS))}",
                             *_budget(fast, COPY_STEPS, evaluations=4), f"train.seed={seed}")
            out.append(Variant(config, {"mixer": mixer, "seed": seed}))
    return out


def copy_analyze(finished, fast):
    rows = []
    for variant, run in finished:
        config = run.config()
        task = build_task(config.task.name, config.task.params)
        for length, value in length_table(run.metrics()).items():
            rows.append({**variant.labels, "length": int(length), "exact_match": float(value),
                         "state_size": state_size(config, task.sequence_length(int(length)))})
    table = pd.DataFrame(rows)
    medians = table.groupby(["mixer", "length"])["exact_match"].median().unstack("mixer")
    longest = int(medians.index.max())
    attention, mamba = float(medians.loc[longest, "attention"]), float(medians.loc[longest, "mamba"])
    fixed = table[table.mixer == "mamba"].state_size
    summary = {"exact_match": {str(k): {m: round(float(v), 4) for m, v in row.items()} for k, row in medians.iterrows()},
               "mamba_state_size": int(fixed.iloc[0]), "mamba_state_fixed": bool(fixed.nunique() == 1),
               "target_met": bool(attention >= 0.9 and mamba <= attention - 0.2)}
    summary["headline"] = (f"copy of {longest} symbols: attention {attention:.0%} (state grows to "
                           f"{int(table[(table.mixer == 'attention') & (table.length == longest)].state_size.iloc[0]):,}), "
                           f"mamba {mamba:.0%} (state fixed at {summary['mamba_state_size']:,})")
    return table, summary


def copy_figure(result: ExperimentResult):
    table = result.table
    state = table.groupby("mixer")["state_size"].agg(["min", "max"])
    label = {m: f"{m} (state {r['min']:,}" + (f"-{r['max']:,})" if r["max"] != r["min"] else ", fixed)")
             for m, r in state.iterrows()}
    curves = table.assign(label=table.mixer.map(label), value=table.exact_match)[["label", "length", "value"]]
    return length_curve(curves, None)


register_experiment(Experiment(
    name="copy-vs-length",
    description="2-layer Transformer (RoPE) and Mamba (d_state 8), both width 64 with fan-in init, trained to copy strings of "
                "1-24 symbols: exact match per length, beside each model's state size at that length.",
    claim="A model with a fixed-size state cannot copy strings longer than its state can hold; Transformers can",
    source="seed 004 #68 (Jelassi et al. 2024, 'Repeat After Me')",
    paper_number="Transformers copy strings far longer than trained; GSSMs fail once the string outgrows the state",
    target="attention >= 90% at the longest length, Mamba at least 20 points below it there",
    variants=copy_variants, analyze=copy_analyze, figure=copy_figure, notes="""
With GPT-2's 0.02 init (the earlier recipe) attention copied 24 symbols only 22% of the time after
1000 steps and the target was not met; with fan-in init for both models (see mqar-vs-width's notes)
attention reaches 92% there and Mamba, whose state stays at 2,816 numbers, falls to 0% once the
string passes ~12 symbols.
"""))
