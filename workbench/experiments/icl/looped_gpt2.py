"""icl-looped-vs-stacked (Yang, Lee, Nowak and Papailiopoulos 2023, "Looped Transformers are Better at
Learning Learning Algorithms", arXiv 2311.12424): one GPT-2 block applied b times, re-reading its input
at every loop and trained on the mean loss of its last T loops (the loops before them without
gradient), fits in-context linear regression as well as a 12-layer GPT-2 with under 10% of its
parameters, and run for more loops than it was trained with it stays at the solution it settled on.

Both models are icl-regression's (softmax attention with MLPs, learned positions, width 64, 4 heads,
fan-in init) on its task (d = 5, label noise std 0.5, 11 examples), scored on the same fresh sequences
beside least squares. The looped model is trained at b = 12 loops with a window of T = 6 (the paper:
b = 30, T = 15 at d = 20, ratio 2 as here), its loops grown from T to b in the first quarter of training
(the paper's loop curriculum), and read at 1 to 2b loops.

icl-looped-plain is our variant: the same block trained plainly (on its final read-out, at b loops from
the start, without re-reading its input) against the same stacked runs, judged by the same two rules.
"""
from __future__ import annotations

import pandas as pd

from ...analysis import load_model
from ...evaluate import eval_generator
from ...icl.curves import readout_curves
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from ..verdicts import Claim, Outcome, UntestedClaim, by_seeds, not_tested
from .looping import depth
from .regression import DIM, EXAMPLES, JUDGED_AT, NOISE, TASK, curves_table, model_errors, seeded_variants

LAYERS, WINDOW = 12, 6  # the paper's GPT-2 depth; its window is half its loops (T = 15 of b = 30)
# 32 learned positions hold the 22 tokens: the default 1024 rows would be a quarter of the looped model
GPT2 = ["model.mixer=attention", "model.pos=learned", "model.max_positions=32", "model.n_heads=4",
        f"model.n_layers={LAYERS}"]
CURRICULUM = 250  # steps per added loop, from T to b (the paper: 2 loops every 500 steps, from T to b)
LOOPED = [*GPT2, "model.looped=true", "model.loop_injection=true", f"model.loop_loss_window={WINDOW}",
          f"model.loop_curriculum={CURRICULUM}"]
# icl-looped-plain's block: looped b times and trained on its final read-out at b loops from the start, without
# re-reading its input (as icl-depth-and-looping loops); it learns as fast as the stacked model (pilot).
PLAIN = [*GPT2, "model.looped=true"]
# The stacked model's loss is flat from about step 2000 (pilot); the looped one, trained through a window
# of loops, learns slower (pilot, seed 0, 3000 steps: 0.46 at 2d examples against the stacked 0.15, its
# loss still falling), so it gets twice the steps to settle, as both models settle in the paper's 500k.
STEPS = {"stacked": 3000, "looped": 6000, "looped-plain": 3000}
TEST_LOOPS = tuple(range(1, 2 * LAYERS + 1))  # read from one pass at 2b loops
EVAL_SEQUENCES = 4096
# The bars, fixed before the runs. "As well as": the looped model's squared error / d at 2d examples is
# at most COMPARABLE times the stacked model's of the same seed. A seed tells only where the stacked model
# has learned the task, within icl-regression's bar of 2x least squares. "Stays": at every loop count
# from b to 2b the looped model's error is at most STAYS times its error at b (evaluation noise is ~2%).
COMPARABLE, FITS_LEAST_SQUARES, STAYS = 1.25, 2.0, 1.1
PARAMETER_SHARE = 0.10  # "less than 10% of the parameter count"


def against_stacked(name: str, overrides: list[str]):
    """The variants of a recipe: the stacked model's runs (the same runs in both recipes) and the looped one's."""
    def variants(fast: bool) -> list[Variant]:
        return [variant for model, settings in (("stacked", GPT2), (name, overrides))
                for variant in seeded_variants(TASK, {model: settings}, STEPS[model], fast)]
    return variants


def loops_rows(finished, fast: bool) -> list[dict]:
    """Each looped run's error at 2d examples read after every loop up to the last of TEST_LOOPS, all
    from one forward pass at that many loops (a loop's read-out is what the model run at that many
    loops returns)."""
    rows, batch = [], None
    for variant, run in finished:
        if not variant.config.model.looped:
            continue
        model, task = load_model(run)
        if batch is None:
            batch = task.sample(128 if fast else EVAL_SEQUENCES, eval_generator(0, EXAMPLES), length=EXAMPLES,
                                train=False)
        with depth(model, loops=max(TEST_LOOPS)):
            curves = readout_curves(model, task, batch, last=max(TEST_LOOPS))
        rows += [{"model": variant.labels["model"], "kind": "loops", "seed": variant.labels["seed"], "loops": loops,
                  "examples": JUDGED_AT, "error": float(curves[loops - 1, JUDGED_AT])} for loops in TEST_LOOPS]
    return rows


