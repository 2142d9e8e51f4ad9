"""Every claim's verdict rule, on hand-made summaries: each can return every verdict, decided by the
per-seed states it is given. A seed is 'pass', 'fail' or 'unclear' (the design cannot tell, e.g. a
baseline that never fit); a rule with no 'unclear' state reaches 'inconclusive' through too few seeds."""
from functools import partial

import pytest

from workbench.experiments import EXPERIMENTS, VERDICTS
from workbench.experiments.verdicts import Outcome, by_seeds, no_runs
from workbench.tasks import task_for

# seed states -> the verdict the shared rule must give
CASES = {
    ("pass", "pass", "pass"): "reproduced",
    ("pass", "fail", "pass"): "partly reproduced",
    ("fail", "fail", "fail"): "not reproduced",
    ("pass", "pass"): "inconclusive",
    (): "not tested",
}
UNCLEAR_CASE = (("pass", "unclear", "unclear", "pass"), "inconclusive")


def test_the_shared_rule_returns_every_verdict():
    for states, verdict in [*CASES.items(), UNCLEAR_CASE]:
        passed = {seed: {"pass": True, "fail": False, "unclear": None}[s] for seed, s in enumerate(states)}
        outcome = by_seeds(passed, {seed: "n" for seed in passed})
        assert outcome.verdict == verdict, (states, outcome)
    assert {verdict for verdict in CASES.values()} == set(VERDICTS)


def test_an_outcome_refuses_a_word_outside_the_vocabulary():
    with pytest.raises(ValueError, match="reproduced"):
        Outcome("reproduced at this scale", {}, "")


# --- hand-made summaries, one builder per experiment -------------------------------------------------
def _entropy(states):
    runs = []
    for seed, state in enumerate(states):
        collapse = None if state == "fail" else 100
        runs += [{"model": "baseline", "seed": seed, "collapse_step": collapse, "diverged": False, "final_loss": 1.1},
                 {"model": "sigma_reparam", "seed": seed, "collapse_step": None, "diverged": False, "final_loss": 1.0}]
    return {"runs": runs}


def _lazy(states):
    runs = []
    for seed, state in enumerate(states):
        lasts = {32: 0.4, 128: 0.3, 512: 0.05} if state == "pass" else {32: 0.6, 128: 0.6, 512: 0.6}
        runs += [{"seed": seed, "mlp_width": w, "labels": "true", "first": 0.5, "last": last} for w, last in lasts.items()]
        runs.append({"seed": seed, "mlp_width": 128, "labels": "random", "first": 0.5,
                     "last": 0.3 if state == "pass" else 0.6})
    return {"runs": runs}


def _capacity(states, axis="heads"):
    """Per seed, four points of the swept axis (1-8 heads, or contexts of 4-14 tokens) with brackets that
    grow about linearly ('pass'), shrink ('fail') or stay open because every point memorized every table
    tried ('unclear')."""
    lows = {"pass": (16, 32, 64, 128), "fail": (128, 64, 32, 16), "unclear": (1024, 1024, 1024, 1024)}
    points = (1, 2, 4, 8) if axis == "heads" else (4, 6, 10, 14)
    shapes, fits = [], {}
    for seed, state in enumerate(states):
        for point, low in zip(points, lows[state]):
            high = None if state == "unclear" else round(low * 1.2)
            shapes.append({"seed": seed, axis: point, "n_parameters": 1000 * point ** 2, "low": low, "high": high,
                           "largest_memorized": low, "monotone": True})
        fits[str(seed)] = {f"slope_vs_{axis}": {"pass": 1.0, "fail": -1.0, "unclear": None}[state]}
    return {"shapes": shapes, "fits": fits}


