"""icl-boolean (Bhattamishra, Patel, Blunsom and Kanade 2023, "Understanding In-Context Learning in
Transformers and LLMs by Learning to Learn Discrete Functions", arXiv 2310.03016): trained on
sequences (x_1, f(x_1), ..., x_k) with a fresh Boolean function f per sequence, a Transformer nearly
matches the optimal learning algorithm on "simple" classes such as conjunctions, fails on sparse
parities, and some attention-free models do about as well as the Transformer. A Transformer, Mamba
and an LSTM are trained on each class and scored, query by query, beside the optimal learner
(elimination for conjunctions, the vote of the consistent parities for parity) and nearest neighbour
on the same fresh sequences.
"""
from __future__ import annotations

import pandas as pd

from ...analysis import load_model
from ...evaluate import eval_generator
from ...icl.boolean import learners
from ...icl.curves import accuracy_rows, learner_accuracy, model_curve
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from ..mixers import common
from ..verdicts import Claim, Outcome, UntestedClaim, by_seeds, not_tested

BITS, EXAMPLES, RELEVANT = 8, 30, 2
FUNCTIONS = ("conjunction", "parity")
TASK = ["task.name=icl_boolean", f"task.bits={BITS}", f"task.min_examples={EXAMPLES}",
        f"task.max_examples={EXAMPLES}", f"task.relevant={RELEVANT}"]
MODELS = {
    "attention": ["model.mixer=attention", "model.pos=learned", "model.n_layers=2", "model.n_heads=4"],
    "mamba": ["model.mixer=mamba", "model.pos=nope", "model.n_layers=2", "model.expand=1"],
    "lstm": ["model.mixer=lstm", "model.pos=nope", "model.n_layers=2"],
}
TRAIN = ["model.d_model=64", "model.init=fan_in", "train.batch_size=64", "train.lr=1e-3", "probes.every=0"]
STEPS = 2000
SEEDS = (0, 1, 2)
EVAL_SEQUENCES = 2048
LATE = EXAMPLES // 2  # accuracy is judged over queries that have seen LATE..EXAMPLES-1 examples
# The bars, fixed before the runs: "nearly matches the optimal algorithm" = within 5 points of its
# accuracy over the late queries; "fails" = at most 60% there, where the optimal vote is near 100%
# and chance is 50%.
NEAR = 0.05
FAILS = 0.60


def variants(fast: bool) -> list[Variant]:
    out = []
    for function in FUNCTIONS:
        for model, overrides in MODELS.items():
            for seed in SEEDS:
                config = common.config(*TASK, f"task.function={function}", *overrides, *TRAIN,
                                       *common.budget(fast, STEPS, evaluations=4), f"train.seed={seed}")
                out.append(Variant(config, {"function": function, "model": model, "seed": seed}))
    return out


def analyze(finished, fast):
    n = 128 if fast else EVAL_SEQUENCES
    rows, batches = [], {}
    for variant, run in finished:
        model, task = load_model(run)
        function = variant.labels["function"]
        if function not in batches:  # one set of fresh sequences per class, shared by models and learners
            batches[function] = (task, task.sample(n, eval_generator(0, EXAMPLES), length=EXAMPLES, train=False))
        accuracy = 1 - model_curve(model, task, batches[function][1])
        rows += accuracy_rows(accuracy, **variant.labels, kind="model")
    for function, (task, batch) in batches.items():
        for name, accuracy in learner_accuracy(task, batch, learners(function, RELEVANT)).items():
            rows += accuracy_rows(accuracy, function=function, model=name, kind="baseline")
    table = pd.DataFrame(rows)
    late = table[table.examples >= LATE]
    means = late.groupby(["function", "model", "kind"], sort=False).accuracy.mean()
    per_seed = {f"{function}/{model}": {str(int(r.seed)): round(float(r.accuracy), 4)
                                        for r in part.groupby("seed").accuracy.mean().reset_index().itertuples()}
                for (function, model), part in late[late.kind == "model"].groupby(["function", "model"], sort=False)}
    optimal = {function: round(float(v), 4) for (function, model, kind), v in means.items()
               if kind == "baseline" and "optimal" in model}
    summary = {"fast": fast, "steps": int(finished[0][0].config.train.steps), "bits": BITS, "examples": EXAMPLES,
               "relevant": RELEVANT, "late_from": LATE, "optimal_late_accuracy": optimal,
               "late_accuracy": per_seed}
    summary["headline"] = (f"accuracy over queries with {LATE}-{EXAMPLES - 1} examples: " + "; ".join(
        f"{key} " + "/".join(f"{v:.0%}" for v in values.values()) for key, values in per_seed.items())
        + " (each seed); optimal " + ", ".join(f"{f} {v:.0%}" for f, v in optimal.items()))
    return table, summary


