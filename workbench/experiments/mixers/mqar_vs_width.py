"""mqar-vs-width (seeds 002 #2, #100, 004 #73; Zoology): MQAR per-query accuracy vs width and number of
key-value pairs for attention, Mamba, Based linear attention and H3, beside each model's state size.
"""
from __future__ import annotations

import pandas as pd

from ...evaluate import eval_generator, token_accuracy
from ...figures.mixers import accuracy_vs_width
from ...reports import length_table
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from . import common
from .common import MIXER_OVERRIDES, state_size

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
            config = common.config(*MQAR_TASK, *MIXER_OVERRIDES[mixer], *MQAR_TRAIN, f"model.d_model={width}",
                             f"task.eval_lengths={','.join(map(str, MQAR_PAIRS))}",
                             *common.budget(fast, MQAR_STEPS, evaluations=4))
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
