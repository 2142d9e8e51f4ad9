"""The model: hooks are free and faithful, outputs are causal, positions work beyond training."""
import pytest
import torch

from workbench.config import RunConfig
from workbench.models import MixerContext, build_model
from workbench.probes import probe_names, run_probes
from workbench.tasks import build_task


def make(*overrides):
    config = RunConfig.load(None, ["model.d_model=32", "model.n_heads=2", *overrides])
    task = build_task(config.task.name, config.task.params)
    return config, task, build_model(config.model, len(task.vocab), seed=0).eval()


def test_listening_to_hooks_never_changes_logits():
    _, task, model = make("model.pos=coupling")
    batch = task.sample(8, torch.Generator().manual_seed(0))
    with torch.no_grad():
        plain = model(batch.tokens, batch.position_ids)
        cached, cache = model.run_with_cache(batch.tokens, batch.position_ids)
    torch.testing.assert_close(plain, cached, rtol=1e-5, atol=1e-5)
    assert "blocks.0.mixer.hook_pattern" in cache and "blocks.1.mlp.hook_post" in cache
    pattern = cache["blocks.0.mixer.hook_pattern"]
    torch.testing.assert_close(pattern.sum(-1), torch.ones_like(pattern.sum(-1)))
    assert torch.all(pattern.triu(1) == 0), "attention must be causal"


def test_probes_do_not_change_the_output_or_training_mode():
    config, task, model = make()
    model.train()
    batch = task.sample(4, torch.Generator().manual_seed(1))
    with torch.no_grad():
        before = model.eval()(batch.tokens, batch.position_ids)
    model.train()
    result = run_probes(model, batch, probe_names(config.probes), snapshot_examples=1)
    assert model.training
    with torch.no_grad():
        after = model.eval()(batch.tokens, batch.position_ids)
    torch.testing.assert_close(before, after)
    probes = {r["probe"] for r in result.rows}
    assert {"entropy", "entropy_normalized", "mlp_nonzero_fraction"} <= probes
    assert result.arrays["pattern.0"].shape[0] == 1


@pytest.mark.parametrize("pos", ["learned", "nope", "rope", "alibi", "coupling", "sinusoidal"])
def test_outputs_are_causal_and_positions_reach_four_times_training_length(pos):
    _, task, model = make(f"model.pos={pos}")
    batch = task.sample(3, torch.Generator().manual_seed(2), length=40, train=False)  # trained up to 10
    with torch.no_grad():
        logits = model(batch.tokens, batch.position_ids)
        cut = 20
        changed = batch.tokens.clone()
        changed[:, cut:] = 3
        logits_changed = model(changed, batch.position_ids)
    assert torch.isfinite(logits).all()
    torch.testing.assert_close(logits[:, :cut], logits_changed[:, :cut])


def test_hook_listeners_can_edit_activations():
    _, task, model = make()
    batch = task.sample(2, torch.Generator().manual_seed(3))
    with torch.no_grad():
        plain = model(batch.tokens)
        with model.hooks({"blocks.1.hook_resid_post": lambda value, hook: torch.zeros_like(value)}):
            zeroed = model(batch.tokens)
    assert not torch.allclose(plain, zeroed)
    assert torch.allclose(zeroed, zeroed[:, :1].expand_as(zeroed))  # a constant residual gives constant logits


def test_a_kept_q_is_the_projection_and_the_pattern_is_the_same_with_or_without_it():
    # Without a q listener the hooked forward scales q in place (attention.scores); a listener's q
    # must stay the unscaled projection, and the pattern must not depend on who listens.
    _, task, model = make()
    batch = task.sample(4, torch.Generator().manual_seed(4))
    pattern, q = "blocks.0.mixer.hook_pattern", "blocks.0.mixer.hook_q"
    with torch.no_grad():
        _, alone = model.run_with_cache(batch.tokens, names=[pattern])
        _, both = model.run_with_cache(batch.tokens, names=[pattern, q])
        x = model.blocks[0].norm_mixer(model.embed(batch.tokens) + model.encoding.embed(
            model.encoding.positions(batch.tokens, None)))
        B, T, D = x.shape
        expected = model.blocks[0].mixer.qkv(x)[..., :D].view(B, T, 2, D // 2).transpose(1, 2)
    assert torch.equal(alone[pattern], both[pattern])
    assert torch.equal(both[q], expected)


def test_hook_points_are_named_once_and_handed_out_as_a_copy():
    _, _, model = make()
    points = model.hook_points()
    points.clear()
    assert "blocks.0.mixer.hook_pattern" in model.hook_points()
    assert all(point.name == name for name, point in model.hook_points().items())


@pytest.mark.parametrize("scheme", ["gpt2", "fan_in"])
def test_init_scheme_sets_the_scale_of_every_linear_and_embedding(scheme):
    config = RunConfig.load(None, ["model.d_model=64", "model.mlp_ratio=4", f"model.init={scheme}"])
    model = build_model(config.model, vocab_size=20, seed=0)
    fc_out = model.blocks[0].mlp.fc_out.weight  # fan-in 256: the two schemes differ
    qkv, embed = model.blocks[0].mixer.qkv.weight, model.embed.weight
    if scheme == "gpt2":
        assert fc_out.std().item() == pytest.approx(0.02, rel=0.05)
        assert qkv.std().item() == pytest.approx(0.02, rel=0.05) and embed.std().item() == pytest.approx(0.02, rel=0.2)
    else:
        assert fc_out.std().item() == pytest.approx(256 ** -0.5, rel=0.05)
        assert qkv.std().item() == pytest.approx(64 ** -0.5, rel=0.05) and embed.std().item() == pytest.approx(1.0, rel=0.2)


def test_rmsnorm_and_no_mlp_make_mambas_own_block():
    """model.norm=rmsnorm, model.mlp_ratio=0: x + mixer(RMSNorm(x)) per block, nothing else stored."""
    config, task, model = make("model.mixer=mamba", "model.pos=nope", "model.norm=rmsnorm", "model.mlp_ratio=0",
                               "model.d_state=4")
    assert all(block.mlp is None and block.norm_mlp is None for block in model.blocks)
    assert isinstance(model.norm_final, torch.nn.RMSNorm) and model.norm_final.eps == 1e-5
    assert not any(".mlp." in name or "norm_mlp" in name or name.endswith("norm_final.bias")
                   for name in model.state_dict())
    batch = task.sample(4, torch.Generator().manual_seed(4))
    with torch.no_grad():
        x = model.embed(batch.tokens)
        block = model.blocks[0]
        context = MixerContext(model.encoding.positions(batch.tokens, None), model.encoding)
        expected = x + block.mixer(torch.nn.functional.rms_norm(x, (32,), block.norm_mixer.weight, 1e-5), context)
        torch.testing.assert_close(block(x, context), expected)
    # the default probes run: sparsity finds no MLP to read, the snapshot has the scan's implicit map
    result = run_probes(model, batch, probe_names(config.probes), snapshot_examples=1)
    assert not any(r["probe"] == "mlp_nonzero_fraction" for r in result.rows) and "pattern.0" in result.arrays


def test_the_default_norm_is_layernorm_with_eps_1e_5():
    _, _, model = make()
    norms = [model.norm_final] + [n for b in model.blocks for n in (b.norm_mixer, b.norm_mlp)]
    assert all(type(n) is torch.nn.LayerNorm and n.eps == 1e-5 and n.bias is not None for n in norms)
