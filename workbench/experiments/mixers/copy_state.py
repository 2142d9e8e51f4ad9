"""copy-state-size (Jelassi et al. 2024, arXiv 2402.01032): is Mamba's state what stops it copying?

Mamba with state sizes 1 to 16 is trained to copy strings of 1-8 symbols and tested to 4x that length.
Each run is sorted by where it first fails, which separates the three ways copying can stop:
- cannot learn: it misses its own training lengths;
- cannot hold: it first fails on a string whose information (length x log2 alphabet bits) exceeds the
  numbers its state carries (one bit a number, the reading most generous to the bound);
- does not generalize: it first fails on a string its state could hold;
or it copies every tested length.
"""
from __future__ import annotations

import math

import pandas as pd

from ...figures.builders import length_curve, mark_train_length
from ...reports import recipe_length_table
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from ..verdicts import Claim, Outcome, UntestedClaim, by_seeds
from . import common
from .common import MIXER_OVERRIDES, state_size
from .mimetic_recall import MIMETIC_MODEL

TRAIN_MAX, ALPHABET = 8, 8
STATE_TASK = ["task.name=copy", "task.min_length=1", f"task.max_length={TRAIN_MAX}", f"task.alphabet={ALPHABET}"]
STATE_LENGTHS = (4, 8, 12, 16, 24, 32)  # to 4x the longest trained string
D_STATES = (1, 2, 4, 8, 16)
# mimetic init: with the default init Mamba misses even the training lengths of copying at this budget
# (mimetic-recall), and a run that cannot learn says nothing about what its state holds
STATE_MODEL = [*MIXER_OVERRIDES["mamba"], *MIMETIC_MODEL, "model.ssm_init=mimetic"]
STATE_STEPS, STATE_SEEDS = 2000, (0, 1, 2)
FIT, COPIES = 0.95, 0.9  # fits its training lengths; copies a length
CANNOT_LEARN, CANNOT_HOLD, NO_GENERALIZATION, COPIES_ALL = (
    "cannot learn", "cannot hold", "does not generalize", "copies every length")


def state_variants(fast: bool) -> list[Variant]:
    out = []
    for d_state in D_STATES:
        for seed in STATE_SEEDS[:1] if fast else STATE_SEEDS:
            config = common.config(*STATE_TASK, *STATE_MODEL, f"model.d_state={d_state}",
                                   f"task.eval_lengths={','.join(map(str, STATE_LENGTHS))}",
                                   *common.budget(fast, STATE_STEPS, evaluations=4), f"train.seed={seed}")
            out.append(Variant(config, {"d_state": d_state, "seed": seed}))
    return out


def classify(curve: dict[int, float], state_numbers: int, bits_per_symbol: float) -> dict:
    """Where one run's copying stops. curve: exact match per tested length."""
    lengths = sorted(curve)
    failing = [n for n in lengths if curve[n] < (FIT if n <= TRAIN_MAX else COPIES)]
    first = failing[0] if failing else None
    copies_up_to = max([n for n in lengths if first is None or n < first], default=0)
    if first is not None and first <= TRAIN_MAX:
        status = CANNOT_LEARN
    elif first is None:
        status = COPIES_ALL
    else:
        status = CANNOT_HOLD if first * bits_per_symbol > state_numbers else NO_GENERALIZATION
    return {"status": status, "first_failure": first, "copies_up_to": copies_up_to,
            "at_first_failure": None if first is None else round(curve[first], 4)}


def state_analyze(finished, fast):
    bits = math.log2(ALPHABET)
    rows, runs, numbers = [], {}, {}
    for variant, run in finished:
        d_state, seed = variant.labels["d_state"], variant.labels["seed"]
        curve = {int(n): float(v) for n, v in recipe_length_table(run).items()}
        numbers[str(d_state)] = state_size(run.config(), max(curve))
        runs.setdefault(str(d_state), {})[str(seed)] = classify(curve, numbers[str(d_state)], bits)
        rows += [{**variant.labels, "length": n, "exact_match": v, "string_bits": n * bits,
                  "state_size": numbers[str(d_state)]} for n, v in curve.items()]
    summary = {"fast": fast, "train_max": TRAIN_MAX, "bits_per_symbol": bits, "state_size": numbers, "runs": runs}
    summary["headline"] = "; ".join(
        f"d_state {d} ({numbers[d]:,} numbers): " + "/".join(_short(r) for _, r in sorted(by_seed.items()))
        for d, by_seed in runs.items()) + f" (each seed; strings of at most {max(STATE_LENGTHS) * bits:g} bits)"
    return pd.DataFrame(rows), summary


def _short(record: dict) -> str:
    if record["first_failure"] is None:
        return record["status"]
    return f"{record['status']} (fails at {record['first_failure']})"


def _fitted(summary: dict, seed: str) -> dict[int, dict]:
    """The seed's runs that fit their training lengths, by state size."""
    return {int(d): by_seed[seed] for d, by_seed in summary.get("runs", {}).items()
            if seed in by_seed and by_seed[seed]["status"] != CANNOT_LEARN}