def _outliers(states, claim):
    final = []
    for seed, state in enumerate(states):
        has_outliers = not (state == "unclear" or (claim == "outliers-arise" and state == "fail"))
        fixes_lower = not (claim == "fixes" and state == "fail")
        vanilla = {"kurtosis": 50.0, "max_abs_activation": 40.0,
                   "noop_head_fraction_max_layer": 0.5 if has_outliers else 0.0, "kurtosis_max_layer": 60.0}
        fixed = {"kurtosis": 5.0 if fixes_lower else 80.0, "max_abs_activation": 5.0 if fixes_lower else 90.0,
                 "noop_head_fraction_max_layer": 0.0, "kurtosis_max_layer": 6.0}
        final += [{"attention": "vanilla", "seed": seed, **vanilla},
                  {"attention": "clipped_softmax", "seed": seed, **fixed},
                  {"attention": "gated_attention", "seed": seed, **fixed}]
    return {"final": final}


def _lengthgen(states, experiment, claim):
    """Curves for every encoding the recipe trains: the judged encoding reaches the claim's bar on 'pass',
    baselines fit and fail beyond training on 'pass' and 'fail', and never fit on 'unclear'. For a claim
    that one encoding outdoes others, the others are the baselines and the judged one never fits on
    'unclear'. For lengthgen-multiplication's scratchpad claim, the running-sum arm fits only on 'fail'."""
    train_max = 10 if experiment.name in ("lengthgen-addition", "lengthgen-copy", "lengthgen-reverse",
                                          "lengthgen-sort") else 5
    lengths = sorted({length for v in experiment.variants(False) for length in v.config.task.eval_lengths})
    encodings = sorted({v.labels["pos"] for v in experiment.variants(False)})
    curves = {}
    outdoing = claim.key.startswith("fire-outdoes")
    for pos in encodings:
        for seed, state in enumerate(states):
            # "learned w128": learned positions at another width, the width-128 claims' baseline
            baseline = pos.split()[0] in (("rope", "alibi") if outdoing else ("learned", "nope"))
            if claim.key == "scratchpad-fits" and pos == "coupling, running sums":  # must not fit where `coupling` fits
                fit = beyond = 1.0 if state == "fail" else 0.2
            elif outdoing and pos == "fire":
                fit, beyond = (0.2 if state == "unclear" else 1.0), (0.0 if state == "fail" else 1.0)
            elif baseline:
                fit = 0.2 if state == "unclear" else 1.0
                beyond = 0.5 if (state == "fail" and experiment_judges_baselines(experiment)) else 0.0
            else:
                fit, beyond = 1.0, 0.0 if state == "fail" else 1.0
            curve = {str(n): (fit if n <= train_max else beyond) for n in lengths}
            curves.setdefault(pos, {})[str(seed)] = curve
    return {"train_max": train_max, "exact_match": curves}


def experiment_judges_baselines(experiment) -> bool:
    return any(claim.key == "baselines" for claim in experiment.claims)


def _mimetic(states):
    reach, final = {}, {}
    for task in ("copy", "associative_recall"):
        for seed, state in enumerate(states):
            reach.setdefault(task, {}).setdefault("default", {})[str(seed)] = 800
            reach[task].setdefault("mimetic", {})[str(seed)] = 300 if state == "pass" else None
            final.setdefault(task, {}).setdefault("default", {})[str(seed)] = 1.0
            final[task].setdefault("mimetic", {})[str(seed)] = 1.0 if state == "pass" else 0.5
    return {"budget": 2000, "steps_to_threshold": reach, "final_exact_match": final}


def _mqar(states):
    grid = {}
    for mixer in ("attention", "mamba", "linear_attention", "h3", "hyena"):
        for width in ("32", "64", "128"):
            for pairs in ("2", "4", "8"):
                for seed, state in enumerate(states):
                    value = 1.0 if mixer == "attention" else 0.5
                    if state == "fail":
                        value = 0.5
                    grid.setdefault(mixer, {}).setdefault(width, {}).setdefault(pairs, {})[str(seed)] = value
    return {"query_accuracy": grid, "pairs": [2, 4, 8]}


def _mqar_default_init(states):
    grid = {str(steps): {pairs: {str(seed): 1.0 if state == "pass" else 0.6 for seed, state in enumerate(states)}
                         for pairs in ("2", "4", "8")} for steps in (1000, 3000, 6000)}
    return {"query_accuracy": grid, "pairs": [2, 4, 8]}


