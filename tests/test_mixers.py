"""Every sequence mixer: causal through the full model, its attention-like map, training, init."""
from __future__ import annotations

import functools
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.models import MIXERS, MixerContext, build_model
from workbench.models.mixers import linear_attention as linear_attention_module
from workbench.models.mixers import s4d as s4d_module
from workbench.kernels import selective_scan_reference
from workbench.tasks import build_task

ALL_MIXERS = MIXERS.names()
VOCAB = 12
T = 12


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def model_config(*overrides: str):
    base = ["model.d_model=16", "model.n_heads=2", "model.n_layers=2", "model.d_state=4"]
    return RunConfig.load(None, base + list(overrides)).model


@functools.lru_cache(maxsize=None)
def tiny_model(mixer: str):
    return build_model(model_config(f"model.mixer={mixer}"), VOCAB, seed=0).eval()


def first_mixer(*overrides: str, seed: int = 0):
    return build_model(model_config("model.n_layers=1", *overrides), VOCAB, seed=seed).blocks[0].mixer


def random_tokens(batch: int, length: int, seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def no_context(x: torch.Tensor) -> MixerContext:
    positions = torch.arange(x.shape[1]).expand(x.shape[0], -1)
    return MixerContext(positions, tiny_model("attention").encoding)


def test_the_zoo_is_registered():
    assert {"attention", "mamba", "s4d", "h3", "linear_attention", "lstm", "gru"} <= set(ALL_MIXERS)


def test_unknown_mixer_names_the_choices():
    with pytest.raises(ConfigError, match="mamba"):
        model_config("model.mixer=mamab")
    with pytest.raises(ConfigError, match="model.layers"):
        model_config("model.layers=attention,mamab")


# --- causality, for every registered mixer ----------------------------------------------------
@pytest.mark.parametrize("mixer", ALL_MIXERS)
@settings(max_examples=6, deadline=None)
@given(cut=st.integers(0, T - 2), seed=st.integers(0, 2**16))
def test_later_tokens_never_change_earlier_outputs(mixer, cut, seed):
    model = tiny_model(mixer)
    tokens = random_tokens(3, T, seed)
    changed = tokens.clone()
    changed[:, cut + 1:] = (tokens[:, cut + 1:] + 1 + random_tokens(3, T - cut - 1, seed + 1) % (VOCAB - 1)) % VOCAB
    with torch.no_grad():
        before, after = model(tokens), model(changed)
    torch.testing.assert_close(after[:, : cut + 1], before[:, : cut + 1], rtol=0, atol=1e-6)
    assert not torch.allclose(after[:, cut + 1:], before[:, cut + 1:])  # the change did reach the model


# --- attention-like maps through hook_pattern -------------------------------------------------
@pytest.mark.parametrize("mixer", ALL_MIXERS)
def test_hook_pattern_gives_a_finite_causal_map_and_leaves_the_output_alone(mixer):
    model = tiny_model(mixer)
    tokens = random_tokens(3, T, seed=1)
    with torch.no_grad():
        plain = model(tokens)
        logits, cache = model.run_with_cache(tokens, names=lambda n: n.endswith(("hook_pattern", "hook_resid_pre")))
    torch.testing.assert_close(logits, plain, rtol=1e-4, atol=1e-5)
    for layer, block in enumerate(model.blocks):
        pattern = cache[f"blocks.{layer}.mixer.hook_pattern"]
        assert pattern.dim() == 4 and pattern.shape[0] == 3 and pattern.shape[2:] == (T, T)
        assert torch.isfinite(pattern).all()
        assert (pattern.triu(diagonal=1) == 0).all(), "a query must not see later keys"
        assert pattern.abs().sum() > 0
        # the hook shows exactly what attention_like computes on the same input
        x = block.norm_mixer(cache[f"blocks.{layer}.hook_resid_pre"])
        positions = model.encoding.positions(tokens, None)
        with torch.no_grad():
            direct = block.mixer.attention_like(x, MixerContext(positions, model.encoding))
        torch.testing.assert_close(direct, pattern, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mixer,heads", [("mamba", 1), ("s4d", 1), ("h3", 1), ("lstm", 1), ("gru", 1),
                                         ("linear_attention", 2), ("attention", 2)])
