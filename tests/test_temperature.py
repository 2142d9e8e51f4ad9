"""Attention temperature after training (workbench.circuits.temperature, `eval-length --temperature`):
the factors multiply exactly the logits, position bias included, head by head; they can be trained with
the weights frozen; the readings that choose them do what they say; bad input is refused by name."""
from __future__ import annotations

import json
import math

import pytest
import torch

from workbench.analysis import evaluate_temperatures, load_model
from workbench.circuits.temperature import (aligned_scale, attention_temperature, mean_answer_statistic,
                                            parse_temperatures, scaled_exact_match, search_uniform_scale,
                                            train_head_scales)
from workbench.cli import main
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.evaluate import eval_generator, exact_match
from workbench.models import model_for_task
from workbench.store import open_run
from workbench.tasks import build_task
from workbench.train import train

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(pos: str, seed: int = 0):
    config = RunConfig.load(None, ["task.name=passkey", "task.min_length=4", "task.max_length=8", "task.digits=2",
                                   f"model.pos={pos}", "model.n_layers=2", "model.d_model=16", "model.n_heads=2"])
    task = build_task(config.task.name, config.task.params)
    torch.manual_seed(seed)
    return model_for_task(config.model, task).eval(), task


def _scores_and_patterns(model, tokens, factors=None):
    names = [f"blocks.{layer}.mixer.{hook}" for layer in range(2) for hook in ("hook_scores", "hook_pattern")]
    if factors is None:
        return model.run_with_cache(tokens, names=names)[1]
    with attention_temperature(model, factors):
        return model.run_with_cache(tokens, names=names)[1]


@pytest.mark.parametrize("pos", ["nope", "t5_bias", "alibi"])
def test_a_factor_multiplies_each_heads_whole_logits_bias_included(pos):
    model, task = _model(pos)
    tokens = task.sample(3, torch.Generator().manual_seed(0), length=8).tokens
    with torch.no_grad():
        plain = model(tokens)
        with attention_temperature(model, 1.0):
            assert torch.allclose(model(tokens), plain, atol=1e-5)  # factor 1 changes nothing
        factors = torch.tensor([[2.0, 1.0], [1.0, 0.5]])
        hot = _scores_and_patterns(model, tokens, factors)
        # the first layer's inputs are untouched, so its logits can be compared with the plain model's
        cold = _scores_and_patterns(model, tokens)
    scores = cold["blocks.0.mixer.hook_scores"]
    expected = (scores * factors[0].view(1, -1, 1, 1)).softmax(-1)
    assert torch.allclose(hot["blocks.0.mixer.hook_pattern"], expected, atol=1e-5)
    assert torch.allclose(hot["blocks.0.mixer.hook_pattern"][:, 1], cold["blocks.0.mixer.hook_pattern"][:, 1],
                          atol=1e-6), "a head with factor 1 keeps its attention"


def test_splitting_the_forward_passes_reads_the_same_samples():
    model, task = _model("t5_bias")
    whole = exact_match(model, task, 40, eval_generator(0, 12), length=12, chunk=32)
    split = exact_match(model, task, 40, eval_generator(0, 12), length=12, chunk=32, forward_batch=5)
    assert split[0] == whole[0] and math.isclose(split[1], whole[1], rel_tol=1e-5)


def test_the_factors_get_finite_gradients_where_logits_are_masked():
    model, task = _model("t5_bias")  # the bias path: the factor multiplies the masked T x T logits
    batch = task.sample(4, torch.Generator().manual_seed(1), length=8)
    factors = torch.full((2, 2), 1.5, requires_grad=True)
    with attention_temperature(model, factors):
        model(*batch.inputs()).logsumexp(-1).mean().backward()
    assert factors.grad is not None and bool(torch.isfinite(factors.grad).all()) and factors.grad.abs().sum() > 0