def _copy(states):
    attention = {str(seed): 0.95 for seed, _ in enumerate(states)}
    mamba = {str(seed): 0.1 if state == "pass" else 0.9 for seed, state in enumerate(states)}
    runs = {"attention": attention, "mamba": mamba}
    return {"longest": 24, "exact_match_at_longest": runs, "default_init_exact_match_at_longest": runs}


def _copy_state(states, claim):
    """Per seed: d_state 1 and 16 both fit; 'pass' copies every length (the state-limits claim) or copies further
    with the larger state, 'fail' stops at 12 with both."""
    def record(d_state, state):
        if state == "pass" and (claim == "state-limits-copying" or d_state == 16):
            return {"status": "copies every length", "first_failure": None, "copies_up_to": 32}
        return {"status": "does not generalize", "first_failure": 12, "copies_up_to": 8}
    return {"runs": {str(d): {str(seed): record(d, state) for seed, state in enumerate(states)} for d in (1, 16)}}


def _markov(states):
    """Every mixer's excess over Laplace is 2% of the uniform predictor's gap ('pass') or 30% ('fail')."""
    excess = {str(seed): 0.2 * (0.02 if state == "pass" else 0.3) for seed, state in enumerate(states)}
    return {"fast": False, "steps": 2000, "uniform_gap_second_half": 0.2,
            "excess_second_half": {mixer: dict(excess) for mixer in ("mamba", "attention", "lstm")}}


def _markov_conv(states, claim):
    """Each window's excess is 2% of the gap (closes it) or 30%; the short-window claim holds where it stays open."""
    short = claim == "short-window-fails"
    closes = {seed: (state == "pass") != short for seed, state in enumerate(states)}
    excess = {str(seed): 0.2 * (0.02 if closed else 0.3) for seed, closed in closes.items()}
    return {"fast": False, "steps": 2000, "uniform_gap_second_half": 0.2,
            "excess_second_half": {str(window): dict(excess) for window in (1, 2, 3, 4)}}


def _induction(states):
    from workbench.experiments.circuits.induction_heads import MIXERS, STEPS

    def record(state):
        passing = state == "pass"
        return {"final_accuracy": 1.0, "accuracy_jump": 80, "detector_jump": 80 if passing else 200,
                "evaluations_apart": 0 if passing else 6, "final_answer_induction": 1.0, "final_induction": 0.1,
                "intact_accuracy": 1.0, "detected": [[1, 0]], "random": [[1, 1]],
                "ablated_accuracy": 0.0 if passing else 0.9, "random_ablated_accuracy": 1.0}

    runs = {mixer: {str(seed): record(state) for seed, state in enumerate(states)} for mixer in MIXERS}
    return {"steps": STEPS, "every": 20, "chance": 1 / 16, "runs": runs}


def _flattening(states):
    """'pass': the plain models' answer entropy rises 1 nat and the scaled ones' (either scaling) 0.1, and
    scaling buys 40 points at the longest length; 'fail': the other way round, and no gain."""
    def numbers(rise, exact):
        return {"exact_train": 1.0, "exact_longest": exact, "entropy_train": 0.05, "entropy_longest": 0.05 + rise,
                "rise": rise}

    models = {}
    for seed, state in enumerate(states):
        passing = state == "pass"
        for pos in ("nope", "rope"):
            models.setdefault(pos, {})[str(seed)] = numbers(1.0 if passing else 0.1, 0.2)
            for scaling in ("scaled", "ssmax"):
                models.setdefault(f"{pos}-{scaling}", {})[str(seed)] = numbers(0.1 if passing else 1.0,
                                                                               0.6 if passing else 0.2)
    return {"fast": False, "train_filler": 32, "longest": 1024, "models": models}


