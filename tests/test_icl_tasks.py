"""In-context regression tasks: real-valued tokens through the Batch contract, the model's read-in
and read-out, the squared-error loss in training and evaluation, and `task show`."""
from __future__ import annotations

import json

import pytest
import torch

from workbench.cli import main
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.evaluate import exact_match
from workbench.models import model_for_task
from workbench.tasks import build_task
from workbench.tasks.base import concat_padded


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_each_y_slot_and_value_is_w_dot_x():
    task = build_task("icl_linear_regression", {"dim": 4, "noise": 0.0})
    batch = task.sample(16, gen(0), length=6)
    xs, ys = task.examples(batch)
    assert xs.shape == (16, 6, 4) and batch.tokens.shape == (16, 11)
    expected = (xs @ batch.meta["weights"].unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(ys, expected)
    # a y slot carries (y, 0, ..., 0), and only query slots are in the loss
    torch.testing.assert_close(batch.vectors[:, 1::2, 0], ys[:, :-1])
    assert (batch.vectors[:, 1::2, 1:] == 0).all()
    assert batch.loss_mask[:, 0::2].all() and not batch.loss_mask[:, 1::2].any()
    assert {task.vocab.symbols[t] for t in batch.tokens[:, 0::2].flatten().tolist()} == {"x"}


def test_noise_kappa_and_sparsity_shape_the_data():
    noisy = build_task("icl_linear_regression", {"dim": 3, "noise": 0.5})
    batch = noisy.sample(4000, gen(1), length=2)
    xs, ys = noisy.examples(batch)
    residual = ys - (xs @ batch.meta["weights"].unsqueeze(-1)).squeeze(-1)
    assert abs(float(residual.std()) - 0.5) < 0.03

    skewed = build_task("icl_linear_regression", {"dim": 4, "kappa": 10.0})
    batch = skewed.sample(64, gen(2), length=3)
    conditions = torch.linalg.cond(batch.meta["covariance"])
    assert (conditions >= 1 - 1e-4).all() and (conditions <= 10 + 1e-3).all() and conditions.max() > 3
    # the inputs follow the stated covariance: one sequence's many draws
    one = skewed.draw_inputs(1, 20000, gen(3))
    torch.testing.assert_close(torch.cov(one[0][0].T), one[1][0], atol=0.05, rtol=0.05)

    sparse = build_task("icl_sparse_regression", {"dim": 6, "sparsity": 2})
    weights = sparse.sample(32, gen(4), length=2).meta["weights"]
    assert ((weights != 0).sum(-1) == 2).all()


def test_same_seed_same_data_and_mixed_lengths_pad():
    task = build_task("icl_linear_regression", {"dim": 2, "min_examples": 2, "max_examples": 5})
    a, b = task.sample(20, gen(7)), task.sample(20, gen(7))
    assert torch.equal(a.vectors, b.vectors) and torch.equal(a.values, b.values)
    both = concat_padded([task.sample(2, gen(1), length=2), task.sample(2, gen(1), length=4)])
    assert both.vectors.shape == (4, 7, 2) and both.values.shape == (4, 7)
    assert not both.loss_mask[:2, 3:].any()


@pytest.mark.parametrize("params, field", [({"dim": 0}, "task.dim"), ({"kappa": 0.5}, "task.kappa"),
                                           ({"noise": -1}, "task.noise"), ({"sparsity": 9}, "task.sparsity")])
def test_bad_parameters_name_the_field(params, field):
    with pytest.raises(ConfigError, match=field):
        build_task("icl_linear_regression", params)


def test_model_reads_vectors_and_predicts_one_number_per_slot():
    task = build_task("icl_linear_regression", {"dim": 3})
    model = model_for_task(RunConfig().model, task, seed=0)
    batch = task.sample(5, gen(0), length=4)
    out = model(*batch.inputs())
    assert out.shape == (5, 7, 1)
    # the vectors matter: the same tokens with other vectors give other predictions
    other = task.sample(5, gen(1), length=4)
    assert not torch.allclose(out, model(batch.tokens, None, other.vectors))
    with pytest.raises(ValueError, match="batch.inputs"):
        model(batch.tokens)


def test_evaluation_loss_is_the_squared_error_at_the_queries():
    task = build_task("icl_linear_regression", {"dim": 3})
    model = model_for_task(RunConfig().model, task, seed=0).eval()
    accuracy, loss = exact_match(model, task, 64, gen(3), length=4)
    batch = task.sample(64, gen(3), length=4, train=False)
    with torch.no_grad():
        predictions = task.predictions(model(*batch.inputs()))
    expected = ((predictions - batch.values)[batch.loss_mask] ** 2).mean()
    assert loss == pytest.approx(float(expected), rel=1e-5)
    solved = task.squared_errors(predictions, batch)[:, -1] < task.params.tolerance
    assert accuracy == pytest.approx(float(solved.float().mean()))


def test_training_records_a_falling_squared_error(data_dir):
    from workbench.train import train

    config = RunConfig.from_dict({"task": {"name": "icl_linear_regression", "params": {"dim": 2, "min_examples": 5,
                                                                                     "max_examples": 5}},
                                  "model": {"init": "fan_in"},
                                  "train": {"steps": 600, "batch_size": 64, "lr": 3e-3, "eval_every": 0, "checkpoint_every": 0},
                                  "probes": {"every": 300}})
    run = train(config, progress=False)
    metrics = run.metrics()
    losses = metrics[metrics.probe == "loss"].value
    # Predicting 0 scores E[y^2] = d = 2 at every query; least squares on the examples before each
    # query scores (2 + 1 + 0 + 0 + 0) / 5 = 0.6 averaged over the 5 queries. Below 1.3 (halfway)
    # the model must be using the examples in its context, not only shrinking its guesses.
    assert run.status()["status"] == "completed"
    assert losses.iloc[-5:].mean() < 1.3


def test_task_show_json_prints_vectors_and_targets(capsys):
    assert main(["task", "show", "icl_linear_regression", "dim=2", "--n", "1", "--length", "3", "--json"]) == 0
    example = json.loads(capsys.readouterr().out)[0]
    assert example["tokens"] == ["x", "y", "x", "y", "x"]
    assert len(example["vectors"]) == 5 and len(example["vectors"][0]) == 2
    w = example["meta"]["weights"]
    for slot in (0, 2, 4):
        x = example["vectors"][slot]
        assert example["values"][slot] == pytest.approx(w[0] * x[0] + w[1] * x[1], abs=1e-3)
    assert main(["task", "show", "icl_linear_regression", "dim=2", "--n", "1", "--length", "2"]) == 0
    assert "vec[1]" in capsys.readouterr().out


@pytest.mark.parametrize("function", ["conjunction", "disjunction", "parity"])
def test_boolean_labels_follow_a_plain_loop_oracle(function):
    task = build_task("icl_boolean", {"bits": 6, "function": function, "relevant": 3})
    batch = task.sample(40, gen(5), length=7)
    bits = (batch.vectors[:, 0::2] > 0).long()
    labels = task.labels(batch)
    for b in range(40):
        reads = batch.meta["relevant"][b].tolist()
        negated = batch.meta["negated"][b].tolist()
        for i in range(7):
            literals = [bool(bits[b, i, j]) != negated[j] for j in range(6) if reads[j]]
            expected = {"conjunction": all(literals), "disjunction": any(literals),
                        "parity": sum(literals) % 2 == 1}[function]
            assert labels[b, i] == int(expected)
            if i < 6:  # the y slot after each query shows its label as +-1
                assert batch.vectors[b, 2 * i + 1, 0] == (1.0 if expected else -1.0)
    if function == "parity":
        assert ((batch.meta["relevant"]).sum(-1) == 3).all()


def test_boolean_inputs_keep_both_labels_common():
    task = build_task("icl_boolean", {"bits": 12, "function": "conjunction", "positive": 0.3})
    rate = float(task.labels(task.sample(2000, gen(0), length=10)).float().mean())
    # at least the forced 30% are positive; uniform inputs alone would give about 2^-4
    assert 0.3 <= rate <= 0.6
    with pytest.raises(ConfigError, match="task.function"):
        build_task("icl_boolean", {"function": "majority"})


def test_boolean_model_scores_the_final_query():
    task = build_task("icl_boolean", {"bits": 4})
    model = model_for_task(RunConfig().model, task, seed=0).eval()
    batch = task.sample(32, gen(2), length=5, train=False)
    with torch.no_grad():
        logits = model(*batch.inputs())
    assert logits.shape == (32, 9, len(task.vocab))
    predictions = task.predictions(logits)
    assert torch.equal(task.score(predictions, batch), task.correct(predictions, batch)[:, -1])


def test_token_only_tools_refuse_vector_tasks_clearly(data_dir):
    with pytest.raises(ConfigError, match="probes.extra"):
        RunConfig.load(None, ["task.name=icl_boolean", "probes.extra=heads"])
    from workbench.train import train

    run = train(RunConfig.load(None, ["task.name=icl_linear_regression", "task.dim=2", "train.steps=2",
                                      "train.eval_every=0", "probes.every=0"]), progress=False)
    assert main(["heads", run.run_id]) == 2
