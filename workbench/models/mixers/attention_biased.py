"""Causal attention with a learned logit bias, in training: torch's own arithmetic, minus one guard.

When the attention mask needs a gradient (a learned relative bias: coupling_relative, t5_bias, FIRE),
scaled_dot_product_attention on the CPU runs its math path: scale q and k by sqrt(scale) each,
multiply, add the mask, a "safe" softmax, multiply by v. The safe softmax zeroes rows whose every
logit is -inf, and finding them (isneginf, all, where over the B x H x T x T logits, and their
backward) took about a quarter of the layer's time (35 -> 27 ms forward and backward at B 128, T 65).
Under a causal mask every query sees at least itself and the bias is finite, so no row is ever
fully masked and the guard changes nothing. This composes the same operations without it: the
output and the gradients of q, k, v and the bias are those of scaled_dot_product_attention bit for
bit (tests/test_attention_biased.py compares them; a torch that composes its math path differently
fails that test rather than drifting).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor


def biased_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
    """softmax(q k^T / sqrt(head_dim) + mask) v for (B, H, T, head_dim) inputs and a (B or 1, H or 1,
    T, T) additive mask holding -inf above the diagonal."""
    root_scale = math.sqrt(1.0 / math.sqrt(q.shape[-1]))  # each side carries sqrt(scale), as torch's math path
    scores = torch.matmul(q * root_scale, k.transpose(-2, -1) * root_scale) + mask
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def needs_bias_gradient(mask: Tensor) -> bool:
    """Whether scaled_dot_product_attention would take its math path for this mask (see above)."""
    return torch.is_grad_enabled() and mask.requires_grad and mask.device.type == "cpu"
