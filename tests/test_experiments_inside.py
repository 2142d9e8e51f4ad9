"""The inside-the-model experiments: fast mode runs end to end (table, summary, figure); the slow
tests run entropy-collapse and lazy-neurons at their real (small) budget and check the phenomena."""
import pandas as pd
import plotly.graph_objects as go
import pytest

from workbench.experiments import Budget, get_experiment, load_result, run_experiment
from workbench.experiments.inside import collapse_step

NAMES = ["entropy-collapse", "lazy-neurons", "memorization-capacity", "outliers"]


def test_collapse_step_is_the_first_step_below_a_tenth_of_the_start():
    entropy = pd.Series([3.0, 2.0, 0.31, 0.29, 0.5], index=[0, 10, 20, 30, 40])
    assert collapse_step(entropy) == 30
    assert collapse_step(pd.Series([3.0, 2.9, 0.4], index=[0, 10, 20])) is None
    assert collapse_step(pd.Series([], dtype=float)) is None


@pytest.mark.parametrize("name", NAMES)
def test_fast_mode_gives_a_table_a_summary_and_a_figure(name, data_dir):
    result = run_experiment(name, fast=True, progress=False)
    assert len(result.table) > 0
    assert isinstance(result.summary["headline"], str) and result.summary["headline"]
    assert isinstance(result.summary.get("target_met"), bool) or isinstance(result.summary.get("verdict"), str)
    figure = result.figure()
    assert isinstance(figure, go.Figure) and len(figure.data) > 0
    cached = load_result(name, fast=True)
    assert cached.run_ids == result.run_ids and cached.summary == result.summary
    assert get_experiment(name).target


@pytest.mark.slow
def test_entropy_collapses_in_the_baseline_and_not_with_sigma_reparam(data_dir):
    summary = run_experiment("entropy-collapse", progress=False).summary
    runs = summary["runs"]
    assert len([r for r in runs if r["model"] == "baseline"]) == 2
    assert summary["baseline_collapsed"], summary["headline"]
    assert summary["sigma_reparam_kept_entropy"], summary["headline"]


@pytest.mark.slow
def test_lazy_neurons_density_falls_and_is_lower_for_wider_mlps(data_dir):
    """The recipe's first seed at its full budget (~3 min; all three seeds take ~7.5 min on 2 cores;
    their verdict is in REPRODUCTIONS.md, where width 32 stays flat on seed 2)."""
    summary = run_experiment("lazy-neurons", progress=False, budget=Budget(seeds=(0,))).summary
    assert len(summary["runs"]) == 4 and summary["seeds"] == [0]
    assert summary["density_falls"], summary["verdict"]
    assert summary["target_met"] == summary["wider_is_sparser"]
    if not summary["wider_is_sparser"]:
        # 5 of 6 seeds were in strict width order in the pilots (the experiment's notes): a seed may
        # miss it. Recorded in the verdict, not hidden.
        pytest.xfail("lower density for wider MLPs not shown on seed 0: " + summary["headline"])
