"""The sequence-mixer experiments in fast mode (tables, summaries, figures), and every registered
mixer trained from the command line with no code change."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import pytest
import torch

from workbench.analysis import load_model
from workbench.cli import main
from workbench.evaluate import eval_generator, token_accuracy
from workbench.experiments import EXPERIMENTS, get_experiment, run_experiment
from workbench.experiments.mixers.common import steps_to_reach
from workbench.experiments.mixers.copy_state import D_STATES, STATE_LENGTHS, classify
from workbench.experiments.mixers.markov_icl import MARKOV_LENGTH, excess_loss
from workbench.experiments.mixers.mqar_vs_width import MQAR_EVAL_SAMPLES, TARGET_WIDTH
from workbench.figures.mixers import accuracy_vs_width
from workbench.models import MIXERS
from workbench.store import Run, data_root
from workbench.tasks import build_task
from workbench.tasks.common import symbol_names
from workbench.train import train

MIXER_EXPERIMENTS = ("mimetic-recall", "mqar-vs-width", "mqar-default-init", "copy-vs-length", "copy-state-size",
                     "markov-icl", "markov-conv-window", "hybrids")


def test_the_mixer_experiments_are_registered():
    assert set(MIXER_EXPERIMENTS) <= set(EXPERIMENTS)


def test_steps_to_reach_is_the_first_evaluation_at_the_threshold():
    curve = pd.Series([0.1, 0.95, 0.5, 0.99], index=[10, 20, 30, 40])
    assert steps_to_reach(curve, 0.9) == 20
    assert math.isinf(steps_to_reach(curve, 0.999))


def _check_result(result):
    assert len(result.table) > 0
    assert isinstance(result.summary["headline"], str) and result.summary["headline"]
    assert set(result.outcomes) == {claim.key for claim in EXPERIMENTS[result.name].claims}
    assert isinstance(result.figure(), go.Figure)


def test_mimetic_recall_fast(data_dir):
    result = run_experiment("mimetic-recall", fast=True, progress=False)
    _check_result(result)
    table = result.table
    assert set(table.init) == {"default", "mimetic"} and set(table.task) == {"copy", "associative_recall"}
    maps = table[table.metric == "implicit_attention"]
    assert sorted(maps.step.unique()) == [0, 4]  # a map at init and one after training
    assert (maps.value >= 0).all() and (maps[maps.key > maps["query"]].value == 0).all()  # causal
    assert set(result.summary["steps_to_threshold"]) == {"copy", "associative_recall"}
    assert set(result.outcomes["recall"].per_seed) == {"0"}  # each seed's steps are shown


def test_mqar_vs_width_fast(data_dir):
    result = run_experiment("mqar-vs-width", fast=True, progress=False)
    _check_result(result)
    table = result.table
    assert set(table.mixer) == {"attention", "mamba", "linear_attention", "h3", "hyena"}
    assert table.query_accuracy.between(0, 1).all()
    assert set(table.pairs) == {2, 4, 8}
    state = table[table.pairs == 8].set_index("mixer").state_size
    assert state["attention"] == 2 * 2 * 32 * 32  # the key-value cache of 2 layers grows with the 32 tokens
    assert (state > 0).all()


def test_mqar_default_init_fast(data_dir):
    result = run_experiment("mqar-default-init", fast=True, progress=False)
    _check_result(result)
    configs = [variant.config.model for variant in get_experiment("mqar-default-init").variants(False)]
    assert {(m.init, m.d_model, m.mixer) for m in configs} == {("gpt2", TARGET_WIDTH, "attention")}
    assert set(result.summary["query_accuracy"]) == {"1000"} and result.summary["pairs"] == [2, 4, 8]
    assert result.outcomes["default-init-6x"].verdict == "not tested"  # the fast mode trains the first budget only


def test_mqar_figure_draws_a_median_line_and_seed_band_per_mixer_in_each_pairs_panel():
    rows = [{"mixer": mixer, "width": width, "pairs": pairs, "seed": seed, "state_size": width * 10,
             "query_accuracy": accuracy + 0.1 * seed}
            for mixer, accuracy in (("attention", 0.7), ("hyena", 0.1)) for width in (32, 64)
            for pairs in (2, 8) for seed in (0, 1, 2)]
    fig = accuracy_vs_width(pd.DataFrame(rows))
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(lines) == len(bands) == 4  # 2 mixers x 2 panels, each with its band
    attention = next(t for t in lines if t.name == "attention")
    assert list(attention.y) == pytest.approx([80.0, 80.0])  # the median of 70, 80, 90
    assert list(attention.customdata) == [320, 640] and "state" in attention.hovertemplate
    band = next(t for t in bands if t.legendgroup == "attention")
    assert max(band.y) == pytest.approx(90.0) and min(band.y) == pytest.approx(70.0)
    assert [t.showlegend for t in lines] == [True, True, False, False]  # one legend entry per mixer


@pytest.mark.slow
def test_attention_answers_99_percent_of_mqar_queries_at_width_64(data_dir):
    """The issue's bar (Zoology: attention ~100% at every width), with the experiment's own recipe;
    with GPT-2's 0.02 init this model stalls near 43% per query at 8 pairs."""
    variant = next(v for v in get_experiment("mqar-vs-width").variants(False)
                   if v.labels["mixer"] == "attention" and v.labels["width"] == TARGET_WIDTH)
    model, task = load_model(train(variant.config, progress=False))
    for pairs in (2, 4, 8):
        accuracy = token_accuracy(model, task, MQAR_EVAL_SAMPLES, eval_generator(variant.config.train.seed, pairs),
                                  length=pairs)
        assert accuracy >= 0.99, (pairs, accuracy)


