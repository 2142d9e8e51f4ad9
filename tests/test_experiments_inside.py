"""The inside-the-model experiments: fast mode runs end to end (table, summary, figure); the slow
tests run entropy-collapse and lazy-neurons at their real (small) budget and check the phenomena."""
from functools import partial

import pandas as pd
import plotly.graph_objects as go
import pytest

from workbench.experiments import VERDICTS, Budget, get_experiment, load_result, run_experiment
from workbench.events import first_collapse as collapse_step
from workbench.experiments.inside.lazy_neurons import _layers_not_falling
from workbench.reports import neuron_activity_steps
from workbench.store import open_run

NAMES = ["entropy-collapse", "lazy-neurons", "memorization-capacity", "memorization-capacity-fixed-d",
         "memorization-context", "outliers", "outliers-mlm"]


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
    assert set(result.outcomes) == {claim.key for claim in get_experiment(name).claims}
    assert all(o.verdict in VERDICTS for o in result.outcomes.values())
    figure = result.figure()
    assert isinstance(figure, go.Figure) and len(figure.data) > 0
    cached = load_result(name, fast=True)
    assert cached.run_ids == result.run_ids and cached.summary == result.summary
    assert cached.outcomes == result.outcomes


def test_the_capacity_rules_read_the_bisection_brackets():
    from workbench.experiments.inside.memorization_capacity import SLOPE_TOLERANCE, SPLIT, decide_grows, decide_linear

    decide_heads, decide_linear = partial(decide_grows, SPLIT), partial(decide_linear, SPLIT)

    def summary(lows, slope):
        shapes = [{"seed": seed, "heads": h, "low": low, "high": 2 * low, "largest_memorized": low, "monotone": True}
                  for seed in range(3) for h, low in zip((1, 2, 4, 8), lows)]
        return {"shapes": shapes, "fits": {str(seed): {"slope_vs_heads": slope} for seed in range(3)}}

    # rising but flat at one step: the growth claim fails there; a slope just short of linear fails the other
    assert decide_heads(summary((16, 32, 32, 64), 0.6)).verdict == "not reproduced"
    assert decide_heads(summary((16, 32, 64, 128), 1.0)).verdict == "reproduced"
    assert decide_linear(summary((16, 32, 64, 128), 1 - SLOPE_TOLERANCE)).verdict == "reproduced"
    assert decide_linear(summary((16, 20, 24, 28), 1 - SLOPE_TOLERANCE - 0.01)).verdict == "not reproduced"


def test_the_capacity_figure_plots_brackets_against_heads_and_parameters():
    from workbench.experiments.inside.memorization_capacity import capacity_analyze  # noqa: F401  (registers)
    from workbench.experiments.results import ExperimentResult

    shapes = [{"seed": 0, "heads": h, "n_parameters": 1000 * h * h, "low": 16 * h, "high": 20 * h,
               "capacity": (16 * h * 20 * h) ** 0.5, "bits_per_parameter": 0.1} for h in (1, 2, 4, 8)]
    figure = ExperimentResult("memorization-capacity", pd.DataFrame(), {"shapes": shapes}).figure()
    fits = [trace.name for trace in figure.data if trace.name.startswith("fit")]
    assert fits == ["fit vs heads: slope 1.00", "fit vs parameters: slope 0.50"]
    assert figure.layout.xaxis.type == "log" and figure.layout.yaxis.type == "log"
    assert figure.layout.xaxis.title.text == "heads (head dimension 8)"
    fixed_d = [{**shape, "d_model": 8} for shape in shapes]
    figure = ExperimentResult("memorization-capacity-fixed-d", pd.DataFrame(), {"shapes": fixed_d}).figure()
    assert figure.layout.xaxis.title.text == "heads (head dimension 8,<br>d_model 8)"
    # memorization-context: every n has the same parameters, so no parameters panel; n on the x axis
    contexts = [{"seed": 0, "context": n, "n_parameters": 4144, "low": 10 * n, "high": 12 * n,
                 "capacity": (120 * n * n) ** 0.5, "bits_per_parameter": 0.1} for n in (4, 6, 10, 14)]
    figure = ExperimentResult("memorization-context", pd.DataFrame(), {"shapes": contexts}).figure()
    assert [trace.name for trace in figure.data if trace.name.startswith("fit")] == ["fit vs context: slope 1.00"]
    assert figure.layout.xaxis.title.text.startswith("context n") and figure.layout.xaxis2.title.text == "context n"
    assert "xaxis3" not in figure.layout