def parameter_counts(finished) -> dict[str, int]:
    """Each model's parameters, as its training recorded them (no model is loaded for this)."""
    return {variant.labels["model"]: int(run.status()["n_parameters"]) for variant, run in finished}


def analyze(finished, fast):
    curves = curves_table(finished, fast, EXAMPLES, ["least squares"])
    table = pd.concat([curves, pd.DataFrame(loops_rows(finished, fast))], ignore_index=True)
    at = curves[curves.examples == JUDGED_AT]
    least_squares = float(at[at.model == "least squares"].error.iloc[0])
    sweep = table[table.kind == "loops"]
    by_loops = {name: {str(int(seed)): {str(int(r.loops)): round(float(r.error), 5) for r in part.itertuples()}
                       for seed, part in rows.groupby("seed")}
                for name, rows in sweep.groupby("model", sort=False)}
    parameters = parameter_counts(finished)
    looped = next(name for name in parameters if name != "stacked")
    share = round(parameters[looped] / parameters["stacked"], 4)
    errors = model_errors(at)
    steps = {variant.labels["model"]: int(variant.config.train.steps) for variant, _ in finished}
    trained = next(variant.config.model for variant, _ in finished if variant.labels["model"] == looped)
    summary = {"fast": fast, "steps": steps, "dim": DIM, "noise": NOISE, "judged_at": JUDGED_AT,
               "loops_trained": LAYERS, "window": trained.loop_loss_window, "curriculum": trained.loop_curriculum,
               "least_squares_at_2d": round(least_squares, 5), "error_at_2d": errors, "error_by_loops": by_loops,
               "parameters": parameters, "parameter_share": share}
    summary["headline"] = (f"squared error / d at {JUDGED_AT} examples (least squares {least_squares:.3f}): "
                           + "; ".join(f"{model} " + "/".join(f"{v:.3f}" for v in values.values())
                                       for model, values in errors.items())
                           + f" (each seed); a looped model has {share:.1%} of the stacked one's parameters")
    return table, summary


def matches_stacked(model: str):
    def decide(summary: dict) -> Outcome:
        """Per seed whose stacked model is within 2x least squares at 2d examples: the looped model's error
        there is at most 1.25x the stacked one's, with under 10% of its parameters; a fast run tests
        nothing."""
        if summary.get("fast"):
            return not_tested("the fast budget trains a few steps, too few to learn anything in context")
        share = summary["parameter_share"]
        if share >= PARAMETER_SHARE:
            return not_tested(f"the looped model has {share:.0%} of the stacked one's parameters")
        looped, stacked = summary["error_at_2d"].get(model, {}), summary["error_at_2d"].get("stacked", {})
        fits = FITS_LEAST_SQUARES * summary["least_squares_at_2d"]
        return by_seeds({int(s): looped[s] <= COMPARABLE * stacked[s] if stacked[s] <= fits else None
                         for s in looped},
                        {int(s): f"looped {looped[s]:.3f}, stacked {stacked[s]:.3f} "
                                 f"({looped[s] / stacked[s]:.2f}x)" for s in looped},
                        undecided=f"the stacked model is above {FITS_LEAST_SQUARES:g}x least squares")
    return decide


def stays_beyond_training_loops(model: str):
    def decide(summary: dict) -> Outcome:
        """Per seed: the looped model's error at 2d examples at every loop count from b to 2b is at most
        1.1x its error at b; a fast run tests nothing."""
        if summary.get("fast"):
            return not_tested("the fast budget trains a few steps, too few to learn anything in context")
        b, outcomes, numbers = summary["loops_trained"], {}, {}
        for seed, errors in summary["error_by_loops"].get(model, {}).items():
            at_b, beyond = errors[str(b)], [errors[str(k)] for k in range(b, 2 * b + 1)]
            outcomes[int(seed)] = max(beyond) <= STAYS * at_b
            numbers[int(seed)] = f"{at_b:.3f} at {b} loops, at most {max(beyond):.3f} up to {2 * b}"
        return by_seeds(outcomes, numbers)
    return decide


def figure(result: ExperimentResult):
    from ...figures.icl import looped_panels
    return looped_panels(result.table, mark=JUDGED_AT, trained=LAYERS)