def test_copy_vs_length_fast(data_dir):
    result = run_experiment("copy-vs-length", fast=True, progress=False)
    _check_result(result)
    table = result.table
    assert result.summary["mamba_state_fixed"]  # the same state at every length
    attention = table[table.mixer == "attention"].sort_values("length").state_size
    assert attention.is_monotonic_increasing and attention.nunique() > 1  # the cache grows
    assert set(table.init) == {"fan_in", "gpt2"}  # the paper's default init beside ours, both models
    assert set(result.summary["default_init_exact_match_at_longest"]) == {"attention", "mamba"}
    assert {trace.name for trace in result.figure().data} >= {"mamba, default init (state 2,816, fixed)"}


def test_copy_state_size_fast(data_dir):
    result = run_experiment("copy-state-size", fast=True, progress=False)
    _check_result(result)
    numbers = result.summary["state_size"]
    assert [numbers[str(d)] for d in D_STATES] == sorted(set(numbers.values()))  # the state grows with d_state
    assert set(result.summary["runs"]) == {str(d) for d in D_STATES}
    ticks = result.figure().layout.xaxis.ticktext
    assert ticks[-1] == f"{max(STATE_LENGTHS)}<br>{3 * max(STATE_LENGTHS)} bits"  # 8 letters: 3 bits a symbol


@pytest.mark.parametrize("curve,status", [
    ({4: 1.0, 8: 0.9, 12: 1.0}, "cannot learn"),  # a training length below 95%
    ({4: 1.0, 8: 1.0, 12: 0.5, 16: 0.0}, "does not generalize"),  # 36 bits, a state of 40 numbers
    ({4: 1.0, 8: 1.0, 12: 1.0, 16: 0.2}, "cannot hold"),  # 48 bits
    ({4: 1.0, 8: 1.0, 12: 0.95, 16: 0.91}, "copies every length"),
])
def test_a_copy_run_is_sorted_by_where_it_first_fails(curve, status):
    record = classify(curve, state_numbers=40, bits_per_symbol=3.0)
    assert record["status"] == status
    assert record["copies_up_to"] == {"cannot learn": 4, "does not generalize": 8, "cannot hold": 12,
                                      "copies every length": 16}[status]


def test_markov_icl_fast(data_dir):
    result = run_experiment("markov-icl", fast=True, progress=False)
    _check_result(result)
    table = result.table
    assert list(table.columns) == ["mixer", "seed", "position", "excess_loss"]
    assert set(table.mixer) == {"mamba", "attention", "lstm"} and sorted(table.position.unique()) == list(
        range(1, MARKOV_LENGTH + 1))
    assert {"excess_second_half", "uniform_gap_second_half", "parameters", "headline"} <= set(result.summary)
    assert set(result.summary["excess_second_half"]) == {"mamba", "attention", "lstm"}
    assert result.summary["uniform_gap_second_half"] > 0
    assert {outcome.verdict for outcome in result.outcomes.values()} == {"not tested"}  # a few steps test nothing


def test_markov_conv_window_fast(data_dir):
    """Every window trains on order-2 chains and is scored per position, beside the lower-order Laplace
    estimators (reference lines, not runs); a few steps decide nothing."""
    result = run_experiment("markov-conv-window", fast=True, progress=False)
    _check_result(result)
    table = result.table
    assert {v["config"]["model"]["d_conv"] for v in result.runs} == {1, 2, 3, 4}
    assert {v["config"]["task"]["params"]["order"] for v in result.runs} == {2}
    assert set(table.mixer) == {"window 1", "window 2", "window 3", "window 4", "Laplace, order 0 (reference)",
                                "Laplace, order 1 (reference)"}
    assert set(result.summary["excess_second_half"]) == {"1", "2", "3", "4"}
    lower = result.summary["laplace_excess_second_half"]
    assert lower["0"] > lower["1"] > 0  # conditioning on more of the context pays on an order-2 chain
    assert {outcome.verdict for outcome in result.outcomes.values()} == {"not tested"}


def test_the_lower_order_laplace_estimators_fall_short_of_the_chains_own():
    from workbench.experiments.mixers.markov_icl import laplace_excess

    task = build_task("markov_icl", {"states": 3, "order": 2, "min_length": 64, "max_length": 64})
    excess = {order: laplace_excess(task, order, 256, eval_generator(0, 64), 64) for order in (0, 1, 2)}
    assert excess[2].abs().max() < 1e-12  # the chain's own order: Bayes itself
    assert excess[1][32:].mean() > 0.03 and excess[0][32:].mean() > excess[1][32:].mean()


