"""Plain causal attention's training step in one autograd function: the same numbers, fewer copies.

Autograd through qkv-linear -> split heads -> scaled_dot_product_attention -> merge heads ->
out-linear stacks the three head gradients into one buffer, copies it into the projection's
layout and copies it once more inside the linear layer's backward. This function calls the same
kernels (addmm, PyTorch's CPU flash attention and its backward) and writes the three head
gradients straight into the projection's layout in one pass, so outputs and gradients are bitwise
those of the modules (tests/test_attention_fused.py) with ~3 copies of the qkv activations saved
per layer and step.

Attention uses it only for what it covers: training on the CPU, standard softmax, no position
bias or rotation, no logit scaling, no gate and nobody listening to the pattern, scores or entropy.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from ..linear import linear_backward

_flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_flash_backward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


class _CausalAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, w_qkv: Tensor, b_qkv: Tensor, w_out: Tensor, b_out: Tensor, n_heads: int) -> Tensor:
        B, T, D = x.shape
        rows = x.reshape(B * T, D)
        inner = w_qkv.shape[0] // 3  # n_heads * head_dim: d_model unless the heads have a width of their own
        qkv = torch.addmm(b_qkv, rows, w_qkv.t())
        q, k, v = qkv.view(B, T, 3, n_heads, inner // n_heads).permute(2, 0, 3, 1, 4)
        mixed, logsumexp = _flash(q, k, v, 0.0, True)
        merged = mixed.transpose(1, 2).reshape(B * T, inner)
        out = torch.addmm(b_out, merged, w_out.t())
        ctx.save_for_backward(rows, w_qkv, qkv, mixed, logsumexp, merged, w_out)
        ctx.n_heads = n_heads
        return out.view(B, T, w_out.shape[0])

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out: Tensor):
        rows, w_qkv, qkv, mixed, logsumexp, merged, w_out = ctx.saved_tensors
        B, T, H, D, inner = mixed.shape[0], mixed.shape[2], ctx.n_heads, rows.shape[1], w_qkv.shape[0] // 3
        grad_merged, grad_w_out, grad_b_out = linear_backward(grad_out.reshape(B * T, -1), merged, w_out)
        grad_mixed = grad_merged.view(B, T, H, inner // H).transpose(1, 2)
        q, k, v = qkv.view(B, T, 3, H, inner // H).permute(2, 0, 3, 1, 4)
        grads = _flash_backward(grad_mixed, q, k, v, mixed, logsumexp, 0.0, True)
        # (B, T, 3, H, head_dim): the projection's own layout, written in one pass
        grad_qkv = torch.stack([g.transpose(1, 2) for g in grads], dim=2).view(B * T, 3 * inner)
        grad_rows, grad_w_qkv, grad_b_qkv = linear_backward(grad_qkv, rows, w_qkv)
        return grad_rows.view(B, T, D), grad_w_qkv, grad_b_qkv, grad_w_out, grad_b_out, None


def causal_attention(x: Tensor, w_qkv: Tensor, b_qkv: Tensor, w_out: Tensor, b_out: Tensor, n_heads: int) -> Tensor:
    """out_linear(causal_softmax_attention(split(qkv_linear(x)))), weights in nn.Linear's layout."""
    return _CausalAttention.apply(x, w_qkv, b_qkv, w_out, b_out, n_heads)