def late_accuracy_rule(function: str, model: str, holds, bar_text):
    """A claim's decision: per seed, holds(accuracy over the late queries, the optimal learner's there)."""
    def decide(summary: dict) -> Outcome:
        if summary.get("fast"):
            return not_tested("the fast budget trains a few steps, too few to learn anything in context")
        accuracy = summary.get("late_accuracy", {}).get(f"{function}/{model}", {})
        best = summary["optimal_late_accuracy"][function]
        return by_seeds({int(s): holds(v, best) for s, v in accuracy.items()},
                        {int(s): f"{v:.1%} (optimal {best:.1%})" for s, v in accuracy.items()})
    decide.__doc__ = f"Per seed: accuracy over the late queries {bar_text}."
    return decide


def near_optimal(function: str, model: str):
    return late_accuracy_rule(function, model, lambda v, best: v >= best - NEAR,
                              f"within {NEAR:.0%} of the optimal learner's")


def fails(function: str, model: str):
    return late_accuracy_rule(function, model, lambda v, best: v <= FAILS, f"at most {FAILS:.0%} (chance 50%)")


def figure(result: ExperimentResult):
    from ...figures.icl import accuracy_panels
    return accuracy_panels(result.table, mark=LATE)


PAPERS = ("2310.03016",)
SIMPLE = "Transformers can nearly match the optimal learning algorithm for 'simpler' tasks"
ALIKE = "certain attention-free models perform (almost) identically to Transformers on a range of tasks"
SCALE = (f"{BITS} bits instead of the paper's larger inputs, {EXAMPLES} examples, small models (width 64) trained "
         f"{STEPS} steps")
NEAR_RULE = (f"per seed: accuracy over the queries with {LATE}-{EXAMPLES - 1} examples within {NEAR:.0%} of the "
             "optimal learner's (elimination) on the same 2048 fresh sequences; then the shared rule over >= 3 seeds")
FAIL_RULE = (f"per seed: accuracy over the queries with {LATE}-{EXAMPLES - 1} examples <= {FAILS:.0%} (chance 50%; "
             "the vote of the consistent parities is near 100% there); then the shared rule over >= 3 seeds")

register_experiment(Experiment(
    name="icl-boolean",
    description=f"In-context Boolean functions on {BITS} bits, {EXAMPLES} examples per sequence: conjunctions "
                f"(each variable a literal with probability 1/3, 30% of inputs forced positive) and sparse parities "
                f"of {RELEVANT} bits; a 2-layer Transformer (learned positions), 2-layer Mamba and 2-layer LSTM, "
                f"width 64, fan-in init, trained {STEPS} steps (batch 64, lr 1e-3), seeds 0-2; accuracy per query "
                "beside the optimal learner and nearest neighbour on the same sequences.",
    variants=variants, analyze=analyze, figure=figure,
    claims=[
        Claim("attention-conjunctions", "A Transformer learns conjunctions in context about as well as the optimal "
              "learner (elimination)", PAPERS, SIMPLE, SCALE, NEAR_RULE, near_optimal("conjunction", "attention")),
        Claim("mamba-conjunctions", "Mamba, an attention-free model, learns conjunctions in context about as well "
              "as the optimal learner", PAPERS, ALIKE, SCALE + "; the paper's attention-free models include Mamba's "
              "predecessors (Hyena, DSS, RetNet), Mamba is our choice", NEAR_RULE,
              near_optimal("conjunction", "mamba")),
        Claim("lstm-conjunctions", "An LSTM learns conjunctions in context about as well as the optimal learner "
              "(our comparison, reported whatever it shows)", PAPERS, "none: our baseline", SCALE, NEAR_RULE,
              near_optimal("conjunction", "lstm")),
        Claim("attention-parity-fails", f"A Transformer fails to learn sparse parities ({RELEVANT} of {BITS} bits) "
              "in context: its accuracy stays near chance", PAPERS,
              "their performance deteriorates on more 'complex' tasks", SCALE, FAIL_RULE,
              fails("parity", "attention")),
        Claim("mamba-parity-fails", "Mamba fails to learn sparse parities in context (our comparison, reported "
              "whatever it shows)", PAPERS, "none: our baseline", SCALE, FAIL_RULE, fails("parity", "mamba")),
        Claim("lstm-parity-fails", "An LSTM fails to learn sparse parities in context (our comparison, reported "
              "whatever it shows)", PAPERS, "none: our baseline", SCALE, FAIL_RULE, fails("parity", "lstm"))],
    untested=[UntestedClaim("Given a teaching sequence (examples that pin the function down), Transformers learn "
                            "more sample-efficiently, and can switch between two algorithms for one task", PAPERS,
                            "sequences that start with a teaching set, and a comparison of the learned curves"),
              UntestedClaim("Pretrained LLMs compete with nearest neighbours on such prediction tasks", PAPERS,
                            "pretrained language models (out of scope: nothing is downloaded)"),
              UntestedClaim("Transformers' performance also deteriorates on DNFs, CNFs and other harder classes",
                            PAPERS, "runs on those classes (the task has conjunctions, disjunctions and parities)")]))