def _temperature(states):
    """'pass': the plain models' answer entropy rises 1 nat and they keep 10% at the longest length, a
    uniform or aligned factor (either alignment) reaches 50% and the head factors 90%; 'fail': every
    reading stays at 20%, with attention that stays sharp."""
    def numbers(exact, rise):
        return {"exact_train": 1.0, "exact_longest": exact, "entropy_train": 0.05, "entropy_longest": 0.05 + rise,
                "rise": rise, "scale_longest": 1.5}

    models = {}
    for seed, state in enumerate(states):
        passing = state == "pass"
        for name, exact in (("nope", 0.1), ("nope-uniform", 0.5), ("nope-head", 0.9), ("nope-aligned", 0.5),
                            ("t5_bias", 0.1), ("t5_bias-uniform", 0.5), ("t5_bias-aligned", 0.5),
                            ("t5_bias-maxprob", 0.5)):
            models.setdefault(name, {})[str(seed)] = numbers(exact if passing else 0.2, 1.0 if passing else 0.1)
    return {"fast": False, "train_filler": 32, "longest": 1024, "models": models}


def _hybrids(states):
    """Attention 100%, Mamba 10%; 'pass': the hybrid on top reaches 98% and the one below 20%; 'fail':
    both stay at 15%."""
    scores = {}
    for seed, state in enumerate(states):
        passing = state == "pass"
        for task in ("mqar", "copy"):
            for name, value in (("attention", 1.0), ("mamba", 0.1), ("hybrid", 0.98 if passing else 0.15),
                                ("hybrid-below", 0.2 if passing else 0.15)):
                scores.setdefault(task, {}).setdefault(name, {})[str(seed)] = value
    return {"fast": False, "scores": scores, "parameters": {}}


def _streaming_memory(states):
    """'pass': chunked 20 MiB under a 60 MiB bound, reference 3000 MiB over a 2048 MiB floor, same entropy;
    'fail': the chunked path over its bound."""
    return {"fast": False, "at_longest": {str(seed): {
        "chunked_mib": 20.0 if state == "pass" else 90.0, "bound_mib": 60.0, "reference_mib": 3000.0,
        "floor_mib": 2048.0, "entropy_difference": 1e-6} for seed, state in enumerate(states)}}


def _icl_regression(states):
    """Least squares 0.1 at 2d examples; every model 0.15 there ('pass') or 0.5 ('fail')."""
    errors = {str(seed): 0.15 if state == "pass" else 0.5 for seed, state in enumerate(states)}
    return {"fast": False, "least_squares_at_2d": 0.1,
            "error_at_2d": {model: dict(errors) for model in ("attention", "linear_attention", "mamba", "lstm")}}


def _icl_sparse(states):
    """Least squares 0.1 and Lasso 0.02 at d / 2 examples; every model 0.03 there ('pass': below half of
    least squares and within 2x Lasso) or 0.2 ('fail')."""
    errors = {str(seed): 0.03 if state == "pass" else 0.2 for seed, state in enumerate(states)}
    return {"fast": False, "baselines_at_judged": {"least squares": 0.1, "lasso": 0.02},
            "error_at_judged": {"attention": errors},
            "error_ratio_at_2d": {"attention": {str(seed): 0.05 for seed in range(len(states))}}}


def _icl_function_classes(states):
    """Each class's learner at 0.2 at the judged count; the Transformer at 0.22 there ('pass': within 1.25x)
    or 0.4 ('fail')."""
    errors = {str(seed): 0.22 if state == "pass" else 0.4 for seed, state in enumerate(states)}
    learner = {"relu network": "2-layer network (Adam)", "decision tree": "greedy tree (depth 4)"}
    return {"fast": False, "learner": learner,
            "baselines_at_judged": {function: {name: 0.2} for function, name in learner.items()},
            "error_at_judged": {function: dict(errors) for function in learner}}


def _icl_shifts(states):
    """Least squares 0.1 where each shift is judged; the Transformer 0.15 there ('pass') or 0.5."""
    from workbench.icl.shifts import SHIFTS

    errors = {str(seed): 0.15 if state == "pass" else 0.5 for seed, state in enumerate(states)}
    return {"fast": False, "least_squares_at_judged": {shift: 0.1 for shift in SHIFTS},
            "error_at_judged": {shift: dict(errors) for shift in SHIFTS}}


