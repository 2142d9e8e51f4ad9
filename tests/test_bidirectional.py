"""Bidirectional attention (model.bidirectional): every query sees every real key, padding stays hidden,
the fast and explicit paths agree, and the models that cannot see later tokens are refused."""
from __future__ import annotations

import pytest
import torch

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.models.transformer import build_model


def model(*overrides: str):
    config = RunConfig.load(None, ["model.bidirectional=true", "model.d_model=32", "model.n_heads=4", *overrides])
    return build_model(config.model, 20, seed=0).eval()


def tokens(seed: int = 0) -> torch.Tensor:
    sequences = torch.randint(3, 20, (3, 9), generator=torch.Generator().manual_seed(seed))
    sequences[:, 0] = 1
    return sequences


def test_the_first_position_reads_the_last_token():
    bidirectional, x = model(), tokens()
    changed = x.clone()
    changed[:, -1] = torch.where(x[:, -1] == 5, 6, 5)
    with torch.no_grad():
        assert not torch.allclose(bidirectional(x)[:, 0], bidirectional(changed)[:, 0])
        causal = build_model(RunConfig.load(None, ["model.d_model=32", "model.n_heads=4"]).model, 20, seed=0).eval()
        assert torch.equal(causal(x)[:, 0], causal(changed)[:, 0])


@pytest.mark.parametrize("pos", ["learned", "rope", "nope"])
def test_padding_on_the_right_changes_nothing(pos):
    bidirectional, x = model(f"model.pos={pos}"), tokens()
    padded = torch.cat([x, torch.zeros(3, 5, dtype=torch.long)], 1)
    with torch.no_grad():
        assert torch.allclose(bidirectional(padded)[:, :9], bidirectional(x), atol=1e-5)


def test_the_listened_pattern_is_what_the_fast_path_computes():
    bidirectional = model("model.softmax=standard")
    padded = torch.cat([tokens(), torch.zeros(3, 2, dtype=torch.long)], 1)
    with torch.no_grad():
        fast = bidirectional(padded)
        listened, cache = bidirectional.run_with_cache(padded, None, names=["blocks.0.mixer.hook_pattern",
                                                                            "blocks.0.mixer.hook_entropy"])
    pattern = cache["blocks.0.mixer.hook_pattern"]
    assert torch.allclose(listened, fast, atol=1e-5)
    assert torch.allclose(pattern.sum(-1), torch.ones_like(pattern[..., 0]), atol=1e-5)
    assert (pattern[..., -2:] == 0).all() and (pattern[..., 0, 1:9] > 0).all()  # later keys seen, PAD not
    assert cache["blocks.0.mixer.hook_entropy"].shape == pattern.shape[:3]


def test_it_trains():
    bidirectional = model()
    bidirectional.train()
    bidirectional(tokens()).logsumexp(-1).mean().backward()
    assert all(p.grad is not None for p in bidirectional.parameters())


@pytest.mark.parametrize("overrides, field", [(["model.mixer=mamba"], "model.bidirectional"),
                                              (["model.layers=attention,gru"], "model.bidirectional"),
                                              (["model.pos=alibi"], "model.pos"), (["model.pos=t5_bias"], "model.pos")])
def test_what_cannot_see_later_tokens_is_refused(overrides, field):
    with pytest.raises(ConfigError, match=field):
        RunConfig.load(None, ["model.bidirectional=true", *overrides])


def test_causal_runs_keep_their_ids():
    assert RunConfig.load(None, ["model.bidirectional=false"]).run_id == RunConfig.load(None, []).run_id
    assert RunConfig.load(None, ["model.bidirectional=true"]).run_id != RunConfig.load(None, []).run_id
