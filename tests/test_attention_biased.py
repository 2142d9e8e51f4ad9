"""Attention with a learned bias in training (workbench/models/mixers/attention_biased.py): the output
and every gradient equal scaled_dot_product_attention's bit for bit, and whole training steps of the
relative encodings equal those through scaled_dot_product_attention."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from workbench.models.mixers.attention_biased import biased_attention, needs_bias_gradient
from workbench.models.mixers.common import future_mask

from step_gradients import assert_same_gradients, step_gradients

SHAPES = [(128, 4, 65, 16), (128, 4, 34, 16), (64, 4, 64, 32), (8, 2, 10, 8), (3, 1, 1, 4)]


def forward_and_gradients(attention, q, k, v, bias, grad):
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    mask = leaves[3].masked_fill(future_mask(q.shape[2], q.device), float("-inf"))
    out = attention(*leaves[:3], mask)
    out.backward(grad)
    return [out] + [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("batch, heads, length, head_dim", SHAPES)
@pytest.mark.parametrize("shared_bias", [False, True])
def test_equals_scaled_dot_product_attention_bit_for_bit(batch, heads, length, head_dim, shared_bias):
    generator = torch.Generator().manual_seed(length)
    q, k, v = (torch.randn(batch, heads, length, head_dim, generator=generator) for _ in range(3))
    bias = torch.randn(1 if shared_bias else batch, heads, length, length, generator=generator)
    grad = torch.randn(batch, heads, length, head_dim, generator=generator)
    ours = forward_and_gradients(biased_attention, q, k, v, bias, grad)
    theirs = forward_and_gradients(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                                   q, k, v, bias, grad)
    for name, a, b in zip(("output", "q", "k", "v", "bias"), ours, theirs):
        assert torch.equal(a, b), name


def test_only_a_mask_that_needs_a_gradient_takes_it():
    mask = torch.zeros(2, 2, requires_grad=True)
    assert needs_bias_gradient(mask)
    assert not needs_bias_gradient(mask.detach())
    with torch.no_grad():
        assert not needs_bias_gradient(mask)


@pytest.mark.parametrize("pos", ["coupling_relative", "t5_bias", "fire"])
def test_a_training_step_matches_scaled_dot_product_attention(pos, monkeypatch):
    from workbench.models.mixers import attention as attention_module

    overrides = ["task.name=addition", "task.max_digits=5", "model.n_layers=2", "model.d_model=32", f"model.pos={pos}"]
    ours = step_gradients(overrides)
    monkeypatch.setattr(attention_module, "needs_bias_gradient", lambda mask: False)  # torch's own path
    assert_same_gradients(ours, step_gradients(overrides))