def _icl_boolean(states, claim):
    """The optimal learners at 98% and 100%; a near-optimal claim's model at 97% ('pass') or 80%, a
    fails claim's at 50% ('pass') or 90%."""
    fails = claim.key.endswith("fails")
    value = {"pass": 0.5 if fails else 0.97, "fail": 0.9 if fails else 0.8}
    accuracy = {str(seed): value[state] for seed, state in enumerate(states)}
    return {"fast": False, "optimal_late_accuracy": {"conjunction": 0.98, "parity": 1.0},
            "late_accuracy": {f"{f}/{m}": dict(accuracy) for f in ("conjunction", "parity")
                              for m in ("attention", "mamba", "lstm")}}


def _labelled_lengths(states, experiment, claim):
    """sort-hint, addition-format, multiplication-priming(-relative), multi-level-coupling(-relative, -padded),
    coupling-budget, coupling-head-dim and multiplication-coupling-relative: a gain (or reach) claim's model (or
    every budget) 100% at every length ('pass') or 0% beyond training, a gain's baseline (the label its rule
    names) fitting the training lengths and at 0% beyond (20% inside on 'unclear'); a spread claim's seeds
    alternate 35% and 65% at every length ('pass') or sit at 50% ('fail')."""
    lengths = sorted({n for v in experiment.variants(False) for n in v.config.task.eval_lengths})
    train_max = max(task_for(v.config.task).train_lengths()[1] for v in experiment.variants(False))
    labels = sorted({v.labels["pos"] for v in experiment.variants(False)})
    baseline = getattr(claim.decide, "baseline", None)  # a gains claim names what it is measured against
    spread = claim.key.startswith("seeds-spread")
    curves, passing = {}, 0
    for seed, state in enumerate(states):
        if spread and state == "pass":
            passing += 1
        for label in labels:
            if spread:
                value = (0.35 if passing % 2 else 0.65) if state == "pass" else 0.5
                curve = {str(n): value for n in lengths}
            elif label == baseline:
                curve = {str(n): (0.2 if state == "unclear" else 1.0) if n <= train_max else 0.0 for n in lengths}
            else:
                curve = {str(n): 1.0 if (n <= train_max or state != "fail") else 0.0 for n in lengths}
            curves.setdefault(label, {})[str(seed)] = curve
    return {"train_max": train_max, "exact_match": curves}


def _icl_depth(states, key):
    """'pass': the error saturates later at kappa 100 (4) than at 1 (2); the looped curve falls, the stacked
    one has a bump. 'fail': the same depth at both kappas; the looped curve has a bump, the stacked falls."""
    falling, bump = {1: 0.5, 2: 0.3, 3: 0.2}, {1: 0.5, 2: 0.3, 3: 0.6}
    needed, errors = {}, {}
    for seed, state in enumerate(states):
        passing = state == "pass"
        for model in ("looped", "stacked"):
            needed.setdefault(model, {}).setdefault("1", {})[str(seed)] = 2.0 if passing else 4.0
            needed[model].setdefault("100", {})[str(seed)] = 4.0
        for kappa in ("1", "100"):
            errors.setdefault("looped", {}).setdefault(kappa, {})[str(seed)] = falling if passing else bump
            errors.setdefault("stacked-truncated", {}).setdefault(kappa, {})[str(seed)] = bump if passing else falling
    return {"fast": False, "needed": needed, "errors": errors}


def _icl_pgd(states):
    """'pass': cosine 0.95 and the model within 1.1x of preconditioned GD; 'fail': 0.5 and 3x."""
    return {"fast": False, "seeds": {str(seed): {
        "cosine": 0.95 if state == "pass" else 0.5,
        "ratio_to_pgd": {str(loops): 1.1 if state == "pass" else 3.0 for loops in range(1, 9)}}
        for seed, state in enumerate(states)}}