def test_head_factors_train_with_the_weights_frozen_and_never_fall_below_the_floor():
    model, task = _model("nope")
    weights = {name: p.detach().clone() for name, p in model.named_parameters()}
    heads = train_head_scales(model, task, length=16, start=1.0, seed=0, steps=20, batch_size=4, lr=0.5)
    assert heads.shape == (2, 2) and bool((heads >= 1.0).all()) and not heads.requires_grad
    assert bool((heads != 1.0).any()), "the factors moved"
    assert all(torch.equal(p, weights[name]) for name, p in model.named_parameters())
    assert all(p.requires_grad for p in model.parameters()), "the weights train again afterwards"


def test_the_uniform_search_picks_the_grids_lowest_validation_loss():
    model, task = _model("nope")
    best, losses = search_uniform_scale(model, task, 16, n=8, seed=0, grid=(1.0, 2.0, 4.0))
    assert list(losses) == [1.0, 2.0, 4.0] and losses[best] == min(losses.values())
    # the loss it reports is the one a reader of that factor gets on the validation samples
    from workbench.circuits.temperature import held_out
    assert losses[2.0] == scaled_exact_match(model, task, 2.0, 8, held_out("validation", 0, 16), 16)[1]


@pytest.mark.parametrize("by", ["entropy", "max_prob"])
def test_the_aligned_factor_brings_the_answer_statistic_back_to_the_reference(by):
    model, task = _model("nope")
    assert aligned_scale(model, task, 8, reference_length=8, n=8, seed=0, by=by) == 1.0  # nothing to align
    target = mean_answer_statistic(model, task, 8, 8, 0, by=by)
    factor = aligned_scale(model, task, 64, reference_length=8, n=8, seed=0, by=by)
    if factor not in (1.0, 16.0):  # inside the range the bisection lands on the target
        assert math.isclose(mean_answer_statistic(model, task, 64, 8, 0, factor, by), target, rel_tol=0.02)


def test_the_answer_max_probability_is_the_answer_rows_largest_weight():
    from workbench.evaluate import eval_generator as stream
    from workbench.probes.entropy_length import answer_max_probability, answer_queries

    model, task = _model("t5_bias")
    batch = task.sample(4, stream(0, 16), length=16, train=False)
    patterns = model.run_with_cache(batch.tokens, names=["blocks.1.mixer.hook_pattern"])[1]
    rows = answer_queries(batch)
    expected = patterns["blocks.1.mixer.hook_pattern"].transpose(1, 2)[rows].amax(-1).mean(0)
    assert torch.allclose(answer_max_probability(model, task, 16, 4, seed=0)[1], expected)
    # sharper attention at the answer: a larger factor raises it
    low, high = (mean_answer_statistic(model, task, 16, 4, 0, factor, "max_prob") for factor in (1.0, 4.0))
    assert high > low


def test_an_unknown_alignment_is_refused_by_name():
    model, task = _model("nope")
    with pytest.raises(ConfigError, match="alignment: invalid value 'mean'; expected one of entropy, max_prob"):
        aligned_scale(model, task, 16, 8, n=4, seed=0, by="mean")


@pytest.mark.parametrize("text, message", [
    ("0", "--temperature: invalid value 0.0; expected a factor > 0"),
    ("1,warm", "--temperature: invalid value 'warm'"),
    ("", "--temperature"),
    ("nan", "--temperature: invalid value 'nan'"),
])
def test_bad_temperatures_are_refused_by_name(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_temperatures(text)


def test_a_factor_table_of_the_wrong_shape_is_refused_by_name():
    model, _ = _model("nope")
    with pytest.raises(ConfigError, match=r"temperature factors: invalid value \(3,\)"):
        with attention_temperature(model, torch.ones(3)):
            pass
    with pytest.raises(ConfigError, match="temperature factors: invalid value -1"):
        with attention_temperature(model, -1.0):
            pass


TINY = ["task.name=passkey", "task.min_length=4", "task.max_length=8", "task.digits=2", "model.pos=nope",
        "model.n_layers=1", "model.d_model=16", "model.n_heads=2", "train.steps=10", "train.batch_size=16",
        "train.warmup=2", "train.eval_every=0", "probes.every=0", "train.threads=1"]


@pytest.fixture
def run_id(data_dir) -> str:
    return train(RunConfig.load(None, TINY), progress=False).run_id


def test_evaluate_temperatures_reads_the_same_samples_and_stores_nothing(run_id):
    before = len(open_run(run_id).metrics())
    calls = []
    curves = evaluate_temperatures(run_id, "8,16", "1,2,uniform,aligned", n=16,
                                   progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 2), (2, 2)] and list(curves) == [8, 16]
    assert list(curves[8]) == ["x1", "x2", "uniform", "aligned"] and curves[8]["x2"]["factor"] == 2.0
    model, task = load_model(open_run(run_id))
    assert curves[16]["x1"]["exact_match"] == exact_match(model, task, 16, eval_generator(0, 16), length=16)[0]
    assert curves[8]["aligned"]["factor"] == 1.0, "at the longest trained length there is nothing to align"
    assert len(open_run(run_id).metrics()) == before


