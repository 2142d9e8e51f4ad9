"""Adaptive experiments: the geometric bisection, and run_experiment's rounds (Experiment.next_round),
with a fake trainer whose "run" succeeds below a known threshold, so no model is trained."""
import math

import pandas as pd
import pytest

from workbench.config import RunConfig
from workbench.experiments import base
from workbench.experiments.base import Budget, Experiment, Variant
from workbench.experiments.bisection import bracket, next_size
from workbench.experiments.verdicts import Claim, not_tested


def test_the_bracket_reads_from_the_smallest_failure():
    b = bracket({16: True, 64: False, 256: True, 32: True})
    assert (b.low, b.high, b.largest_success, b.monotone) == (32, 64, 256, False)
    assert b.estimate == pytest.approx(math.sqrt(32 * 64))
    assert bracket({16: True, 64: True}).high is None and not bracket({16: True}).closed
    assert bracket({16: False}).low == 0


def test_next_size_widens_an_open_bracket_and_splits_a_closed_one():
    assert next_size({16: True, 64: True}, 1.25, floor=2, ceiling=4096) == 256
    assert next_size({16: True, 64: True}, 1.25, floor=2, ceiling=100) == 100
    assert next_size({16: False}, 1.25, floor=2, ceiling=4096) == 4
    assert next_size({16: True, 64: False}, 1.25, floor=2, ceiling=4096) == 32
    assert next_size({32: True, 36: False}, 1.25, floor=2, ceiling=4096) is None  # within the precision
    assert next_size({2: False}, 1.25, floor=2, ceiling=4096) is None  # cannot go lower


def _simulate(threshold: float, precision: float = 1.25) -> tuple[int, int]:
    tried = {16: 16 <= threshold, 1024: 1024 <= threshold}
    while (size := next_size(tried, precision, floor=2, ceiling=4096)) is not None:
        tried[size] = size <= threshold
    b = bracket(tried)
    return b.low, b.high


@pytest.mark.parametrize("threshold", [3, 17, 100, 700, 2000])
def test_bisection_converges_on_a_known_threshold(threshold):
    low, high = _simulate(threshold)
    assert low <= threshold < high and (high / low <= 1.25 or high == low + 1)  # sizes are whole rows


class FakeRuns:
    """train_many's stand-in: a run is its config; records each round's jobs."""

    def __init__(self):
        self.rounds = []

    def __call__(self, jobs, workers=None, progress=True, on_done=None, backend="local", ray_address=None):
        self.rounds.append([config for config, _ in jobs])
        runs = _Runs(_FakeRun(config) for config, _ in jobs)
        for i, run in enumerate(runs):
            on_done and on_done(i, run)
        return runs


class _Runs(list):
    workers = 1


class _FakeRun:
    def __init__(self, config):
        self.config, self.run_id = config, config.run_id

    def status(self):
        return {"status": "done", "elapsed_s": 0.0}


THRESHOLD = 100  # the fake model memorizes a table of up to this many rows


def _variant(size, seed):
    return Variant(RunConfig.load(None, ["task.name=memorize", "task.key_length=3", f"task.table_size={size}", f"train.seed={seed}",
                                         "train.steps=10"]), {"table_size": size, "seed": seed})


def _next_round(finished, fast):
    out = []
    for seed in sorted({v.labels["seed"] for v, _ in finished}):
        tried = {v.labels["table_size"]: v.labels["table_size"] <= THRESHOLD for v, _ in finished
                 if v.labels["seed"] == seed}
        size = next_size(tried, 1.25, floor=2, ceiling=4096)
        if size is not None:
            out.append(_variant(size, seed))
    return out


def _analyze(finished, fast):
    table = pd.DataFrame([v.labels for v, _ in finished])
    return table, {"largest": int(table[table.table_size <= THRESHOLD].table_size.max()), "headline": "fake"}


@pytest.fixture
def fake_experiment(monkeypatch, data_dir):
    fake = FakeRuns()
    monkeypatch.setattr("workbench.parallel.train_many", fake)
    experiment = Experiment("fake-bisection", "fake", lambda fast: [_variant(s, seed) for seed in (0, 1) for s in (16, 1024)],
                            _analyze, lambda result: None, [Claim("x", "x", (), "", "paper", "", lambda s: not_tested(""))],
                            next_round=_next_round)
    monkeypatch.setitem(base.EXPERIMENTS, "fake-bisection", experiment)
    return fake


def test_run_experiment_trains_round_after_round_until_next_round_is_empty(fake_experiment):
    done = []
    result = base.run_experiment("fake-bisection", fast=True, progress=False, on_done=lambda i, n, v: done.append((i, n)))
    sizes = [[config.task.params["table_size"] for config in round_] for round_ in fake_experiment.rounds]
    assert sizes[0] == [16, 1024, 16, 1024] and len(sizes) > 2
    assert all(len(set(round_)) == 1 and len(round_) == 2 for round_ in sizes[1:])  # both seeds in lockstep
    assert result.summary["largest"] <= THRESHOLD and len(result.run_ids) == sum(map(len, sizes))
    assert len(result.runs) == len(result.run_ids) == len(set(result.run_ids))
    assert [i for i, _ in done] == list(range(len(result.run_ids)))


def test_a_budget_applies_to_every_round(fake_experiment):
    base.run_experiment("fake-bisection", fast=True, progress=False, budget=Budget(steps=7, seeds=(1,)))
    assert all(config.train.steps == 7 and config.train.seed == 1
               for round_ in fake_experiment.rounds for config in round_)
    assert len(fake_experiment.rounds) > 2
