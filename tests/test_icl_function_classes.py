"""Garg et al.'s richer function classes (workbench.tasks.icl_functions) and their learners
(workbench.icl.fitted): each task's y is its function written out by hand, at the scale the errors are
divided by; the greedy tree equals a tree grown by plain loops and recovers a tree it can represent;
the network baseline learns a network; the options that do not apply are refused by name."""
from __future__ import annotations

import math

import pytest
import torch

from workbench.errors import ConfigError
from workbench.icl.baselines import averaging, baselines_for, least_squares, nearest_neighbours, squared_error_curve
from workbench.icl.curves import baseline_curves
from workbench.icl.fitted import greedy_tree, two_layer_network
from workbench.tasks import build_task


def sample(name: str, n: int = 64, k: int = 9, **params):
    task = build_task(name, {"dim": 3, "min_examples": k, "max_examples": k, **params})
    return task, task.sample(n, torch.Generator().manual_seed(0), length=k, train=False)


def test_a_decision_tree_task_walks_each_sequences_tree_by_the_signs_of_its_coordinates():
    task, batch = sample("icl_decision_tree", depth=2)
    xs, ys = task.examples(batch)
    coordinates, leaves = batch.meta["split_coordinates"], batch.meta["leaf_values"]
    for b in range(8):
        for i in range(xs.shape[1]):
            node = 0
            for _ in range(2):
                node = 2 * node + (2 if xs[b, i, coordinates[b, node]] > 0 else 1)
            assert ys[b, i] == leaves[b, node - 3]
    assert task.error_scale == 1.0 and coordinates.shape == (64, 3) and leaves.shape == (64, 4)


def test_a_relu_network_task_is_the_network_scaled_to_the_linear_tasks_variance():
    task, batch = sample("icl_relu_network", n=2048, hidden=7)
    xs, ys = task.examples(batch)
    W1, w2 = batch.meta["first_layer"], batch.meta["second_layer"]
    by_hand = torch.einsum("bkh,bh->bk", torch.relu(torch.einsum("bkd,bdh->bkh", xs, W1)), w2) * math.sqrt(2 / 7)
    assert torch.allclose(ys, by_hand, atol=1e-5)
    assert task.error_scale == 3.0
    assert (ys ** 2).mean() / task.error_scale == pytest.approx(1.0, rel=0.15)  # predicting 0 scores about 1


def test_the_linear_task_still_draws_the_same_sequences():
    task, batch = sample("icl_linear_regression")
    xs, ys = task.examples(batch)
    assert torch.allclose(ys, (xs @ batch.meta["weights"][..., None])[..., 0], atol=1e-5)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(batch.meta["weights"][:4], torch.randn(64, 3, generator=g)[:4])  # w is drawn first


@pytest.mark.parametrize("name,params,field", [
    ("icl_decision_tree", {"sparsity": 2}, "task.sparsity"), ("icl_relu_network", {"sparsity": 1}, "task.sparsity"),
    ("icl_decision_tree", {"depth": 0}, "task.depth"), ("icl_relu_network", {"hidden": 0}, "task.hidden")])
