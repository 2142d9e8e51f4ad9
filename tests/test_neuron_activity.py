"""The per-neuron MLP activity behind the mean density: read back from a run's snapshots, summarized
for `workbench show --json`, and drawn as one line per step (the area under it is the density)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.cli import main
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.figures.runs import run_neuron_activity, spread_steps
from workbench.reports import layer_rows, neuron_activity, neuron_activity_steps, neuron_activity_summary
from workbench.train import train

TINY = ["task.name=addition", "task.max_digits=3", "model.n_layers=2", "model.d_model=16", "model.n_heads=2",
        "train.steps=30", "train.batch_size=16", "train.warmup=5", "train.lr=3e-3", "probes.every=10",
        "probes.entropy=false", "train.eval_every=0", "train.threads=1"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Snapshots every 10 steps; the sparsity probe at every one of them."""
    return train(RunConfig.load(None, TINY), progress=False, root=tmp_path_factory.mktemp("runs"))


def test_every_snapshot_step_holds_each_layers_neurons_and_their_mean_is_the_density(run):
    steps = neuron_activity_steps(run)
    assert steps == run.snapshot_steps() == [0, 10, 20, 30]
    density = layer_rows(run.metrics(), "mlp_nonzero_fraction")
    for step in steps:
        layers = neuron_activity(run, step)
        assert sorted(layers) == [0, 1]
        for layer, shares in layers.items():
            assert shares.shape == (64,)  # mlp_ratio 4 x d_model 16
            assert np.all(np.diff(shares) <= 0), "most active first"
            stored = density[(density.step == step) & (density.layer == layer)].value.item()
            # tokens x neurons: the mean over neurons of each one's share of tokens is the share of nonzeros
            assert shares.mean() == pytest.approx(stored, abs=1e-6)


def test_only_steps_where_the_sparsity_probe_ran_count(tmp_path):
    silent = train(RunConfig.load(None, [*TINY, "train.steps=10", "probes.sparsity=false"]), progress=False,
                   root=tmp_path)
    assert silent.snapshot_steps() and neuron_activity_steps(silent) == []
    assert neuron_activity_summary(silent) == {}
    with pytest.raises(ConfigError, match="probes.sparsity=true"):
        run_neuron_activity(silent)


def test_the_summary_gives_quantiles_at_the_first_and_last_snapshot(run):
    summary = neuron_activity_summary(run)
    assert summary["steps"] == {"first": 0, "last": 30}
    for end, step in summary["steps"].items():
        for layer, shares in neuron_activity(run, step).items():
            quantiles = summary["per_layer"][str(layer)][end]
            assert quantiles["median"] == pytest.approx(float(np.median(shares)))
            assert quantiles["q10"] <= quantiles["median"] <= quantiles["q90"]


def test_show_json_includes_the_neuron_activity(run, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_DATA", str(run.path.parent))
    assert main(["show", run.run_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["neuron_activity"] == json.loads(json.dumps(neuron_activity_summary(run)))


def test_the_figure_has_a_panel_per_layer_and_a_line_per_step(run):
    fig = run_neuron_activity(run, [0, 30])
    assert [a.text for a in fig.layout.annotations] == ["layer 0", "layer 1"]
    lines = [(trace.xaxis, trace.name) for trace in fig.data]
    assert lines == [("x", "step 0"), ("x", "step 30"), ("x2", "step 0"), ("x2", "step 30")]
    assert [trace.showlegend for trace in fig.data] == [True, True, False, False]  # one legend entry per step
    last_layer_1 = neuron_activity(run, 30)[1]
    assert np.allclose(fig.data[3].y, last_layer_1)
    assert np.mean(fig.data[3].y) == pytest.approx(float(last_layer_1.mean()))  # x spans [0, 1] evenly


def test_by_default_the_figure_spreads_its_lines_over_training(run):
    assert [trace.name for trace in run_neuron_activity(run).data[:4]] == [f"step {s}" for s in (0, 10, 20, 30)]
    assert spread_steps(list(range(0, 1001, 10)), 6) == [0, 200, 400, 600, 800, 1000]
    assert spread_steps([5, 7], 6) == [5, 7]


def test_a_step_without_a_snapshot_is_refused_with_the_choices(run):
    with pytest.raises(ConfigError, match="step: invalid value 15; choose one of: 0, 10, 20, 30"):
        run_neuron_activity(run, [15])
