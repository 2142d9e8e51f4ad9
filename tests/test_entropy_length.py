"""Evaluating a finished run at test lengths, with attention entropy beside exact match: what is
stored, what `workbench show --json` and `eval-length` report, and the figure of entropy against
test length (the Length generalization page draws it; its test is in test_app_pages)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from workbench.analysis import evaluate_lengths, load_model
from workbench.cli import main
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.evaluate import eval_generator, exact_match
from workbench.figures.builders import FLAT_SHARE
from workbench.figures.runs import has_entropy_by_length, run_entropy_by_length
from workbench.probes import entropy_vs_length
from workbench.reports import entropy_layer_means
from workbench.store import open_run
from workbench.train import train

TINY = ["task.name=copy", "task.max_length=6", "model.pos=rope", "model.n_layers=2", "model.d_model=16",
        "model.n_heads=2", "train.steps=20", "train.batch_size=16", "train.warmup=5", "train.eval_every=0",
        "probes.every=10", "train.threads=1"]
LENGTHS = [3, 6, 12]


@pytest.fixture
def run_id(data_dir) -> str:
    return train(RunConfig.load(None, TINY), progress=False).run_id


def test_evaluation_stores_exact_match_and_entropy_per_head_and_layer(run_id):
    calls = []
    result = evaluate_lengths(run_id, "3,6,12", n=16, entropy_n=4, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    run = open_run(run_id)
    model, task = load_model(run)
    # the same numbers as evaluating the model directly, each length on its own stream
    for length in LENGTHS:
        direct, _ = exact_match(model, task, 16, eval_generator(0, length), length=length)
        assert result["exact_match"][length] == direct
    direct_rows = entropy_vs_length(model, task, LENGTHS, n=4, seed=0)
    assert result["entropy"] == entropy_layer_means(direct_rows)
    assert sorted(result["entropy"]) == LENGTHS and all(sorted(v) == [0, 1] for v in result["entropy"].values())

    stored = run.metrics()
    at_lengths = stored[stored.length >= 1]
    assert set(at_lengths[at_lengths.probe == "exact_match"].length) == set(LENGTHS)
    heads = at_lengths[(at_lengths.probe == "entropy") & (at_lengths["head"] >= 0)]
    assert len(heads) == len(LENGTHS) * 2 * 2  # every length, layer and head
    assert entropy_layer_means(stored) == result["entropy"]
    normalized = at_lengths[at_lengths.probe == "entropy_normalized"].value
    assert ((normalized >= 0) & (normalized <= 1 + 1e-6)).all()
    # a query at position t sees at most t + 1 keys: the mean entropy stays under log of the longest row
    longest = task.sequence_length(max(LENGTHS))
    assert all(value <= math.log(longest) for layers in result["entropy"].values() for value in layers.values())


def test_without_entropy_only_exact_match_is_evaluated(run_id):
    result = evaluate_lengths(run_id, [3, 6], n=8)
    assert set(result) == {"exact_match"}
    assert not has_entropy_by_length(open_run(run_id))


def test_the_latest_evaluation_of_a_length_counts():
    rows = [{"step": step, "probe": "entropy", "layer": 0, "head": -1, "length": 8, "value": value}
            for step, value in ((10, 1.5), (30, 0.5), (20, 1.0))]
    rows.append({"step": 30, "probe": "entropy", "layer": 0, "head": 1, "length": 8, "value": 9.0})  # a head, not the mean
    rows.append({"step": 30, "probe": "entropy", "layer": 0, "head": -1, "length": -1, "value": 9.0})  # over training
    assert entropy_layer_means(rows) == {8: {0: 0.5}}


def test_show_json_reports_entropy_by_length_and_eval_length_prints_it(run_id, capsys):
    assert main(["show", run_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entropy_by_length"] == {}
    assert main(["eval-length", run_id, "--lengths", "3,12", "--n", "8", "--entropy", "--entropy-n", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed["entropy"]) == {"3", "12"} and set(printed["entropy"]["3"]) == {"0", "1"}
    assert main(["show", run_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["entropy_by_length"]
    assert set(shown) == {"entropy", "entropy_normalized"}
    assert shown["entropy"] == printed["entropy"]
    assert main(["eval-length", run_id, "--lengths", "3", "--n", "8", "--entropy", "--entropy-n", "2"]) == 0
    header, row = capsys.readouterr().out.strip().splitlines()
    assert header.split() == ["length", "exact_match", "entropy_L0", "entropy_L1"] and row.split()[0] == "3"


@pytest.mark.parametrize("args, field", [(["--lengths", "3,x"], "--lengths"), (["--lengths", ","], "--lengths"),
                                         (["--lengths", "0"], "--lengths"),
                                         (["--lengths", "3", "--entropy", "--entropy-n", "0"], "--entropy-n")])
def test_eval_length_bad_input_is_one_line_naming_the_flag(run_id, capsys, args, field):
    assert main(["eval-length", run_id, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {field}: invalid value")
    assert not has_entropy_by_length(open_run(run_id))


def test_figure_one_line_per_layer_against_length_with_the_trained_length_marked(run_id):
    run = open_run(run_id)
    with pytest.raises(ConfigError, match="has no attention entropy by test length"):
        run_entropy_by_length(run)
    evaluate_lengths(run_id, LENGTHS, n=8, entropy_n=2)
    for normalized in (False, True):
        fig = run_entropy_by_length(run, normalized)
        assert [trace.name for trace in fig.data] == ["layer 0", "layer 1"]
        assert all(list(trace.x) == LENGTHS for trace in fig.data)
        assert ("normalized" in fig.layout.yaxis.title.text) == normalized
        if normalized:  # a share: on the whole 0-1 axis when it barely moves, as over training
            values = [v for trace in fig.data for v in trace.y]
            flat = max(values) - min(values) < FLAT_SHARE
            assert (fig.layout.yaxis.range is not None) == flat
    # the task's longest training length (6) is marked; on the log x axis an annotation sits at log10(x)
    assert fig.layout.xaxis.type == "log"
    (line,) = fig.layout.shapes
    (label,) = fig.layout.annotations
    assert line.x0 == 6 and label.text == "longest trained" and label.x == pytest.approx(np.log10(6))


def test_a_diverged_run_has_no_weights_and_says_so_in_one_line(data_dir, capsys):
    diverged = train(RunConfig.load(None, TINY + ["train.lr=1e6", "train.warmup=0", "train.grad_clip=0"]),
                     progress=False)
    assert diverged.status()["status"] == "diverged"
    for command in (["eval-length", diverged.run_id, "--lengths", "3"],
                    ["export", diverged.run_id, "--figure", "attention", "--length", "3"]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "has no final weights to load (status 'diverged', diverged at step" in err[0]


def test_entropy_at_the_answer_is_the_attention_row_where_the_answer_is_first_predicted(run_id):
    """At each sample's first answer prediction only: the same number as the entropy of that row of
    each head's attention map, and what `eval-length --entropy-at answer` stores and prints."""
    import torch

    from workbench.probes.entropy_length import answer_queries, entropy_at_length

    model, task = load_model(open_run(run_id))
    length, n = 6, 5
    batch = task.sample(n, eval_generator(0, length), length=length, train=False)
    where = answer_queries(batch)
    assert where.sum(1).tolist() == [1] * n and (where & batch.loss_mask).sum() == n
    assert torch.equal(where.float().argmax(1), batch.loss_mask.float().argmax(1))  # the first answer position
    maps = {}
    with model.hooks({f"blocks.{layer}.mixer.hook_pattern": (lambda layer: lambda value, hook:
                      maps.__setitem__(layer, value.detach()))(layer) for layer in (0, 1)}):
        model(batch.tokens, batch.position_ids)
    measured = entropy_at_length(model, task, length, n, seed=0, at_answer=True)
    for layer, pattern in maps.items():
        rows = pattern[torch.arange(n), :, where.float().argmax(1)]  # (n, H, T): each sample's answer row
        expected = -(rows * rows.clamp_min(1e-30).log()).sum(-1).mean(0)
        assert torch.allclose(measured[layer][0], expected, atol=1e-4)

    result = evaluate_lengths(run_id, [3, 12], n=8, entropy_n=3, entropy_at="answer")
    assert entropy_layer_means(open_run(run_id).metrics(), "answer_entropy") == result["entropy"]
    assert not entropy_layer_means(open_run(run_id).metrics())  # the all-queries entropy was not evaluated
    assert main(["eval-length", run_id, "--lengths", "3", "--n", "8", "--entropy", "--entropy-n", "2",
                 "--entropy-at", "answer", "--json"]) == 0


def test_entropy_at_must_be_all_or_answer(run_id):
    with pytest.raises(ConfigError, match="--entropy-at"):
        evaluate_lengths(run_id, [3], n=4, entropy_n=2, entropy_at="query")


def test_a_later_evaluation_does_not_change_what_the_recipe_measured(data_dir):
    """eval-length appends its readings to the run (the last one wins for a person reading the run), but
    an experiment that reuses the run reads its training's own evaluation of the lengths it asked for."""
    from workbench.reports import length_table, recipe_length_table

    run = train(RunConfig.load(None, TINY + ["task.eval_lengths=3,6", "train.eval_samples=8"]), progress=False)
    before = recipe_length_table(run)
    assert set(before) == {3, 6}
    evaluate_lengths(run.run_id, [6, 12], n=64)
    assert 12 in length_table(run.metrics())
    assert recipe_length_table(run) == before
    rows = run.metrics()
    rows = rows[(rows.probe == "exact_match") & (rows.length == 6)]
    assert len(rows[rows.step == rows.step.max()]) == 2  # the later reading is stored beside the first