def test_hybrids_fast(data_dir):
    """Every model on both tasks trains and is scored at every test length; each model's parameters are
    reported (the four cost about the same), and a few steps decide nothing."""
    result = run_experiment("hybrids", fast=True, progress=False)
    _check_result(result)
    table = result.table
    assert set(table.task) == {"mqar", "copy"} and set(table.model) == {"attention", "mamba", "hybrid", "hybrid-below"}
    assert sorted(table[table.task == "mqar"].length.unique()) == [4, 8, 16]
    assert table[["exact_match", "query_accuracy"]].apply(lambda v: v.between(0, 1)).all().all()
    parameters = result.summary["parameters"]
    assert max(parameters.values()) <= 1.15 * min(parameters.values()), parameters  # one budget for all four
    assert {outcome.verdict for outcome in result.outcomes.values()} == {"not tested"}
    layers = {variant["labels"]["model"]: variant["config"]["model"]["layers"] for variant in result.runs}
    assert layers["hybrid"] == "mamba,attention" and layers["hybrid-below"] == "attention,mamba"


class _Counter(torch.nn.Module):
    """A 'model' that predicts an order-1 chain from add-one (Laplace) counts of the transitions in its
    context, written apart from the task's bayes_loss; uniform=True ignores the context instead."""

    def __init__(self, task, uniform=False):
        super().__init__()
        self.states, self.vocab, self.uniform = task.params.states, len(task.vocab), uniform
        self.first = task.vocab[symbol_names(task.params.states, "s")[0]]

    def forward(self, tokens, position_ids=None):
        B, T = tokens.shape
        S, x = self.states, tokens - self.first  # x[:, t] is the symbol before target t (t >= 1)
        counts = torch.zeros(B, S, S, dtype=torch.float64)
        logits = torch.full((B, T, self.vocab), -math.inf, dtype=torch.float64)
        rows = torch.arange(B)
        for t in range(T):
            if t >= 2:
                counts[rows, x[:, t - 1], x[:, t]] += 1
            if t == 0 or self.uniform:
                probs = torch.full((B, S), 1 / S, dtype=torch.float64)
            else:
                seen = counts[rows, x[:, t]]
                probs = (seen + 1) / (seen.sum(-1, keepdim=True) + S)
            logits[:, t, self.first:self.first + S] = probs.log()
        return logits


def test_excess_loss_is_zero_for_laplace_counting_and_positive_for_the_uniform_predictor():
    task = build_task("markov_icl", {"states": 3, "order": 1, "min_length": 32, "max_length": 32})
    laplace = excess_loss(_Counter(task), task, 64, eval_generator(0, 32), 32)
    assert laplace.shape == (32,) and laplace.abs().max() < 1e-9
    uniform = excess_loss(_Counter(task, uniform=True), task, 64, eval_generator(0, 32), 32)
    assert uniform[0].abs() < 1e-9 and uniform[16:].mean() > 0.05  # counting pays off once there is context


@pytest.mark.parametrize("mixer", MIXERS.names())
def test_every_mixer_trains_from_the_command_line(mixer, data_dir, capsys):
    code = main(["train", f"model.mixer={mixer}", "task.name=copy", "task.max_length=4", "model.d_model=16",
                 "model.n_heads=2", "model.n_layers=1", "model.d_state=4", "train.steps=3", "train.batch_size=4",
                 "train.eval_samples=8", "train.warmup=1", "probes.every=2", "--quiet"])
    assert code == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    run = Run(data_root() / run_id)
    assert run.status()["status"] == "completed"
    arrays, _ = run.snapshot(run.snapshot_steps()[-1])
    pattern = arrays["pattern.0"]
    assert pattern.dim() == 4 and pattern.shape[-1] == pattern.shape[-2]  # (examples, heads, T, T)


def test_a_seed_without_a_gap_cannot_decide_whether_the_hybrid_closes_it():
    from workbench.experiments.mixers.hybrids import decide_closes

    def scores(attention, mamba, hybrid):
        return {"attention": attention, "mamba": mamba, "hybrid": hybrid, "hybrid-below": mamba}

    by_seed = {"0": scores(1.0, 0.95, 1.0), "1": scores(0.5, 0.1, 0.5), "2": scores(1.0, 0.1, 0.95),
               "3": scores(1.0, 0.2, 0.5)}
    summary = {"fast": False, "scores": {"mqar": {name: {seed: s[name] for seed, s in by_seed.items()}
                                                  for name in by_seed["0"]}}}
    outcome = decide_closes("mqar")(summary)
    # seed 0: Mamba within 10 points; seed 1: attention never fit; seed 2 closes 94%; seed 3 closes 38%
    assert outcome.passed == {"0": None, "1": None, "2": True, "3": False}
    assert outcome.verdict == "inconclusive"
