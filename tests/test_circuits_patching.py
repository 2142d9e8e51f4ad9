"""Activation patching: pairs per task, and a sweep whose numbers can be checked by hand."""
import pytest
import torch

from workbench.circuits.pairs import PAIR_RECIPES, patching_pairs
from workbench.circuits.patching import COLUMNS, HOOKS, Patcher, patching_sweep
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.models import build_model
from workbench.tasks import build_task

MIXERS = ["attention", "linear_attention", "mamba", "s4d", "h3", "hyena", "lstm", "gru"]


def small(task_name="induction", mixer="attention", *extra):
    config = RunConfig.load(None, [f"task.name={task_name}", f"model.mixer={mixer}", "model.n_layers=2",
                                   "model.d_model=16", "model.n_heads=2", *extra])
    task = build_task(config.task.name, config.task.params)
    return build_model(config.model, len(task.vocab), seed=0).eval(), task


@pytest.mark.parametrize("task_name", list(PAIR_RECIPES))
def test_pairs_change_the_answer_and_keep_the_length(task_name):
    _, task = small(task_name)
    pairs = patching_pairs(task, 16, seed=3)
    assert pairs.clean.shape == pairs.corrupted.shape
    assert (pairs.answer != pairs.wrong).all()
    rows = torch.arange(len(pairs))
    before = pairs.answer_position + 1  # tokens up to the answer position decide the answer
    differs = (pairs.clean != pairs.corrupted) & (torch.arange(pairs.clean.shape[1]) < before[:, None])
    assert differs.any(dim=1).all()
    # the clean prompt's next token at the answer position is the answer (teacher forcing shows it)
    if task_name != "mqar":
        assert (pairs.clean[rows, pairs.answer_position + 1] == pairs.answer).all()
        assert (pairs.corrupted[rows, pairs.answer_position + 1] == pairs.wrong).all()
    again = patching_pairs(task, 16, seed=3)
    assert torch.equal(again.corrupted, pairs.corrupted)


def test_pairs_for_an_unsupported_task_name_the_ones_that_have_them():
    _, task = small("parity")
    with pytest.raises(ConfigError, match="induction, associative_recall, mqar, addition, copy"):
        patching_pairs(task, 4)


@pytest.mark.parametrize("mixer", MIXERS)
def test_patching_clean_into_clean_is_bit_for_bit_the_listened_forward(mixer):
    model, task = small("induction", mixer)
    pairs = patching_pairs(task, 3, seed=0)
    pairs.corrupted = pairs.clean.clone()
    with torch.no_grad():
        patcher = Patcher(model, pairs, ["resid_pre", "mixer_out", "units"])
        P, N = patcher.T, len(pairs)
        for layer, component, span in [(1, "resid_pre", None), (0, "mixer_out", None), (1, "units", slice(0, 1))]:
            patched = patcher.answer_logits(layer, component, span)
            with model.hooks({HOOKS[component].format(layer): lambda value, hook: None}):
                reference = model(patcher.expanded_tokens, patcher.expanded_ids)
            reference = reference[torch.arange(P * N), patcher.answer_position].view(P, N, -1)
            assert torch.equal(patched, reference), (mixer, layer, component)


@pytest.mark.parametrize("mixer", MIXERS)
def test_sweep_columns_are_the_same_for_every_mixer(mixer):
    model, task = small("induction", mixer)
    sweep = patching_sweep(model, patching_pairs(task, 2, seed=0), components=("resid_pre", "units"))
    assert list(sweep.columns) == COLUMNS
    assert set(sweep.component) == {"resid_pre", "units"}
    assert (sweep[sweep.component == "resid_pre"].unit == -1).all()
    units = sweep[sweep.component == "units"].unit
    assert units.min() == 0 and units.max() <= 7  # heads, or at most 8 channel groups
    T = task.sequence_length(task.train_lengths()[1])  # a row for every position, the last ones too
    assert len(sweep[(sweep.component == "resid_pre") & (sweep.layer == 0)]) == T


def test_channels_in_groups_by_default_and_every_channel_on_request():
    model, task = small("induction", "mamba")
    pairs = patching_pairs(task, 2, seed=0)
    grouped = patching_sweep(model, pairs, components=("units",))
    every = patching_sweep(model, pairs, components=("units",), unit_groups=None)
    d_inner = model.blocks[0].mixer.d_inner
    assert grouped.unit.nunique() == 8 and every.unit.nunique() == d_inner
    assert grouped.attrs["unit_groups"][0][0] == (0, d_inner // 8)


def test_copy_effects_are_one_where_the_prompts_differ_and_zero_elsewhere():
    """Copy pairs differ at position 1 only (before the answer): patching the embedding stream there
    restores the clean run exactly, anywhere else changes nothing; the last resid_post at the
    answer position is the whole answer."""
    model, task = small("copy", "attention", "model.pos=coupling")
    torch.manual_seed(0)
    pairs = patching_pairs(task, 8, seed=1)
    sweep = patching_sweep(model, pairs, components=("resid_pre", "resid_post"))
    answer = int(pairs.answer_position[0])
    first = sweep[(sweep.component == "resid_pre") & (sweep.layer == 0)].set_index("position").effect
    assert first[1] == pytest.approx(1.0, abs=1e-4)
    assert first.drop(1).abs().max() < 1e-6
    last = sweep[(sweep.component == "resid_post") & (sweep.layer == 1)].set_index("position").effect
    assert last[answer] == pytest.approx(1.0, abs=1e-4)
    assert last.drop(answer).abs().max() < 1e-6
    # the residual stream at a middle layer carries it too, spread over positions 1..answer
    middle = sweep[(sweep.component == "resid_pre") & (sweep.layer == 1)].set_index("position").effect
    assert middle[answer + 1:].abs().max() == 0


def test_sweep_names_a_bad_component():
    model, task = small()
    with pytest.raises(ConfigError, match="components.*resid_pre, mixer_out"):
        patching_sweep(model, patching_pairs(task, 2), components=("heads",))


# --- weights at snapshot steps (probes.weights) ------------------------------------------------
def tiny_run(*extra):
    from workbench.train import train

    return train(RunConfig.load(None, ["task.name=induction", "model.n_layers=1", "model.d_model=16",
                                       "model.n_heads=2", "train.steps=4", "train.batch_size=8",
                                       "probes.every=2", *extra]), progress=False)


def test_a_run_with_snapshot_weights_loads_the_model_of_any_snapshot_step(data_dir):
    from workbench.analysis import load_model

    run = tiny_run("probes.weights=true")
    assert run.weight_steps() == [0, 2, 4]  # probes run before the first step too
    final, _ = load_model(run)
    at_four, _ = load_model(run, step=4)
    at_two, task = load_model(run, step=2)
    assert all(torch.equal(a, b) for a, b in zip(final.state_dict().values(), at_four.state_dict().values()))
    assert not torch.equal(at_two.embed.weight, final.embed.weight)  # two optimizer steps apart
    patching_sweep(at_two, patching_pairs(task, 2), components=("resid_pre",))  # patch the model of step 2
    with pytest.raises(ConfigError, match="step: invalid value 3.*choose one of: 0, 2, 4"):
        load_model(run, step=3)


def test_a_run_without_snapshot_weights_says_how_to_get_them(data_dir):
    from workbench.analysis import load_model

    run = tiny_run()
    assert run.weight_steps() == [] and not (run.path / "snapshots" / "weights").exists()
    with pytest.raises(ConfigError, match="probes.weights=true"):
        load_model(run, step=2)
