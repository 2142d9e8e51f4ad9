"""attention-temperature: its fast budget (one NoPE model, 1000 steps, read at 16x the training filler)
already shows what the recipe tests on three seeds: a temperature chosen after training, uniform or per
head, buys the claims' 10 points; its rules count a seed only where the plain model fits."""
from __future__ import annotations

import plotly.graph_objects as go
import pytest

from workbench.experiments import EXPERIMENTS, run_experiment
from workbench.experiments.lengthgen_flattening import GAIN
from workbench.experiments.lengthgen_temperature import decide_gain

pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_fast_budget_shows_a_temperature_after_training_restoring_long_passkeys(data_dir):
    result = run_experiment("attention-temperature", fast=True, progress=False)
    table = result.table
    assert set(table.model) == {"nope", "nope-uniform", "nope-head", "nope-aligned"}
    assert sorted(table.filler.unique()) == [32, 512]
    assert set(result.outcomes) == {claim.key for claim in EXPERIMENTS["attention-temperature"].claims}
    assert {outcome.verdict for outcome in result.outcomes.values()} == {"not tested"}  # one seed, 16x
    fig = result.figure()
    assert isinstance(fig, go.Figure) and len(fig.layout.annotations) >= 2  # entropy and exact-match panels

    models = {name: seeds["0"] for name, seeds in result.summary["models"].items()}
    assert models["nope"]["exact_train"] >= 0.95, "the plain model fits its training lengths"
    # the claims' own bar (10 points at the longest length), not numbers read off a run
    assert models["nope-uniform"]["exact_longest"] >= models["nope"]["exact_longest"] + GAIN
    assert models["nope-head"]["exact_longest"] >= models["nope"]["exact_longest"] + GAIN
    heads = result.summary["head_scales"]["nope"]["0"]
    assert len(heads) == 2 and all(len(row) == 4 and min(row) >= 1.0 for row in heads)  # clamped at 1


def _numbers(exact_train, exact_longest):
    return {"exact_train": exact_train, "exact_longest": exact_longest, "entropy_train": 0.1,
            "entropy_longest": 0.5, "rise": 0.4, "scale_longest": 1.5}


def test_a_seed_counts_only_where_the_plain_model_fits_and_the_uniform_factor_leaves_room():
    models = {"nope": {"0": _numbers(0.8, 0.0), "1": _numbers(1.0, 0.0), "2": _numbers(1.0, 0.1)},
              "nope-uniform": {"0": _numbers(1.0, 0.9), "1": _numbers(1.0, 0.95), "2": _numbers(1.0, 0.5)},
              "nope-head": {"0": _numbers(1.0, 1.0), "1": _numbers(1.0, 1.0), "2": _numbers(1.0, 0.9)}}
    summary = {"fast": False, "models": models}
    gain = decide_gain("nope-uniform", "nope")(summary)
    assert gain.passed == {"0": None, "1": True, "2": True} and gain.verdict == "inconclusive"
    further = decide_gain("nope-head", "nope-uniform", room=0.9)(summary)
    assert further.passed == {"0": None, "1": None, "2": True}, "seed 1's uniform factor already reached 95%"
    assert "x1.50" in further.per_seed["2"]
