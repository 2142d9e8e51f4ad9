"""Evaluating coupled-id tasks with their ids starting elsewhere (`Task.at_offset`, `eval-length
--offsets`): the samples stay the same, only the ids move, and the sweep reaches the model."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from workbench.analysis import evaluate_offsets, load_model
from workbench.cli import main
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.evaluate import eval_generator
from workbench.probes.id_offset import coupled_tasks, offset_curve
from workbench.store import open_run
from workbench.tasks import build_task
from workbench.train import train

COUPLED = {"addition": {}, "copy": {}, "reverse": {}, "multi_operand_addition": {}, "multiplication": {}}


def _sample(task, length, train=False, seed=0):
    return task.sample(8, torch.Generator().manual_seed(seed), length=length, train=train)


@pytest.mark.parametrize("name", sorted(COUPLED))
def test_an_offset_moves_the_ids_and_nothing_else(name):
    task = build_task(name, COUPLED[name])
    default, same = _sample(task, 3), _sample(task.at_offset(task.coupled_first), 3)
    moved = _sample(task.at_offset(task.coupled_first + 7), 3)
    assert torch.equal(default.position_ids, same.position_ids)
    for batch in (same, moved):
        assert torch.equal(batch.tokens, default.tokens) and torch.equal(batch.targets, default.targets)
        assert torch.equal(batch.loss_mask, default.loss_mask)
    shift = moved.position_ids - default.position_ids
    assert set(shift.unique().tolist()) <= {0, 7} and (shift == 7).any()


def test_addition_ids_shift_exactly_by_the_offset():
    task = build_task("addition", {})
    default, moved = _sample(task, 4), _sample(task.at_offset(10), 4)
    coupled = default.position_ids > 0  # BOS, EOS and padding keep id 0
    assert torch.equal(moved.position_ids[coupled], default.position_ids[coupled] + 9)
    assert torch.equal(moved.position_ids[~coupled], default.position_ids[~coupled])
    assert int(moved.position_ids[coupled].min()) == 10  # '+' and '=' carry the start itself


def test_training_samples_ignore_the_offset():
    task = build_task("addition", {})
    assert torch.equal(_sample(task, None, train=True).position_ids,
                       _sample(task.at_offset(20), None, train=True).position_ids)


def test_bad_offsets_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"offset: invalid value 0; expected an integer >= 1"):
        build_task("addition", {}).at_offset(0)
    with pytest.raises(ConfigError, match="task parity has no coupled position ids"):
        build_task("parity", {}).at_offset(1)
    assert build_task("copy", {}).at_offset(0).id_offset == 0  # copy's ids start at 0
    assert sorted(coupled_tasks()) == sorted(COUPLED)


class StartOracle(nn.Module):
    """Answers a copy task perfectly when its ids start at `start`, and predicts padding otherwise."""

    def __init__(self, task, start: int):
        super().__init__()
        self.task, self.start = task, start

    def forward(self, tokens, position_ids):
        vocab = len(self.task.vocab)
        logits = torch.zeros(*tokens.shape, vocab)
        equals = (tokens == self.task.vocab["="]).float().argmax(1)
        for i in range(tokens.shape[0]):
            e = int(equals[i])
            right = int(position_ids[i, 1]) == self.start + 1  # the first symbol carries start + 1
            answer = torch.cat([tokens[i, 1:e], torch.tensor([self.task.vocab["$"]])])
            for j, token in enumerate(answer):
                logits[i, e + j, int(token) if right else 0] = 1.0
        return logits


def test_the_sweep_reaches_the_model_with_each_offset():
    task = build_task("copy", {"max_length": 6})
    oracle = StartOracle(task, start=3)
    assert offset_curve(oracle, task, 4, [0, 3, 5], n=16, seed=0) == {0: 0.0, 3: 1.0, 5: 0.0}


TINY = ["task.name=addition", "task.max_digits=3", "model.pos=coupling", "model.n_layers=1", "model.d_model=16",
        "model.n_heads=2", "train.steps=10", "train.batch_size=16", "train.warmup=2", "train.eval_every=0",
        "probes.every=0", "train.threads=1"]


@pytest.fixture
def run_id(data_dir) -> str:
    return train(RunConfig.load(None, TINY), progress=False).run_id


def test_evaluate_offsets_matches_the_model_read_directly_and_stores_nothing(run_id):
    before = len(open_run(run_id).metrics())
    calls = []
    curves = evaluate_offsets(run_id, "2,4", "1,3", n=16, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 2), (2, 2)] and list(curves) == [2, 4] and all(list(c) == [1, 3] for c in curves.values())
    model, task = load_model(open_run(run_id))
    assert curves[4] == offset_curve(model, task, 4, [1, 3], 16, seed=0)
    assert len(open_run(run_id).metrics()) == before
    # the same stream as every other evaluation of that length: offset 1 is the standard evaluation
    from workbench.evaluate import exact_match
    assert curves[2][1] == exact_match(model, task, 16, eval_generator(0, 2), length=2)[0]


def test_eval_length_offsets_in_text_and_json(run_id, capsys):
    assert main(["eval-length", run_id, "--lengths", "2,4", "--offsets", "1,5", "--n", "16", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["exact_match_by_offset"]
    assert set(result) == {"2", "4"} and set(result["2"]) == {"1", "5"}
    assert main(["eval-length", run_id, "--lengths", "2,4", "--offsets", "1,5", "--n", "16"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["length", "offset", "1", "offset", "5"]
    assert [float(v) for v in lines[3].split()[1:]] == [result["4"]["1"], result["4"]["5"]]


@pytest.mark.parametrize("args, message", [
    (["--offsets", "0"], "--offsets: invalid value 0; expected an integer >= 1"),
    (["--offsets", "1,x"], "--offsets"),
    (["--offsets", "1", "--entropy"], "leave out --entropy and --examples"),
])
def test_eval_length_offsets_refuses_bad_input_in_one_line(run_id, capsys, args, message):
    assert main(["eval-length", run_id, "--lengths", "3", "--n", "4", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_offsets_need_a_model_that_reads_the_ids(data_dir, capsys):
    learned = train(RunConfig.load(None, [*TINY[:2], "model.pos=learned", *TINY[3:]]), progress=False).run_id
    assert main(["eval-length", learned, "--lengths", "3", "--offsets", "1,2"]) == 2
    assert "model.pos=learned does not read the task's position ids" in capsys.readouterr().err


def test_the_offset_figure_has_a_line_per_length_and_marks_the_default_start():
    from workbench.figures.builders import offset_curves

    fig = offset_curves({5: {0: 0.1, 2: 1.0, 9: 1.0}, 12: {0: 0.0, 2: 0.5, 9: 0.9}}, default_offset=0)
    lines = [trace for trace in fig.data if trace.mode == "lines+markers"]
    assert [trace.name for trace in lines] == ["length 5", "length 12"]
    assert list(lines[1].x) == [0, 2, 9] and list(lines[1].y) == [0.0, 50.0, 90.0]
    assert "offset %{x}" in lines[0].hovertemplate
    assert [shape.x0 for shape in fig.layout.shapes] == [0]  # copy's default start, 0, is marked too
    assert [a.text for a in fig.layout.annotations] == ["evaluation default"]


@pytest.mark.parametrize("name, params", [*sorted(COUPLED.items()), ("addition", {"ids": "abacus"})])
def test_random_starts_draw_each_samples_start_from_trainings_range_and_keep_the_symbols(name, params):
    task = build_task(name, params)
    default, fair = _sample(task, 3), _sample(task.at_offset("random"), 3)
    again = _sample(task.at_offset("random"), 3)
    assert torch.equal(fair.position_ids, again.position_ids)  # the same seed, the same starts
    assert torch.equal(fair.tokens, default.tokens) and torch.equal(fair.targets, default.targets)
    coupled = default.position_ids > 0
    firsts = torch.where(coupled, fair.position_ids, fair.position_ids.max() + 1).min(dim=1).values
    assert firsts.unique().numel() > 1  # each sample its own start, not one for the batch
    shift = fair.position_ids - default.position_ids
    assert 0 <= int(shift.min()) and int(shift.max()) <= task.params.max_position  # within the trained starts
    per_sample = [set(row[c].unique().tolist()) for row, c in zip(shift, coupled)]
    assert all(len(s) == 1 for s in per_sample)  # the whole sample moves together


def test_random_starts_reach_the_cli_and_the_figure(run_id, capsys):
    assert main(["eval-length", run_id, "--lengths", "2", "--offsets", "1,random", "--n", "16", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["exact_match_by_offset"]
    assert set(result["2"]) == {"1", "random"}
    from workbench.figures.builders import offset_curves

    fig = offset_curves({5: {1: 0.2, 9: 1.0, "random": 0.8}}, default_offset=1)
    assert list(fig.data[-1].x) == [1, 9]  # random has no place on the offset axis ...
    assert any("random starts" in (a.text or "") for a in fig.layout.annotations)  # ... it is a dotted level
    with pytest.raises(ConfigError, match="or random"):
        build_task("addition", {}).at_offset("randm")


def test_task_eval_start_random_evaluates_a_run_at_random_starts_and_keeps_old_ids(data_dir):
    from workbench.evaluate import exact_match
    from workbench.probes.id_offset import default_offset

    first = RunConfig.load(None, TINY)
    fair = RunConfig.load(None, [*TINY, "task.eval_start=random", "task.eval_lengths=2", "train.eval_samples=64"])
    assert "eval_start" not in first.canonical_json() and "eval_start" in fair.canonical_json()
    assert default_offset(fair) is None and default_offset(first) == 1
    run = train(fair, progress=False)
    model, task = load_model(open_run(run.run_id))
    assert task.id_offset == "random"
    # what training recorded is the evaluation at random starts, which a later evaluation repeats
    metrics = open_run(run.run_id).metrics()
    recorded = metrics[(metrics.probe == "exact_match") & (metrics.length == 2)].value.iloc[-1]
    assert recorded == exact_match(model, task, 64, eval_generator(0, 2), length=2)[0]


@pytest.mark.parametrize("overrides, message", [
    (["task.eval_start=middle"], "task.eval_start: invalid value 'middle'"),
    (["task.name=parity", "task.eval_start=random"], "task parity has no coupled position ids"),
])
def test_task_eval_start_refuses_bad_values_by_name(overrides, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig.load(None, overrides)