def test_settings_that_do_not_apply_are_refused_by_name(name, params, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        build_task(name, {"dim": 3, **params})


def loop_grown_prediction(X, Y, query, depth):
    """CART written with plain loops: per node, every (coordinate, candidate point) in order, a better
    score (beyond rounding) wins; the threshold halfway to the next larger value in the node."""
    def grow(rows, level):
        ys = [Y[r] for r in rows]
        if level == depth or len(rows) < 2:
            return sum(ys) / len(ys)
        best = None
        for f in range(X.shape[1]):
            for t in rows:
                left = [r for r in rows if X[r, f] <= X[t, f]]
                right = [r for r in rows if X[r, f] > X[t, f]]
                if not left or not right:
                    continue
                score = sum(Y[r] for r in left) ** 2 / len(left) + sum(Y[r] for r in right) ** 2 / len(right)
                if best is None or score > best[0] + 1e-9 * (1 + abs(best[0])):
                    best = (score, f, (X[t, f] + min(X[r, f] for r in right)) / 2, left, right)
        if best is None:
            return sum(ys) / len(ys)
        _, f, cut, left, right = best
        return grow(right, level + 1) if query[f] > cut else grow(left, level + 1)
    return grow(list(range(len(Y))), 0)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_the_greedy_tree_equals_one_grown_with_plain_loops(depth):
    g = torch.Generator().manual_seed(depth)
    xs = torch.randn(6, 10, 3, generator=g, dtype=torch.float64)
    ys = torch.randn(6, 10, generator=g, dtype=torch.float64)
    preds = greedy_tree(xs, ys, depth)
    for b in range(6):
        assert preds[b, 0] == 0
        for i in range(1, 10):
            expected = loop_grown_prediction(xs[b, :i], ys[b, :i].tolist(), xs[b, i], depth)
            assert preds[b, i].item() == pytest.approx(expected, abs=1e-12)


def test_the_greedy_tree_learns_a_depth_two_tree_that_least_squares_cannot():
    task, batch = sample("icl_decision_tree", n=128, k=60, depth=2)
    xs, ys = task.examples(batch)
    tree = squared_error_curve(greedy_tree(xs, ys, 2), ys, 1.0)[-10:].mean()
    linear = squared_error_curve(least_squares(xs, ys), ys, 1.0)[-10:].mean()
    neighbours = squared_error_curve(nearest_neighbours(xs, ys), ys, 1.0)[-10:].mean()
    # 4 leaves from ~55 examples: mostly the true splits. Greedy growth misses some (a first split that
    # does not follow the root, children that test the root's coordinate again), so not all.
    assert tree < 0.2 and tree < neighbours / 2 and tree < linear / 2


def test_the_network_baseline_learns_a_relu_network_better_than_a_linear_fit():
    task, batch = sample("icl_relu_network", n=128, k=25)
    xs, ys = task.examples(batch)
    network = squared_error_curve(two_layer_network(xs, ys), ys, 3.0)[-5:].mean()
    assert network < squared_error_curve(averaging(xs, ys), ys, 3.0)[-5:].mean()
    assert network < 0.5  # predicting 0 scores 1
    assert torch.equal(two_layer_network(xs[:4], ys[:4]), two_layer_network(xs[:4], ys[:4]))  # seeded init


def test_learner_settings_are_checked_by_name():
    xs, ys = torch.randn(2, 4, 3), torch.randn(2, 4)
    for call, field in [(lambda: greedy_tree(xs, ys, 0), "depth"), (lambda: two_layer_network(xs, ys, 0), "hidden"),
                        (lambda: two_layer_network(xs, ys, lr=-1.0), "lr")]:
        with pytest.raises(ConfigError, match=field):
            call()


def test_each_class_is_drawn_beside_its_own_learners():
    assert "greedy tree (depth 4)" in baselines_for("icl_decision_tree")
    assert "2-layer network (Adam)" in baselines_for("icl_relu_network")
    assert "2-layer network (Adam)" not in baselines_for("icl_linear_regression")
    task, batch = sample("icl_decision_tree", n=16)
    assert set(baseline_curves(task, batch)) == set(baselines_for("icl_decision_tree"))


def test_a_finished_tree_run_is_drawn_beside_the_tree_learners_on_its_own_scale(tmp_path, monkeypatch):
    from icl_runs import TINY

    from workbench.config import RunConfig
    from workbench.icl import views
    from workbench.train import train

    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path))
    tree = ["task.name=icl_decision_tree", "task.dim=2", "task.depth=2", "task.min_examples=6", "task.max_examples=6"]
    run = train(RunConfig.load(None, [*tree, *TINY]), progress=False, root=tmp_path)
    table = views.run_error_table(run.run_id, n=16)
    assert set(table[table.kind == "baseline"].model) == set(baselines_for("icl_decision_tree"))
    assert views.baseline_names(run.run_id) == baselines_for("icl_decision_tree")
    figure = views.run_curve_figure(run.run_id, n=16)
    assert figure.layout.yaxis.title.text == "squared error"  # not "/ d": the leaves' variance is 1
    assert "Squared error of each query" in views.error_caption("icl_decision_tree")
    assert "/ d" in views.error_caption("icl_relu_network")