def test_the_context_recipe_grows_the_keys_at_the_same_parameters():
    """memorization-context: keys of n - 2 symbols at 2 heads of their own 16 x 16 projections; the position
    table is 16 rows at every n, so only the key length changes between its points."""
    variants = get_experiment("memorization-context").variants(False)
    by_context = {v.labels["context"]: v.config for v in variants
                  if v.labels["table_size"] == 16 and v.labels["seed"] == 0}
    assert sorted(by_context) == [4, 6, 10, 14]
    for context, config in by_context.items():
        assert config.task.params["key_length"] == context - 2 < config.model.d_model == 16
        assert (config.model.n_heads, config.model.max_positions, config.model.mixer_options) == \
            (2, 16, {"attention_head_dim": 16})
        assert config.replace(**{"task.key_length": 2}).run_id == by_context[4].run_id


def test_the_two_capacity_shapes_differ_only_in_how_the_heads_sit():
    """memorization-capacity splits d_model = 8 H into the heads; the fixed-d recipe keeps d_model 8 and
    gives each head its own 8 x 8 projections, so its parameters grow as H; everything else is the same."""
    split, fixed = (get_experiment(name).variants(False) for name in ("memorization-capacity",
                                                                      "memorization-capacity-fixed-d"))
    assert [v.labels for v in split] == [v.labels for v in fixed]
    for a, b in zip(split, fixed):
        heads = a.labels["heads"]
        assert (a.config.model.d_model, b.config.model.d_model) == (8 * heads, 8)
        assert b.config.model.mixer_options == {"attention_head_dim": 8}
        assert a.config.replace(**{"model.d_model": 8, "model.attention_head_dim": 8}).run_id == b.config.run_id


@pytest.mark.slow
def test_entropy_collapses_in_the_baseline_and_not_with_sigma_reparam(data_dir):
    """The recipe's first seed at its full budget shows the phenomenon on its own (all three seeds are the
    shipped result)."""
    result = run_experiment("entropy-collapse", progress=False, budget=Budget(seeds=(0,)))
    outcome = result.outcomes["sigma-reparam"]
    assert outcome.passed == {"0": True}, outcome.per_seed
    assert outcome.verdict == "inconclusive"  # one seed never decides a claim


def test_a_layer_that_ends_where_it_started_counts_as_not_falling():
    runs = [{"mlp_width": 32, "labels": "true", "seed": 2,
             "first_per_layer": {"0": 0.48, "1": 0.43}, "last_per_layer": {"0": 0.42, "1": 0.49}},
            {"mlp_width": 128, "labels": "random", "seed": 1,
             "first_per_layer": {"0": 0.474, "1": 0.5}, "last_per_layer": {"0": 0.474, "1": 0.4}}]
    assert _layers_not_falling(runs) == ["width 32 true labels seed 2 layer 1: 0.430 -> 0.490",
                                         "width 128 random labels seed 1 layer 0: 0.474 -> 0.474"]


def test_lazy_neurons_reports_every_layer_beside_their_mean(data_dir):
    result = run_experiment("lazy-neurons", fast=True, progress=False)
    table = result.table
    layer_metrics = sorted(m for m in set(table.metric) if m != "mlp_nonzero_fraction")
    assert layer_metrics == ["mlp_nonzero_fraction_layer_0", "mlp_nonzero_fraction_layer_1"]  # the recipe's 2 layers
    # the mean rows are the mean of the layer rows, step by step, run by run
    keys = ["mlp_width", "labels", "seed", "step"]
    layers = table[table.metric != "mlp_nonzero_fraction"].groupby(keys)["value"].mean()
    mean = table[table.metric == "mlp_nonzero_fraction"].set_index(keys)["value"]
    pd.testing.assert_series_equal(layers.sort_index(), mean.sort_index(), check_names=False)
    for run in result.summary["runs"]:
        assert set(run["first_per_layer"]) == set(run["last_per_layer"]) == {"0", "1"}
    assert "(run, layer) pairs" in result.summary["headline"]
    # a panel for the mean and one per layer, all on one y scale
    figure = result.figure()
    assert [a.text for a in figure.layout.annotations] == ["mean over layers (seed median)", "layer 0", "layer 1"]
    assert figure.layout.yaxis2.matches == figure.layout.yaxis3.matches == "y"
    # every recipe run keeps its per-neuron activity at each probe step, for the Dynamics page
    for run_id in result.run_ids:
        assert neuron_activity_steps(open_run(run_id)) == [0, 8, 16]


LAZY_TEST_STEPS = 4000  # a fifth of the recipe's 20,000: every shipped seed's width order holds from step 1,600


@pytest.mark.slow
def test_lazy_neurons_density_falls_and_is_lower_for_wider_mlps(data_dir):
    """The recipe's first seed on a fifth of its budget (about 1 min; the full budget's three seeds are the
    shipped result): every run sparsifies and each wider MLP ends sparser."""
    result = run_experiment("lazy-neurons", progress=False, budget=Budget(steps=LAZY_TEST_STEPS, seeds=(0,)))
    assert len(result.summary["runs"]) == 4 and result.summary["seeds"] == [0]
    for claim in ("sparsifies", "wider-sparser"):
        assert result.outcomes[claim].passed == {"0": True}, result.outcomes[claim].per_seed
