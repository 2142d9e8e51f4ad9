"""Interventions at hook points (workbench.circuits.interventions) and the recurrent-state hook
(mixers/state.py), for every mixer: exact where nothing changes, causal where a state is patched."""
from __future__ import annotations

import functools

import pytest
import torch

from workbench.circuits.interventions import (intervened, mean_activation, mean_ablate, patch, replace,
                                              run_with_interventions, zero)
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.models import build_model
from workbench.models.mixers import MIXERS
from workbench.models.mixers import attention as attention_module
from workbench.models.mixers import state as state_module

ALL_MIXERS = MIXERS.names()
STATEFUL = [name for name in ALL_MIXERS if MIXERS.get(name).has_state]
VOCAB, T, BATCH = 12, 10, 3


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def build(mixer: str, layers: int = 2):
    overrides = [f"model.mixer={mixer}", "model.d_model=16", "model.n_heads=2", f"model.n_layers={layers}",
                 "model.d_state=4", "model.init=fan_in"]  # fan_in: states large enough to matter
    return build_model(RunConfig.load(None, overrides).model, VOCAB, seed=0).eval()


@functools.lru_cache(maxsize=None)
def tiny_model(mixer: str):
    return build(mixer)


def tokens(seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, T), generator=torch.Generator().manual_seed(seed))


def corrupted(clean: torch.Tensor, position: int = 2) -> torch.Tensor:
    """clean with one token changed, at `position` of every example."""
    other = clean.clone()
    other[:, position] = (clean[:, position] + 1) % VOCAB
    return other


def supported_hooks(model) -> list[str]:
    names = []
    for i, block in enumerate(model.blocks):
        names += [f"blocks.{i}.hook_resid_pre", f"blocks.{i}.hook_mixer_out", f"blocks.{i}.mixer.hook_units"]
        if block.mlp is not None:
            names.append(f"blocks.{i}.hook_mlp_out")
        if block.mixer.has_state:
            names.append(f"blocks.{i}.mixer.hook_state")
    return names


def nobody_listens(model) -> bool:
    return not any(point.active for point in model.hook_points().values())


@pytest.mark.parametrize("mixer", ALL_MIXERS)
def test_patching_a_clean_cache_into_its_own_run_changes_no_bit(mixer):
    model, clean = tiny_model(mixer), tokens()
    names = supported_hooks(model)
    with torch.no_grad():
        _, cache = model.run_with_cache(clean, names=names)
        with model.expose(names):
            listened = model(clean)
    patched = run_with_interventions(model, clean, [patch(name, cache) for name in names])
    assert torch.equal(patched, listened)


@pytest.mark.parametrize("mixer", STATEFUL)
def test_a_state_listener_that_changes_nothing_leaves_the_fast_forward_bit_for_bit(mixer):
    model, clean = tiny_model(mixer), tokens()
    names = [f"blocks.{i}.mixer.hook_state" for i in range(len(model.blocks))]
    with torch.no_grad():
        plain = model(clean)
        _, cache = model.run_with_cache(clean, names=names)
    assert torch.equal(run_with_interventions(model, clean, [patch(name, cache) for name in names]), plain)
    assert torch.equal(run_with_interventions(model, clean, [patch(names[0], cache, positions=4)]), plain)


