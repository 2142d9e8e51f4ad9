"""The hidden attention of Mamba's selective scan (Ali et al. 2024, arXiv 2403.01590): the
(batch, D_inner, T, T) map alpha with y_t = sum_s alpha[t, s] u_s + D u_t, for observation.

Shapes and recurrence as the scan itself (workbench.kernels.selective_scan):
    u, delta: (batch, D_inner, T);  A: (D_inner, N), negative;  B, C: (batch, N, T)
    h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t,     y_t = C_t . h_t + D u_t
"""
from __future__ import annotations

import torch
from torch import Tensor


def implicit_attention(delta: Tensor, A: Tensor, B: Tensor, C: Tensor) -> Tensor:
    """The hidden attention of the selective scan (Ali et al. 2024, arXiv 2403.01590):
        alpha[t, s] = sum_n C_t[n] exp(A[n] (S_t - S_s)) delta_s B_s[n]   for s <= t, else 0,
    with S the running sum of delta, so that y_t = sum_s alpha[t, s] u_s + D u_t exactly.
    Shapes as the scan; returns (batch, D_inner, T, T), signed, one map per channel.
    The states are summed one at a time so memory stays at one (batch, D_inner, T, T) map."""
    T = delta.shape[-1]
    S = torch.cumsum(delta, dim=-1)
    elapsed = (S[..., :, None] - S[..., None, :]).clamp(min=0)  # S_t - S_s, (b, d, T, T)
    causal = torch.ones(T, T, dtype=torch.bool, device=delta.device).tril()
    alpha = delta.new_zeros(elapsed.shape)
    for n in range(A.shape[1]):
        query_key = C[:, n, :, None] * B[:, n, None, :]  # C_t[n] B_s[n], (b, T, T)
        alpha = alpha + torch.exp(A[None, :, n, None, None] * elapsed) * query_key[:, None]
    alpha = alpha * delta[..., None, :]
    return torch.where(causal, alpha, torch.zeros_like(alpha))


def implicit_attention_magnitude(delta: Tensor, A: Tensor, B: Tensor, C: Tensor, group: int = 16) -> Tensor:
    """mean over channels of |implicit_attention|: (batch, 1, T, T), computed `group` channels at a
    time so long evaluation sequences never hold all (batch, D_inner, T, T) maps at once."""
    total = None
    for start in range(0, A.shape[0], group):
        part = slice(start, start + group)
        magnitude = implicit_attention(delta[:, part], A[part], B, C).abs().sum(dim=1, keepdim=True)
        total = magnitude if total is None else total + magnitude
    return total / A.shape[0]
