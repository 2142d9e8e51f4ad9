"""Fused causal attention trains to the same numbers as the modules it replaces, bit for bit."""
import pytest
import torch
import torch.nn.functional as F
from test_model import make

import workbench.models.mixers.attention as attention
from workbench.models.mixers.attention_fused import causal_attention


def logits_and_grads(model, batch):
    model.zero_grad(set_to_none=True)
    logits = model(batch.tokens, batch.position_ids)
    F.cross_entropy(logits[batch.loss_mask], batch.targets[batch.loss_mask]).backward()
    return logits.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("overrides", [[], ["model.sigma_reparam=true"], ["model.n_layers=3", "model.n_heads=4"],
                                       ["model.pos=nope", "task.name=copy"]])
def test_fused_path_matches_the_module_path_bitwise(overrides, monkeypatch):
    config, task, model = make(*overrides)
    model.train()
    batch = task.sample(16, torch.Generator().manual_seed(0))
    start = {k: v.clone() for k, v in model.state_dict().items()}  # sigmaReparam updates u each forward

    calls = []
    monkeypatch.setattr(attention, "causal_attention", lambda *args: calls.append(1) or causal_attention(*args))
    fused_logits, fused_grads = logits_and_grads(model, batch)
    assert len(calls) == config.model.n_layers, "the fused path was not taken"

    model.load_state_dict(start)
    monkeypatch.setattr(attention.Attention, "fused_training", lambda self, x, context: False)
    module_logits, module_grads = logits_and_grads(model, batch)

    assert torch.equal(fused_logits, module_logits)
    assert fused_grads.keys() == module_grads.keys()
    for name in fused_grads:
        assert torch.equal(fused_grads[name], module_grads[name]), name


@pytest.mark.parametrize("overrides", [["model.pos=rope"], ["model.pos=alibi"], ["model.gated_attention=true"],
                                       ["model.softmax=clipped"], ["model.logit_scaling=true"],
                                       ["model.scalable_softmax=true"]])
def test_what_the_fused_path_does_not_cover_takes_the_module_path(overrides, monkeypatch):
    _, task, model = make(*overrides)
    model.train()
    calls = []
    monkeypatch.setattr(attention, "causal_attention", lambda *args: calls.append(1) or causal_attention(*args))
    batch = task.sample(4, torch.Generator().manual_seed(0))
    model(batch.tokens, batch.position_ids).sum().backward()
    with torch.no_grad():
        model(batch.tokens, batch.position_ids)
    assert calls == []


def test_listening_or_evaluating_takes_the_module_path(monkeypatch):
    config, task, model = make()
    model.train()
    calls = []
    monkeypatch.setattr(attention, "causal_attention", lambda *args: calls.append(1) or causal_attention(*args))
    batch = task.sample(4, torch.Generator().manual_seed(0))
    _, cache = model.run_with_cache(batch.tokens, batch.position_ids, names=lambda n: n.endswith("hook_pattern"))
    with torch.no_grad():
        model(batch.tokens, batch.position_ids)
    assert calls == [] and len(cache) == config.model.n_layers


def test_gradients_agree_with_finite_differences():
    generator = torch.Generator().manual_seed(0)
    x, w_qkv, b_qkv, w_out, b_out = (torch.randn(*shape, dtype=torch.float64, generator=generator, requires_grad=True)
                                     for shape in [(2, 5, 4), (12, 4), (12,), (4, 4), (4,)])
    assert torch.autograd.gradcheck(lambda *args: causal_attention(*args, 2), (x, w_qkv, b_qkv, w_out, b_out))