@pytest.mark.parametrize("mixer", STATEFUL)
def test_an_unlistened_state_is_never_computed(mixer, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the state trajectory was computed though nobody listens")

    monkeypatch.setattr(state_module, "trajectory", refuse)
    with torch.no_grad():
        tiny_model(mixer)(tokens())


@pytest.mark.parametrize("mixer", ALL_MIXERS)
def test_zeroing_a_layers_mixer_output_changes_the_logits(mixer):
    model, clean = tiny_model(mixer), tokens()
    with torch.no_grad():
        plain = model(clean)
    ablated = run_with_interventions(model, clean, [zero("blocks.0.hook_mixer_out")])
    assert not torch.allclose(ablated, plain)


@pytest.mark.parametrize("mixer", STATEFUL)
def test_a_patched_state_changes_only_what_comes_after_it(mixer):
    model, clean = tiny_model(mixer), tokens()
    other, p = corrupted(clean), 5
    with torch.no_grad():
        _, cache = model.run_with_cache(clean, names=["blocks.0.mixer.hook_state"])
        before = model(other)
    after = run_with_interventions(model, other, [patch("blocks.0.mixer.hook_state", cache, positions=p)])
    assert torch.equal(after[:, :p], before[:, :p])
    assert not torch.allclose(after[:, p:], before[:, p:])


@pytest.mark.parametrize("mixer", STATEFUL)
def test_with_the_clean_state_patched_in_the_rest_of_the_run_follows_the_clean_run(mixer):
    """One layer; the runs differ at token 2 only. From position 7 on (past Mamba's convolution and
    H3's shift filter, 4 taps each) the inputs agree, so the clean state at 7 makes the outputs clean."""
    model = build(mixer, layers=1)
    clean = tokens()
    other, p = corrupted(clean), 7
    with torch.no_grad():
        clean_logits, cache = model.run_with_cache(clean, names=["blocks.0.mixer.hook_state"])
        before = model(other)
    after = run_with_interventions(model, other, [patch("blocks.0.mixer.hook_state", cache, positions=p)])
    assert not torch.allclose(before[:, p:], clean_logits[:, p:], atol=1e-4)
    torch.testing.assert_close(after[:, p:], clean_logits[:, p:], atol=1e-5, rtol=1e-5)
    assert torch.equal(after[:, :p], before[:, :p])


@pytest.mark.parametrize("mixer", STATEFUL)
def test_a_state_patched_at_one_position_per_example_follows_each_example(mixer):
    model, clean = tiny_model(mixer), tokens()
    other, where = corrupted(clean, position=1), torch.tensor([3, 6, 8])
    with torch.no_grad():
        _, cache = model.run_with_cache(clean, names=["blocks.0.mixer.hook_state"])
        before = model(other)
    after = run_with_interventions(model, other, [patch("blocks.0.mixer.hook_state", cache, positions=where)])
    for example, p in enumerate(where.tolist()):
        assert torch.equal(after[example, :p], before[example, :p])
        assert not torch.allclose(after[example, p:], before[example, p:])


@pytest.mark.parametrize("mixer", ALL_MIXERS)
def test_zeroing_a_unit_is_zeroing_it_by_hand(mixer):
    model, clean = tiny_model(mixer), tokens()
    hook = "blocks.0.mixer.hook_units"

    def by_hand(value, point):
        value = value.clone()
        value[:, :, 0] = 0.0
        return value

    with torch.no_grad(), model.hooks({hook: by_hand}):
        expected = model(clean)
    assert torch.equal(run_with_interventions(model, clean, [zero(hook, units=0)]), expected)
    assert torch.equal(run_with_interventions(model, clean, [zero(hook, units=[0])]), expected)
    with torch.no_grad():
        plain = model(clean)
    assert not torch.allclose(expected, plain)


def test_replace_takes_the_chosen_units_and_positions_from_a_per_position_value():
    model, clean = tiny_model("attention"), tokens()
    hook = "blocks.1.mixer.hook_units"
    with torch.no_grad():
        _, cache = model.run_with_cache(clean, names=[hook])
    units, width = cache[hook].shape[2:]
    value = torch.arange(units * width, dtype=torch.float32).view(units, width)

    def by_hand(hooked, point):
        hooked = hooked.clone()
        hooked[:, [2, 4], 1] = value[1]
        return hooked

    with torch.no_grad(), model.hooks({hook: by_hand}):
        expected = model(clean)
    assert torch.equal(run_with_interventions(model, clean, [replace(hook, value, positions=[2, 4], units=1)]),
                       expected)


@pytest.mark.parametrize("positions", [3, -1, [1, 4], slice(2, 5), torch.tensor([0, 5, 9])])
def test_positions_choose_what_is_zeroed(positions):
    model, clean = tiny_model("mamba"), tokens()
    hook = "blocks.1.hook_resid_pre"
    chosen = torch.zeros(BATCH, T, dtype=torch.bool)
    if isinstance(positions, torch.Tensor):
        chosen[torch.arange(BATCH), positions] = True
    else:
        chosen[:, positions] = True

    def by_hand(value, point):
        return value.masked_fill(chosen[..., None], 0.0)

    with torch.no_grad(), model.hooks({hook: by_hand}):
        expected = model(clean)
    assert torch.equal(run_with_interventions(model, clean, [zero(hook, positions=positions)]), expected)


def test_mean_ablation_writes_the_mean_over_batch_and_positions():
    model, clean = tiny_model("gru"), tokens()
    hook = "blocks.0.hook_mixer_out"
    mean = mean_activation(model, clean, hook)
    with torch.no_grad():
        _, cache = model.run_with_cache(clean, names=[hook])
    assert mean.shape == cache[hook].shape[2:]
    torch.testing.assert_close(mean, cache[hook].mean(dim=(0, 1)))
    expected = run_with_interventions(model, clean, [replace(hook, mean, positions=[3])])
    assert torch.equal(run_with_interventions(model, clean, [mean_ablate(hook, mean, positions=[3])]), expected)
    pattern_mean = mean_activation(model, clean, "blocks.0.mixer.hook_pattern")
    assert pattern_mean.shape == (1, 1, T)  # (H, 1, T): the head-first hooks keep their head axis


def test_an_unknown_hook_lists_close_matches_first():
    model = tiny_model("mamba")
    with pytest.raises(ConfigError, match=r"hook: invalid value 'blocks.0.mixer.hook_stat'; hook points of this "
                                          r"model: blocks.0.mixer.hook_state"):
        run_with_interventions(model, tokens(), [zero("blocks.0.mixer.hook_stat")])


def test_attention_has_no_state_hook():
    with pytest.raises(ConfigError, match="hook_state"):
        run_with_interventions(tiny_model("attention"), tokens(), [zero("blocks.0.mixer.hook_state")])


@pytest.mark.parametrize("positions, message", [
    (10, r"positions: invalid value 10; positions in \[-10, 10\)"),
    ([0, -11], r"positions: invalid value -11; positions in \[-10, 10\)"),
    (torch.tensor([1, 2, 12]),
     r"positions: invalid value 12; positions in \[-10, 10\) \(sequence length 10; example 2\)"),
    (torch.tensor([1, 2]), r"one integer position per example, shape \(3,\)"),
    (1.5, r"positions: invalid value 1.5; an int, a list of ints or a slice of positions"),
])
def test_bad_positions_say_what_is_allowed(positions, message):
    with pytest.raises(ConfigError, match=message):
        run_with_interventions(tiny_model("gru"), tokens(), [zero("blocks.0.hook_resid_pre", positions=positions)])


def test_units_only_on_the_unit_hook_and_within_range():
    with pytest.raises(ConfigError, match=r"units: invalid value 0; hook 'blocks.0.hook_mixer_out' has no unit axis"):
        zero("blocks.0.hook_mixer_out", units=0)
    with pytest.raises(ConfigError, match=r"units: invalid value 2; heads or channels in \[-2, 2\)"):
        run_with_interventions(tiny_model("attention"), tokens(), [zero("blocks.0.mixer.hook_units", units=2)])


def test_a_shape_mismatch_names_both_shapes():
    hook = "blocks.0.hook_resid_pre"
    with pytest.raises(ConfigError, match=r"patch value shape: invalid value \(3, 9, 16\); the hooked value that "
                                          r"broadcasts to the value at 'blocks.0.hook_resid_pre', \(3, 10, 16\)"):
        run_with_interventions(tiny_model("gru"), tokens(), [patch(hook, torch.zeros(3, 9, 16))])
    with pytest.raises(ConfigError, match=r"patch source: invalid value 'blocks.0.hook_resid_pre'; the cache has "
                                          r"no value for this hook \(it holds: blocks.1.hook_resid_pre\)"):
        patch(hook, {"blocks.1.hook_resid_pre": torch.zeros(1)})
    model = tiny_model("gru")
    with pytest.raises(ConfigError, match=r"blocks.0.mixer.hook_state: invalid value \(3, 10, 16, 2\); a state "
                                          r"trajectory of the shape the mixer gave, \(3, 10, 16\)"):
        with model.hooks({"blocks.0.mixer.hook_state": lambda value, point: torch.zeros(3, 10, 16, 2)}):
            model(tokens())


@pytest.mark.parametrize("mixer", ["attention", "mamba"])
def test_listeners_leave_with_the_context_even_on_an_exception(mixer):
    model, clean = tiny_model(mixer), tokens()
    with torch.no_grad():
        plain = model(clean)
    with pytest.raises(RuntimeError, match="boom"):
        with intervened(model, [zero(name) for name in supported_hooks(model)]):
            raise RuntimeError("boom")
    assert nobody_listens(model)
    with pytest.raises(ConfigError):
        run_with_interventions(model, clean, [zero("blocks.0.hook_resid_pre"), zero("blocks.0.hook_resid_pre", 99)])
    assert nobody_listens(model)
    with torch.no_grad():
        assert torch.equal(model(clean), plain)


def test_run_with_interventions_restores_the_training_mode():
    model = build("attention")
    model.train()
    logits = run_with_interventions(model, tokens(), [zero("blocks.0.hook_mlp_out")])
    assert model.training and not logits.requires_grad
    assert run_with_interventions(model, tokens(), [], grad=True).requires_grad


def test_training_keeps_attentions_fused_path_when_nobody_listens(monkeypatch):
    calls = []
    fused = attention_module.causal_attention

    def counted(*args):
        calls.append(1)
        return fused(*args)

    monkeypatch.setattr(attention_module, "causal_attention", counted)
    model = build("attention").train()
    model(tokens()).sum().backward()
    assert len(calls) == 2
    run_with_interventions(model, tokens(), [zero("blocks.0.mixer.hook_units", units=0)], grad=True)
    assert len(calls) == 3  # layer 0's units listened to: it leaves the fused path; layer 1 keeps it
    model.train()
    with intervened(model, [zero("blocks.1.hook_resid_pre")]):
        model(tokens()).sum().backward()  # the residual stream alone: attention stays fused
    model(tokens()).sum().backward()
    assert len(calls) == 7
