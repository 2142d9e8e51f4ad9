"""Attention's head width (model.attention_head_dim): the default splits d_model as always (same run
ids, same layer); a width of its own gives each head its own projections, so the layer's parameters
grow with n_heads at a fixed d_model, and every path through the layer computes the same function."""
from __future__ import annotations

import pytest
import torch

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.interop.architectures import architecture_for
from workbench.models import build_model
from workbench.probes.spectral import query_key_products

VOCAB, T = 11, 7

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def model(*overrides: str, dtype=torch.float64):
    config = RunConfig.load(None, ["model.d_model=8", "model.n_layers=2", *overrides])
    return build_model(config.model, VOCAB, seed=0).to(dtype)


def tokens(batch: int = 3) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, T), generator=torch.Generator().manual_seed(0))


def test_the_default_keeps_every_run_id():
    # ids computed before model.attention_head_dim existed
    assert RunConfig.load(None, []).run_id == "d3f0ec239136"
    assert RunConfig.load(None, ["model.pos=rope", "model.n_heads=4"]).run_id == "de19ca498f10"
    assert RunConfig.load(None, ["model.layers=attention,h3"]).run_id == "8da5094884db"
    config = RunConfig.load(None, ["model.attention_head_dim=0"])
    assert config.run_id == "d3f0ec239136" and "attention_head_dim" not in config.canonical_json()
    assert RunConfig.load(None, ["model.attention_head_dim=32"]).run_id != "d3f0ec239136"


def test_heads_of_their_own_width_grow_the_layer_linearly_with_heads():
    sizes = {}
    for heads in (1, 2, 4, 8):
        mixer = model(f"model.n_heads={heads}", "model.attention_head_dim=8").blocks[0].mixer
        assert tuple(mixer.qkv.weight.shape) == (3 * heads * 8, 8) and tuple(mixer.out.weight.shape) == (8, heads * 8)
        sizes[heads] = sum(p.numel() for p in mixer.parameters())
    # 3 H e d + 3 H e (qkv) + d H e + d (out), e = d = 8: 280 H + 8
    assert sizes == {h: 280 * h + 8 for h in (1, 2, 4, 8)}
    # the default splits d_model: 4 heads of 2 channels, the same layer as one head of 8
    split = model("model.n_heads=4").blocks[0].mixer
    assert tuple(split.qkv.weight.shape) == (24, 8) and split.head_dim == 2


@pytest.mark.parametrize("pos", ["nope", "learned", "rope", "alibi", "t5_bias"])
def test_every_path_computes_the_same_layer(pos):
    """Training on the CPU takes the fused path (or SDPA with a bias); a listener on the pattern takes
    the explicit one; their outputs and gradients agree in float64."""
    net = model("model.n_heads=4", "model.attention_head_dim=6", f"model.pos={pos}").train()
    x = tokens()
    fused = net(x)
    fused.sum().backward()
    fused_grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    quiet = {f"blocks.{i}.mixer.hook_pattern": (lambda value, hook: None) for i in range(2)}
    with net.hooks(quiet):
        explicit = net(x)
    explicit.sum().backward()
    torch.testing.assert_close(fused, explicit)
    for a, p in zip(fused_grads, net.parameters()):
        torch.testing.assert_close(a, p.grad)
    _, cache = net.run_with_cache(x, names=lambda name: name.endswith(("hook_units", "hook_pattern")))
    assert tuple(cache["blocks.0.mixer.hook_units"].shape) == (3, T, 4, 6)
    assert tuple(cache["blocks.0.mixer.hook_pattern"].shape) == (3, 4, T, T)


def test_rope_rotates_the_heads_own_width():
    net = model("model.n_heads=2", "model.attention_head_dim=12", "model.pos=rope")
    assert net.encoding.frequencies.numel() == 6


def test_spectral_probe_reads_each_heads_projections():
    mixer = model("model.n_heads=4", "model.attention_head_dim=8", dtype=torch.float32).blocks[0].mixer
    products = query_key_products(mixer)
    w = mixer.qkv.weight.detach()
    assert tuple(products.shape) == (4, 8, 8)
    torch.testing.assert_close(products[2], w[16:24].T @ w[32 + 16:32 + 24])


def test_bad_widths_are_refused_by_name():
    with pytest.raises(ConfigError, match="model.attention_head_dim") as error:
        RunConfig.load(None, ["model.attention_head_dim=-1"])
    assert "-1" in str(error.value)
    with pytest.raises(ConfigError, match="model.attention_head_dim.*unknown setting"):
        RunConfig.load(None, ["model.mixer=mamba", "model.attention_head_dim=8"])


def test_export_refuses_heads_of_their_own_width():
    config = RunConfig.load(None, ["model.n_heads=4", "model.attention_head_dim=8"])
    with pytest.raises(ConfigError, match="model.attention_head_dim.*d_model / n_heads = 16"):
        architecture_for(config.model)
    same = RunConfig.load(None, ["model.n_heads=4", "model.attention_head_dim=16"])
    assert architecture_for(same.model).MODEL_TYPE == "gpt2"  # the even split, written out, still exports
