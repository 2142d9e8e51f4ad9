"""Head detectors: hand-built maps give the scores they must, and every mixer gets its rows."""
import pytest
import torch

from workbench.circuits.detectors import (answer_induction_scores, answer_sources, detector_scores, head_scores,
                                         model_head_scores, repeated_sequences)
from workbench.config import RunConfig
from workbench.models import build_model
from workbench.probes.runner import run_probes
from workbench.probes.registry import ProbeContext
from workbench.tasks import build_task

MIXERS = ["attention", "linear_attention", "mamba", "s4d", "h3", "hyena", "lstm", "gru"]
L = 8


def small(mixer="attention", layers=1, *extra):
    config = RunConfig.load(None, ["task.name=induction", f"model.mixer={mixer}", f"model.n_layers={layers}",
                                   "model.d_model=16", "model.n_heads=2", *extra])
    task = build_task(config.task.name, config.task.params)
    return build_model(config.model, len(task.vocab), seed=0).eval(), task, config


def forced(offset_of):
    """A hook_pattern listener that replaces every head's map by a one-hot map: row t attends to
    offset_of(t) (clamped to the causal range)."""
    def listener(value, hook):
        B, H, T, _ = value.shape
        target = torch.tensor([min(max(offset_of(t), 0), t) for t in range(T)])
        return torch.nn.functional.one_hot(target, T).float().expand(B, H, T, T).clone()
    return listener


def scores_of(model, tokens):
    table = head_scores(model, tokens, L)
    return table.groupby("detector").score.mean().to_dict()


def test_a_forced_previous_token_map_scores_previous_token_only():
    model, task, _ = small()
    tokens = repeated_sequences(torch.arange(3, len(task.vocab)), 4, L, seed=0, bos=1)
    with model.hooks({"blocks.0.mixer.hook_pattern": forced(lambda t: t - 1)}):
        scores = scores_of(model, tokens)
    assert scores["previous_token"] == pytest.approx(1.0)
    assert scores["induction"] == pytest.approx(0.0) and scores["duplicate_token"] == pytest.approx(0.0)


def test_a_forced_induction_map_scores_induction_only():
    model, task, _ = small()
    tokens = repeated_sequences(torch.arange(3, len(task.vocab)), 4, L, seed=0, bos=1)
    # after the BOS, position t of the second half (t >= L + 1) looks at t - L + 1
    with model.hooks({"blocks.0.mixer.hook_pattern": forced(lambda t: t - L + 1 if t > L else 0)}):
        scores = scores_of(model, tokens)
    assert scores["induction"] == pytest.approx(1.0)
    assert scores["duplicate_token"] == pytest.approx(0.0)
    assert scores["previous_token"] < 0.6  # only the first query of the second half also is t - 1


def test_the_answer_source_of_an_induction_prompt_is_the_symbol_after_the_first_trigger():
    _, task, _ = small()
    batch = task.sample(8, torch.Generator().manual_seed(3), train=False)
    rows, queries, sources = answer_sources(batch.tokens, batch.loss_mask)
    assert torch.equal(rows, torch.arange(8))
    assert (batch.tokens[rows, queries] == task.vocab["@"]).all()
    assert torch.equal(sources, batch.meta["trigger"] + 2)  # BOS, then the context; the follower of '@'


def test_a_map_on_the_answer_source_scores_answer_induction_one_and_a_uniform_map_far_less():
    model, task, _ = small()
    batch = task.sample(8, torch.Generator().manual_seed(3), train=False)
    rows, queries, sources = answer_sources(batch.tokens, batch.loss_mask)
    source_of = dict(zip(queries.tolist(), sources.tolist()))

    def on_source(value, hook):  # every row: one-hot on the source of its sample's answer
        out = torch.zeros_like(value)
        for b, (t, s) in enumerate(zip(queries.tolist(), sources.tolist())):
            out[b, :, :, 0] = 1.0
            out[b, :, t, 0] = 0.0
            out[b, :, t, s] = 1.0
        return out

    with model.hooks({"blocks.0.mixer.hook_pattern": on_source}):
        scores = answer_induction_scores(model, batch)
    assert (scores.score == 1.0).all() and set(scores.detector) == {"answer_induction"} and len(source_of) >= 1
    uniform = answer_induction_scores(model, batch).score.max()  # an untrained model spreads its weight
    assert uniform < 0.5


def test_scores_of_a_uniform_map_are_one_over_the_row_length():
    maps = torch.tril(torch.ones(1, 1, 2 * L + 1, 2 * L + 1))
    maps = maps / maps.sum(-1, keepdim=True)
    scores = detector_scores(maps, L)
    rows = torch.arange(L + 1, 2 * L + 1)
    assert scores["induction"].item() == pytest.approx((1.0 / (rows + 1)).mean().item())


def test_repeated_sequences_repeat_distinct_symbols():
    tokens = repeated_sequences(torch.arange(3, 20), 5, L, seed=1, bos=1)
    assert tokens.shape == (5, 2 * L + 1) and (tokens[:, 0] == 1).all()
    assert torch.equal(tokens[:, 1:L + 1], tokens[:, L + 1:])
    assert all(len(set(row.tolist())) == L for row in tokens[:, 1:L + 1])


@pytest.mark.parametrize("mixer", MIXERS)
def test_every_mixer_gets_scores_in_the_unit_interval(mixer):
    model, task, config = small(mixer, layers=2)
    table = model_head_scores(model, torch.arange(3, len(task.vocab)), n=4, length=L)
    assert list(table.columns) == ["layer", "unit", "detector", "score"]
    assert set(table.layer) == {0, 1} and set(table.detector) == {"previous_token", "duplicate_token", "induction"}
    assert table.score.between(0, 1 + 1e-6).all()
    units = table[(table.layer == 0) & (table.detector == "induction")].unit.tolist()
    channels = {"mamba": 2 * 16, "s4d": 16, "h3": 16, "hyena": 16}  # mamba's d_inner = expand x d_model
    expected = {"attention": [0, 1], "linear_attention": [0, 1], "lstm": [-1], "gru": [-1]}
    assert units == expected.get(mixer, list(range(channels.get(mixer, 0))))


@pytest.mark.parametrize("mixer", ["attention", "mamba", "gru"])
def test_the_heads_probe_records_metric_rows(mixer):
    model, task, config = small(mixer, layers=2)
    batch = task.sample(4, torch.Generator().manual_seed(0))
    result = run_probes(model, batch, ["heads"], context=ProbeContext(task, config))
    probes = {r["probe"] for r in result.rows}
    # induction prompts ask for induction at their answer, so the probe also scores it there
    assert probes == {"induction_score", "previous_token_score", "duplicate_token_score", "answer_induction_score"}
    heads = {r["head"] for r in result.rows if r["layer"] == 1 and r["probe"] == "induction_score"}
    assert heads == {"attention": {0, 1}, "mamba": {-1, -2}, "gru": {-1}}[mixer]
    again = run_probes(model, batch, ["heads"], context=ProbeContext(task, config))
    assert [r["value"] for r in again.rows] == [r["value"] for r in result.rows]  # the same sequences
