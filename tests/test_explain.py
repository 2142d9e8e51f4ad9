"""Explanations next to numbers, and figures that say what they show: legends name runs by label,
exact match reads in percent with its lengths named, log axes say so."""
from __future__ import annotations

import pandas as pd
import pytest

from workbench.config import RunConfig
from workbench.explain import budget_note, exact_match_meaning, run_notes
from workbench.figures.builders import entropy_by_length, metric_over_steps
from workbench.figures.runs import run_names, runs_length_curve, runs_metric
from workbench.train import train

TINY = ["task.name=addition", "task.max_digits=3", "task.eval_lengths=2,4", "model.n_layers=1", "model.d_model=16",
        "model.n_heads=2", "model.pos=coupling", "train.steps=4", "train.batch_size=8", "train.eval_samples=8",
        "train.threads=1", "probes.every=0"]


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """Two tiny coupled-id addition runs that never fit (4 steps), one labelled, on seeds 0 and 1."""
    root = tmp_path_factory.mktemp("runs")
    labelled = train(RunConfig.load(None, TINY), progress=False, label="coupling, tiny", root=root)
    unlabelled = train(RunConfig.load(None, [*TINY, "train.seed=1"]), progress=False, root=root)
    return labelled, unlabelled


def test_legends_name_runs_by_label_or_what_they_are(tiny_runs):
    labelled, unlabelled = tiny_runs
    assert run_names([labelled, unlabelled]) == ["coupling, tiny", "addition · attention · coupling · seed 1"]
    assert run_names([unlabelled, unlabelled]) == [f"addition · attention · coupling · seed 1 ({unlabelled.run_id[:6]})"] * 2
    for figure in (runs_length_curve([labelled, unlabelled]), runs_metric([labelled, unlabelled], "loss")):
        names = [trace.name for trace in figure.data if trace.showlegend is not False]
        assert names == run_names([labelled, unlabelled])
        assert not any(run.run_id in name for run in tiny_runs for name in names)


def test_a_run_that_never_fit_says_so_and_what_exact_match_was_measured_on(tiny_runs):
    labelled, _ = tiny_runs
    notes = run_notes(labelled)
    assert any("never fit its own training lengths (1-3)" in note for note in notes)
    assert any("Trained only 4 steps" in note for note in notes)
    assert "training lengths 1-3" in exact_match_meaning(labelled.config())


def test_low_loss_with_low_exact_match_points_at_the_coupled_id_start(tiny_runs, tmp_path):
    import shutil

    from workbench.store import Run

    labelled, _ = tiny_runs
    run = Run(shutil.copytree(labelled.path, tmp_path / labelled.run_id))
    metrics = run.metrics()
    final = metrics.step == metrics.step.max()
    metrics.loc[final & (metrics.probe == "loss") & (metrics.layer == -1), "value"] = 0.001
    metrics.loc[final & (metrics.probe == "exact_match") & (metrics.length == -1), "value"] = 0.1
    run.write_metrics(metrics)
    (note, *_) = run_notes(run)
    assert "coupled position ids at 1" in note and "Length generalization page" in note


def test_a_short_experiment_budget_is_named():
    assert "smoke test" in budget_note(24, fast=True)
    assert budget_note(3000, fast=False) is None


def test_log_axes_say_so():
    rows = [{"probe": "entropy", "layer": 0, "head": -1, "length": n, "value": 1.0} for n in (5, 10, 40)]
    assert "log scale" in entropy_by_length(rows).layout.xaxis.title.text
    loss = pd.DataFrame({"step": [0, 100, 200], "value": [5.0, 0.5, 0.01], "series": "loss"})
    assert metric_over_steps(loss, "training loss", log_y=True).layout.yaxis.title.text == "training loss (log scale)"
    assert metric_over_steps(loss, "training loss").layout.yaxis.title.text == "training loss"


def test_attention_maps_and_grids_name_their_axes_and_thin_long_token_labels():
    import numpy as np

    from workbench.figures.builders import GRID_TICKS, MAP_TICKS, attention_grid, attention_map

    tokens = [str(i % 10) for i in range(60)]
    pattern = np.full((60, 60), 1 / 60)
    single = attention_map(pattern, tokens)
    assert single.layout.xaxis.title.text == "key" and single.layout.yaxis.title.text == "query"
    assert 10 <= len(single.layout.xaxis.tickvals) <= MAP_TICKS  # readable, and still spread over the sample
    grid = attention_grid({0: pattern[None].repeat(2, 0), 1: pattern[None].repeat(2, 0)}, tokens)
    shown_x = [axis for name, axis in grid.layout.to_plotly_json().items() if name.startswith("xaxis")
               and axis.get("showticklabels")]
    shown_y = [axis for name, axis in grid.layout.to_plotly_json().items() if name.startswith("yaxis")
               and axis.get("showticklabels")]
    assert len(shown_x) == 2 and len(shown_y) == 2  # the bottom row's keys, the first column's queries
    assert all(axis["title"]["text"] == "key" and len(axis["tickvals"]) <= GRID_TICKS for axis in shown_x)
    assert all(axis["title"]["text"] == "query" for axis in shown_y)


def test_no_never_fit_warning_where_exact_match_cannot_be_reached(data_dir):
    from workbench.explain import run_notes
    from workbench.store import demo_root, Run

    baseline = Run(demo_root() / "e67b5676b0dd")  # entropy collapse on Markov chains: the next symbol is drawn
    assert baseline.config().task.name == "markov_icl"
    assert not any("never fit" in note for note in run_notes(baseline))