def test_eval_length_temperature_in_text_and_json(run_id, capsys):
    assert main(["eval-length", run_id, "--lengths", "8,16", "--temperature", "1,1.5", "--n", "8", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["exact_match_by_temperature"]
    assert set(result) == {"8", "16"} and set(result["8"]) == {"x1", "x1.5"}
    assert main(["eval-length", run_id, "--lengths", "8,16", "--temperature", "1,1.5", "--n", "8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["length", "x1", "x1.5"] and lines[2].split()[0] == "8"


@pytest.mark.parametrize("args, message", [
    (["--temperature", "-2"], "--temperature: invalid value -2.0"),
    (["--temperature", "1", "--entropy"], "leave out --entropy and --examples"),
    (["--temperature", "1", "--offsets", "1"], "one sweep at a time"),
])
def test_eval_length_temperature_refuses_bad_input_in_one_line(run_id, capsys, args, message):
    assert main(["eval-length", run_id, "--lengths", "8", "--n", "4", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_model_without_attention_is_refused(data_dir, capsys):
    rnn = train(RunConfig.load(None, [*TINY, "model.mixer=lstm"]), progress=False).run_id
    assert main(["eval-length", rnn, "--lengths", "8", "--temperature", "1.5"]) == 2
    assert "--temperature" in capsys.readouterr().err


def test_the_temperature_figure_has_a_line_per_reading():
    from workbench.figures.builders import temperature_curves

    curves = {32: {"x1": {"exact_match": 1.0, "factor": 1.0}, "uniform": {"exact_match": 1.0, "factor": 1.0}},
              1024: {"x1": {"exact_match": 0.1, "factor": 1.0}, "uniform": {"exact_match": 0.9, "factor": 1.6}}}
    fig = temperature_curves(curves, train_length=32)
    assert [trace.name for trace in fig.data] == ["x1", "uniform"] and fig.layout.xaxis.type == "log"
    # on a log axis the mark's name sits at log10(32), inside the curves' range, not at x = 32 (10^32)
    assert [a.x for a in fig.layout.annotations if a.text == "longest trained"] == [pytest.approx(math.log10(32))]


def test_a_reading_keeps_its_colour_in_every_row_of_the_experiment_figure():
    import pandas as pd

    from workbench.figures.lengthgen import flattening_curves

    rows = [{"model": model, "pos": model.split("-")[0], "seed": 0, "filler": filler, "answer_entropy": 1.0,
             "exact_match": 0.5} for model in ("nope", "nope-uniform", "nope-head", "t5_bias", "t5_bias-uniform",
                                               "t5_bias-maxprob") for filler in (32, 64)]
    fig = flattening_curves(pd.DataFrame(rows), 32, by="pos")
    colours = {trace.legendgroup: trace.line.color for trace in fig.data if trace.mode == "lines+markers"}
    assert colours["nope"] == colours["t5_bias"] and colours["nope-uniform"] == colours["t5_bias-uniform"]
    assert len({colours["nope-head"], colours["t5_bias-maxprob"], colours["nope-uniform"], colours["nope"]}) == 4