def _claims(model: str, what: str, method: str, ours: bool) -> list[Claim]:
    """The two claims of a recipe, for its looped model."""
    if not ours:
        return [
            Claim("looped-matches-stacked", "A looped Transformer (one GPT-2 block applied b times, re-reading its "
                  "input, trained on its last T loops) fits in-context linear regression as well as a 12-layer "
                  "Transformer with under 10% of its parameters", PAPERS, MATCH_QUOTE, method,
                  MATCH_RULE.format(what=what), matches_stacked(model)),
            Claim("stays-beyond-b", "Run for more loops than it was trained with, the looped model stays at the "
                  "solution it settled on", PAPERS, STAY_QUOTE, method, STAY_RULE.format(what=what),
                  stays_beyond_training_loops(model))]
    return [
        Claim("plain-matches-stacked", "One GPT-2 block looped b times and trained plainly (on its final read-out, "
              "without re-reading its input) fits in-context linear regression as well as a 12-layer Transformer "
              "with under 10% of its parameters (our variant)", PAPERS, "none: our variant", method,
              MATCH_RULE.format(what=what), matches_stacked(model)),
        Claim("plain-stays-beyond-b", "The plainly looped block stays at its solution when run for more loops than "
              "it was trained with (our variant; the paper trains through a window of loops for this)", PAPERS,
              "none: our variant", method, STAY_RULE.format(what=what), stays_beyond_training_loops(model))]


PAPERS = ("2311.12424",)
SCALE = (f"GPT-2 blocks of width 64 (4 heads) instead of 256 (8 heads); b = {LAYERS}, T = {WINDOW} instead of "
         f"b = 30, T = 15; loops grown from T to b by one every {CURRICULUM} steps (the paper: two every 500); "
         f"d = {DIM} instead of 20, label noise std {NOISE}, no curriculum over d or the examples; {STEPS['stacked']} "
         f"steps (the looped model {STEPS['looped']}) instead of 500k")
PLAIN_METHOD = (f"the block trained on its final read-out at b = {LAYERS} loops from the start, without re-reading "
                f"its input; {STEPS['looped-plain']} steps, as the stacked model's")
MATCH_RULE = (f"per seed whose stacked model is within {FITS_LEAST_SQUARES:g}x least squares at 2d = {JUDGED_AT} "
              f"examples: the {{what}} squared error / d there <= {COMPARABLE:g}x the stacked one's, on the same "
              f"4096 fresh sequences, with under {PARAMETER_SHARE:.0%} of its parameters; then the shared rule over "
              ">= 3 seeds")
STAY_RULE = (f"per seed: the {{what}} squared error / d at {JUDGED_AT} examples, read at every loop count from "
             f"b = {LAYERS} to 2b = {2 * LAYERS}, is <= {STAYS:g}x its error at b (4096 fresh sequences); then the "
             "shared rule over >= 3 seeds")
MATCH_QUOTE = ("performance comparable to the standard transformer ... while utilizing less than 10% of the "
               "parameter count")
STAY_QUOTE = "the looped transformer ... reaches a stable fixed-point solution beyond the trained loop iterations"

register_experiment(Experiment(
    name="icl-looped-vs-stacked",
    description=f"In-context linear regression, d = {DIM}, {EXAMPLES} examples per sequence, label noise std {NOISE}: "
                f"a {LAYERS}-layer GPT-2 (softmax attention and MLPs, learned positions, width 64, 4 heads, fan-in "
                f"init; {STEPS['stacked']} steps) against one such block looped {LAYERS} times as Yang et al. train "
                f"it (the input re-read at every loop, the loss averaged over the last {WINDOW} loops, loops grown "
                f"from {WINDOW}; {STEPS['looped']} steps), batch 64, lr 1e-3, seeds 0-2; squared error / d against "
                f"the in-context examples beside least squares, and the looped model's error at {JUDGED_AT} examples "
                f"read at 1-{2 * LAYERS} loops.",
    variants=against_stacked("looped", LOOPED), analyze=analyze, figure=figure,
    claims=_claims("looped", "looped model's", SCALE, ours=False),
    untested=[UntestedClaim("Looped transformers match standard ones on sparse linear regression, decision trees "
                            "and 2-layer ReLU networks too", PAPERS,
                            "looped runs on icl-function-classes' tasks (icl_decision_tree, icl_relu_network) and on "
                            "sparse regression")]))

register_experiment(Experiment(
    name="icl-looped-plain",
    description=f"icl-looped-vs-stacked's task and 12-layer GPT-2 ({STEPS['stacked']} steps; the same runs) against "
                f"one such block looped {LAYERS} times and trained plainly: on its final read-out, at {LAYERS} loops "
                f"from the start, without re-reading its input ({STEPS['looped-plain']} steps), seeds 0-2; squared "
                f"error / d against the in-context examples beside least squares, and the looped block's error at "
                f"{JUDGED_AT} examples read at 1-{2 * LAYERS} loops.",
    variants=against_stacked("looped-plain", PLAIN), analyze=analyze, figure=figure,
    claims=_claims("looped-plain", "plainly looped model's", PLAIN_METHOD, ours=True)))