def _icl_looped(states):
    """Least squares 0.1, the stacked model 0.15 (within 2x; 0.5 on 'unclear', above it); the looped model
    0.16 at 2d examples and flat past its 12 trained loops ('pass') or 0.3 and climbing ('fail'); 8% of
    the stacked model's parameters."""
    looped, stacked, by_loops = {}, {}, {}
    for seed, state in enumerate(states):
        looped[str(seed)] = 0.16 if state != "fail" else 0.3
        stacked[str(seed)] = 0.5 if state == "unclear" else 0.15
        by_loops[str(seed)] = {str(k): 0.16 if state != "fail" or k <= 12 else 0.16 + 0.01 * k for k in range(1, 25)}
    return {"fast": False, "least_squares_at_2d": 0.1, "loops_trained": 12, "parameter_share": 0.08,
            "error_at_2d": {"looped": looped, "looped-plain": looped, "stacked": stacked},
            "error_by_loops": {"looped": by_loops, "looped-plain": by_loops}}


def summary_for(experiment, claim, states) -> dict:
    name = experiment.name
    if name == "icl-depth-and-looping":
        return _icl_depth(states, claim.key)
    if name == "icl-preconditioned-gd":
        return _icl_pgd(states)
    if name.startswith("lengthgen-"):
        return _lengthgen(states, experiment, claim)
    if name in ("sort-hint", "addition-format", "multiplication-priming", "multi-level-coupling",
                "multi-level-coupling-relative", "coupling-budget", "multiplication-coupling-relative",
                "multiplication-priming-relative", "multi-level-coupling-padded", "coupling-head-dim"):
        return _labelled_lengths(states, experiment, claim)
    if name == "icl-boolean":
        return _icl_boolean(states, claim)
    if name == "markov-conv-window":
        return _markov_conv(states, claim.key)
    if name == "copy-state-size":
        return _copy_state(states, claim.key)
    if name in ("outliers", "outliers-mlm"):
        return _outliers(states, claim.key)
    return {"entropy-collapse": _entropy, "lazy-neurons": _lazy, "memorization-capacity": _capacity,
            "memorization-capacity-fixed-d": _capacity, "memorization-context": partial(_capacity, axis="context"),
            "mimetic-recall": _mimetic, "mqar-vs-width": _mqar, "copy-vs-length": _copy,
            "mqar-default-init": _mqar_default_init,
            "induction-heads": _induction, "markov-icl": _markov, "attention-flattening": _flattening,
            "attention-temperature": _temperature,
            "hybrids": _hybrids, "streaming-entropy-memory": _streaming_memory,
            "icl-regression": _icl_regression, "icl-sparse-regression": _icl_sparse,
            "icl-function-classes": _icl_function_classes, "icl-regression-shifts": _icl_shifts,
            "icl-looped-vs-stacked": _icl_looped, "icl-looped-plain": _icl_looped}[name](states)


def _claims():
    for experiment in EXPERIMENTS.values():
        for claim in experiment.claims:
            if not getattr(claim.decide, "no_runs", False):
                yield pytest.param(experiment, claim, id=f"{experiment.name}:{claim.key}")


@pytest.mark.parametrize("experiment,claim", list(_claims()))
def test_every_rule_can_return_every_verdict(experiment, claim):
    seen = {}
    for states, verdict in CASES.items():
        outcome = claim.decide(summary_for(experiment, claim, states))
        seen[states] = outcome.verdict
        assert outcome.verdict == verdict, (states, outcome)
        assert len(outcome.per_seed) == len(states), "every seed's numbers are shown"
    assert set(seen.values()) == set(VERDICTS)


def test_claims_the_recipe_trains_no_runs_for_say_not_tested_and_why():
    placeholders = [c.decide for e in EXPERIMENTS.values() for c in e.claims if getattr(c.decide, "no_runs", False)]
    for decide in [*placeholders, no_runs("the recipe trains our variant only")]:
        outcome = decide({})
        assert outcome.verdict == "not tested" and outcome.reason