def test_map_heads(mixer, heads):
    _, cache = tiny_model(mixer).run_with_cache(random_tokens(2, 5, 0), names=lambda n: n.endswith("hook_pattern"))
    assert all(p.shape[1] == heads for p in cache.values())


def test_every_probe_runs_on_every_mixer():
    from workbench.probes import PROBES, run_probes
    from workbench.probes.registry import ProbeContext
    from workbench.tasks import Batch

    tokens = random_tokens(4, T, seed=2)
    batch = Batch(tokens, tokens, torch.ones_like(tokens, dtype=torch.bool))
    config = RunConfig.load(None, ["task.name=copy", "task.alphabet=8"])  # a vocabulary of VOCAB symbols
    context = ProbeContext(build_task("copy", config.task.params), config)  # the memorization probe replays training data
    assert len(context.task.vocab) == VOCAB
    for mixer in ALL_MIXERS:
        result = run_probes(tiny_model(mixer), batch, PROBES.names(), snapshot_examples=1, context=context)
        assert all(math.isfinite(r["value"]) for r in result.rows), mixer
        assert {f"pattern.{i}" for i in range(2)} <= set(result.arrays), mixer


# --- every mixer trains -----------------------------------------------------------------------
@pytest.mark.parametrize("mixer", ALL_MIXERS)
def test_every_mixer_learns_something_of_copy_in_thirty_steps(mixer):
    task = build_task("copy", {"max_length": 6, "alphabet": 5})
    config = RunConfig.load(None, [f"model.mixer={mixer}", "model.d_model=32", "model.n_heads=2",
                                   "model.d_state=8", "task.name=copy"]).model
    model = build_model(config, len(task.vocab), seed=0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(30):
        batch = task.sample(32, generator)
        logits = model(batch.tokens, batch.position_ids)
        loss = F.cross_entropy(logits[batch.loss_mask], batch.targets[batch.loss_mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(x) for x in losses)
    start, end = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    # the answer is one of 5 symbols or EOS: log(6) is guessing; a model that learned nothing sits above it
    assert end < start - 0.3 and end < math.log(6), (start, end)


# --- hybrids --------------------------------------------------------------------------------
def test_hybrid_attention_mamba_builds_and_runs():
    model = build_model(model_config("model.layers=attention,mamba,mamba"), VOCAB, seed=0)
    assert [type(b.mixer).name for b in model.blocks] == ["attention", "mamba", "mamba"]
    logits, cache = model.run_with_cache(random_tokens(2, 7, 0), names=lambda n: n.endswith("hook_pattern"))
    assert logits.shape == (2, 7, VOCAB) and torch.isfinite(logits).all()
    assert [cache[f"blocks.{i}.mixer.hook_pattern"].shape[1] for i in range(3)] == [2, 1, 1]
    logits.sum().backward()  # gradients flow through both kinds of layer


# --- mamba ----------------------------------------------------------------------------------
def test_mamba_reference_initialization_survives_the_model_init():
    mixer = first_mixer("model.mixer=mamba", "model.d_state=16")
    torch.testing.assert_close(mixer.A_log[3], torch.log(torch.arange(1.0, 17.0)))
    delta = F.softplus(mixer.dt_proj.bias)
    assert (delta >= 1e-3 * 0.999).all() and (delta <= 1e-1 * 1.001).all()
    assert mixer.dt_proj.weight.abs().max() <= mixer.dt_rank ** -0.5
    assert mixer.dt_proj.weight.std() > 0.1 * mixer.dt_rank ** -0.5  # not the generic N(0, 0.02)


def test_mamba_init_with_sigma_reparam_keeps_the_effective_weights():
    from workbench.models.linear import effective_weight

    mixer = first_mixer("model.mixer=mamba", "model.sigma_reparam=true")
    torch.testing.assert_close(effective_weight(mixer.dt_proj), mixer.dt_proj.weight)
    torch.testing.assert_close(effective_weight(mixer.x_proj), mixer.x_proj.weight)


def test_mamba_implicit_map_reproduces_the_ssm():
    mixer = first_mixer("model.mixer=mamba").double()
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    with torch.no_grad():
        u, delta, A, B, C, _ = mixer.ssm_inputs(x)
        alpha = mixer.attention_like_per_channel(x, no_context(x))
        expected = selective_scan_reference(u, delta, A, B, C, mixer.D)
        displayed = mixer.attention_like(x, no_context(x))
    assert alpha.shape == (2, mixer.d_inner, 9, 9)
    torch.testing.assert_close(torch.einsum("bdts,bds->bdt", alpha, u) + mixer.D[:, None] * u, expected,
                               rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(displayed, alpha.abs().mean(dim=1, keepdim=True))


def far_to_near(init: str, seed: int, length: int = 48) -> float:
    """Mean |alpha| at lags >= length/2 over mean |alpha| at lags 1..4, on layer-normed noise."""
    mixer = first_mixer("model.mixer=mamba", "model.d_model=32", f"model.ssm_init={init}", seed=seed)
    x = F.layer_norm(torch.randn(4, length, 32, generator=torch.Generator().manual_seed(seed)), (32,))
    with torch.no_grad():
        alpha = mixer.attention_like(x, no_context(x))[:, 0].mean(0)
    lag = torch.arange(length)[:, None] - torch.arange(length)[None, :]
    return float(alpha[lag >= length // 2].mean() / alpha[(lag >= 1) & (lag <= 4)].mean())


@pytest.mark.parametrize("seed", [0, 1])
def test_mimetic_init_makes_the_implicit_map_non_decaying(seed):
    mimetic, default = far_to_near("mimetic", seed), far_to_near("default", seed)
    assert mimetic > default
    assert mimetic > 0.7, "mimetic init: far tokens weigh about as much as near ones"
    assert default < 0.5, "reference init: the map decays with distance"


def test_mimetic_init_parameters():
    mixer = first_mixer("model.mixer=mamba", "model.ssm_init=mimetic")
    assert (torch.exp(mixer.A_log) < 1e-3).all()
    torch.testing.assert_close(F.softplus(mixer.dt_proj.bias), torch.ones(mixer.d_inner))
    W = mixer.x_proj.weight
    W_B = W[mixer.dt_rank: mixer.dt_rank + mixer.d_state]
    W_C = W[mixer.dt_rank + mixer.d_state:]
    assert not torch.equal(W_B, W_C)
    assert (W_C - W_B).norm() < 0.2 * W_B.norm()  # close, not equal
    assert mixer.conv1d.weight[:, 0, :-1].abs().sum() > 0  # conv1d identity is a separate choice, off


def test_mimetic_conv_identity_option():
    mixer = first_mixer("model.mixer=mamba", "model.ssm_init=mimetic")
    mixer.mimetic_init(conv_identity=True)
    x = torch.randn(2, 5, mixer.d_inner)
    torch.testing.assert_close(mixer.conv1d(x.transpose(1, 2))[..., :5], x.transpose(1, 2))


# --- s4d and h3 -----------------------------------------------------------------------------
def test_s4d_toeplitz_map_reproduces_the_convolution(monkeypatch):
    mixer = first_mixer("model.mixer=s4d").double()
    u = torch.randn(2, 16, 11, dtype=torch.float64)
    with torch.no_grad():
        direct = mixer.ssm(u)
        by_map = torch.einsum("cts,bcs->bct", mixer.ssm.toeplitz(11), u)
        monkeypatch.setattr(s4d_module, "FFT_ABOVE", 0)
        by_fft = mixer.ssm(u)
    torch.testing.assert_close(by_map, direct, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(by_fft, direct, rtol=1e-9, atol=1e-9)


def test_s4d_kernel_matches_the_recurrence():
    ssm = s4d_module.DiagonalSSM(3, 8).double()
    dt = torch.exp(ssm.log_dt)[:, None]
    A = torch.complex(-torch.exp(ssm.log_A_real), ssm.A_imag).to(torch.complex128)
    Abar, Bbar = torch.exp(dt * A), (torch.exp(dt * A) - 1) / A  # zero-order hold, B = 1
    C = torch.view_as_complex(ssm.C.contiguous())
    h = torch.zeros_like(Abar)
    responses = []
    for step in range(6):  # impulse at step 0
        h = Abar * h + (Bbar if step == 0 else 0)
        responses.append(2 * (C * h).sum(-1).real)
    torch.testing.assert_close(ssm.kernel(6), torch.stack(responses, dim=-1), rtol=1e-10, atol=1e-10)


def test_h3_map_reproduces_the_layer():
    mixer = first_mixer("model.mixer=h3").double()
    x = torch.randn(2, 10, 16, dtype=torch.float64)
    with torch.no_grad():
        q, shifted, v = mixer.gates(x)
        layer = q * mixer.diagonal(shifted * v)
        M = mixer.attention_like_per_channel(x, no_context(x))
    torch.testing.assert_close(torch.einsum("bdts,bds->bdt", M, v), layer, rtol=1e-10, atol=1e-10)
    with torch.no_grad():
        displayed = mixer.attention_like(x, no_context(x))
    torch.testing.assert_close(displayed, M.abs().mean(dim=1, keepdim=True))


# --- linear attention -----------------------------------------------------------------------
@pytest.mark.parametrize("feature_map", ["elu1", "based"])
def test_linear_attention_recurrent_form_equals_parallel_form(feature_map):
    mixer = first_mixer("model.mixer=linear_attention", f"model.feature_map={feature_map}").double()
    x = torch.randn(3, 13, 16, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(mixer.recurrent(x), mixer(x, no_context(x)), rtol=1e-10, atol=1e-10)
        pattern = mixer.attention_like(x, no_context(x))
    assert pattern.shape == (3, 2, 13, 13) and (pattern >= 0).all()
    torch.testing.assert_close(pattern.sum(-1), torch.ones(3, 2, 13, dtype=torch.float64), rtol=1e-6, atol=1e-6)


def test_based_features_are_the_taylor_expansion_of_exp():
    q, k = torch.randn(5, 16, dtype=torch.float64), torch.randn(5, 16, dtype=torch.float64)
    phi = lambda x: linear_attention_module.feature_map(x, "based")  # noqa: E731
    dot = (q * k).sum(-1) / 4.0  # q.k / sqrt(d')
    torch.testing.assert_close((phi(q) * phi(k)).sum(-1), 1 + dot + dot**2 / 2)


@pytest.mark.parametrize("feature_map", ["elu1", "identity", "based"])
def test_the_parallel_kernel_is_the_feature_maps_dot_product(feature_map):
    # based computes it in closed form (1 + s + s^2 / 2) without building the 273 features per head
    q, k = torch.randn(2, 3, 9, 16, dtype=torch.float64), torch.randn(2, 3, 9, 16, dtype=torch.float64)
    phi = lambda x: linear_attention_module.feature_map(x, feature_map)  # noqa: E731
    torch.testing.assert_close(linear_attention_module.kernel(q, k, feature_map), phi(q) @ phi(k).transpose(-1, -2))


# --- recurrent nets -------------------------------------------------------------------------
@pytest.mark.parametrize("mixer_name", ["lstm", "gru"])
def test_rnn_saliency_is_the_input_gradient(mixer_name):
    mixer = first_mixer(f"model.mixer={mixer_name}")
    x = torch.randn(2, 6, 16)
    with torch.no_grad():  # the probe runs under no_grad; the map still needs autograd
        saliency = mixer.attention_like(x, no_context(x))
    assert saliency.shape == (2, 1, 6, 6)
    assert (saliency.triu(diagonal=1) == 0).all() and (saliency.diagonal(dim1=-2, dim2=-1) > 0).all()
    leaf = x.clone().requires_grad_(True)
    mixer(leaf, no_context(x))[:, 3].sum().backward()
    torch.testing.assert_close(saliency[:, 0, 3], leaf.grad.abs().sum(-1))
    assert all(p.grad is None or p.grad.abs().sum() > 0 for p in mixer.parameters())


# --- state size -----------------------------------------------------------------------------
def test_state_sizes():
    d, n = 16, 4
    expected = {
        "mamba": 2 * d * n + 2 * d * 3,  # d_inner = 2 d, d_conv = 4
        "s4d": d * n,
        "h3": 2 * d * n,
        "linear_attention": 2 * (8 * 8 + 8),  # elu1: 2 heads, feature dim = head dim = 8
        "lstm": 2 * d,
        "gru": d,
    }
    for name, size in expected.items():
        mixer = first_mixer(f"model.mixer={name}")
        assert mixer.state_size(10) == mixer.state_size(1000) == size, name
    based = first_mixer("model.mixer=linear_attention", "model.feature_map=based")
    assert based.state_size(10) == 2 * (273 * 8 + 273)  # 1 + 16 + 16^2 features per head
    attention = first_mixer("model.mixer=attention")
    assert attention.state_size(1000) > attention.state_size(10)  # the cache grows