def _seeds(summary: dict) -> list[str]:
    return sorted({seed for by_seed in summary.get("runs", {}).values() for seed in by_seed}, key=int)


def _numbers(summary: dict, seed: str) -> str:
    runs = common.by_number(summary["runs"].items())  # by state size
    return "; ".join(f"d_state {d} {_short(by_seed[seed])}" for d, by_seed in runs if seed in by_seed)


def decide_state_limits(summary: dict) -> Outcome:
    """Per seed: every state size that fits its training lengths copies until the string outgrows its state
    (it cannot hold, or copies every tested length); one that fails on a string it could hold fails the
    seed; no fitted state size cannot tell."""
    passed, numbers = {}, {}
    for seed in _seeds(summary):
        fitted = _fitted(summary, seed)
        passed[int(seed)] = (all(r["status"] in (CANNOT_HOLD, COPIES_ALL) for r in fitted.values())
                             if fitted else None)
        numbers[int(seed)] = _numbers(summary, seed)
    return by_seeds(passed, numbers, undecided="no state size fitted its training lengths")


def decide_larger_state_further(summary: dict) -> Outcome:
    """Per seed: of the state sizes that fit the training lengths, the largest copies strictly longer strings
    (every tested length up to it at >= 90%) than the smallest; fewer than two fitted cannot tell."""
    passed, numbers = {}, {}
    for seed in _seeds(summary):
        fitted = _fitted(summary, seed)
        smallest, largest = (fitted[min(fitted)], fitted[max(fitted)]) if len(fitted) >= 2 else (None, None)
        passed[int(seed)] = None if largest is None else largest["copies_up_to"] > smallest["copies_up_to"]
        numbers[int(seed)] = _numbers(summary, seed)
    return by_seeds(passed, numbers, undecided="fewer than two state sizes fitted their training lengths")


def state_figure(result: ExperimentResult):
    """Exact match against string length, a line per state size (median over seeds, min-max band); each
    tick names the string's bits, each legend entry its state's numbers and the longest string they
    could hold at one bit a number."""
    table = result.table
    bits = result.summary["bits_per_symbol"]
    label = {d: f"d_state {d}: {n:,} numbers, holds {n / bits:.0f}+ symbols"
             for d, n in table.groupby("d_state").state_size.first().items()}
    curves = table.assign(label=table.d_state.map(label), value=table.exact_match)[["label", "length", "value"]]
    fig = length_curve(curves, None, x_title="string length (symbols) and its information (bits)")
    lengths = sorted(table.length.unique())
    fig.update_xaxes(tickvals=lengths, ticktext=[f"{n}<br>{n * bits:g} bits" for n in lengths])
    return mark_train_length(fig, TRAIN_MAX)


FIXED_STATE = ("2402.01032", "2410.03810")

register_experiment(Experiment(
    name="copy-state-size",
    description="2-layer Mamba (d_model 32, mimetic init) with d_state 1, 2, 4, 8 and 16 trained 2000 steps (batch "
                "64, lr 3e-3) to copy strings of 1-8 symbols over 8 letters, tested to 32 (4x), seeds 0-2: exact match "
                "per length beside each string's bits and each state's numbers; each run sorted into cannot learn, "
                "cannot hold (first fails on a string with more bits than its state has numbers) or does not "
                "generalize (first fails on a string its state could hold).",
    variants=state_variants, analyze=state_analyze, figure=state_figure,
    claims=[
        Claim("state-limits-copying", "What stops Mamba copying past its training length is its fixed-size state: it "
              "copies until a string's information outgrows the state", FIXED_STATE,
              "GSSMs are fundamentally limited by their fixed-size latent state (a bound, qualitative)",
              "mimetic init, trained on 1-8 and tested to 4x",
              f"per seed: every state size that fits its training lengths (>= {FIT:.0%} at each tested length up "
              f"to {TRAIN_MAX}) copies (>= {COPIES:.0%}) every longer tested length whose bits (length x log2 of the "
              "alphabet) are at most its state's numbers; a seed with no fitted state size cannot tell; then the "
              "shared rule over >= 3 seeds", decide_state_limits),
        Claim("larger-state-copies-further", "A larger state lets Mamba copy longer strings past its training length",
              FIXED_STATE, "a GSSM's state size bounds the length it can copy (qualitative)",
              "mimetic init, d_state 1 to 16 at width 32",
              f"per seed: of the state sizes that fit their training lengths, the largest copies (>= {COPIES:.0%} "
              "at every tested length up to it) strictly longer strings than the smallest; fewer than two fitted "
              "cannot tell; then the shared rule over >= 3 seeds", decide_larger_state_further)],
    untested=[UntestedClaim("A model with a fixed-size state cannot copy strings longer than its state can hold",
                            FIXED_STATE, "strings with more bits than the state has numbers (for d_state 1 at width "
                            "32, 512 numbers: 171 symbols or more of 8 letters), trained at those lengths, which "
                            "the recurrent scan cannot afford on a CPU budget")]))
