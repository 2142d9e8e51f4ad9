"""The selective scan of Mamba as pure functions: a sequential reference and a chunked fast path.

Shapes (the Triton kernel in kernels/ matches this signature):
    u, delta: (batch, D_inner, T)     input and step size (delta already positive, e.g. softplus)
    A:        (D_inner, N)            diagonal state matrix, negative real entries
    B, C:     (batch, N, T)           input-dependent input and output projections
    D:        (D_inner,) or None      skip connection
    returns y (batch, D_inner, T)

Recurrence (Euler discretization as Mamba's kernel, Gu & Dao 2023, arXiv 2312.00752:
Abar = exp(delta A), Bbar = delta B), per channel d and state n:
    h_t = exp(delta_t A) * h_{t-1} + delta_t B_t u_t,     y_t = C_t . h_t + D u_t
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

DEFAULT_CHUNK = 32


def selective_scan_reference(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                             D: Tensor | None = None) -> Tensor:
    """One step at a time: slow, obviously right, the yardstick for every faster scan."""
    batch, channels, T = u.shape
    h = u.new_zeros(batch, channels, A.shape[1])
    outputs = []
    for t in range(T):
        decay = torch.exp(delta[:, :, t, None] * A)  # (batch, D_inner, N)
        h = decay * h + (delta[:, :, t] * u[:, :, t])[..., None] * B[:, None, :, t]
        outputs.append(torch.einsum("bdn,bn->bd", h, C[:, :, t]))
    y = torch.stack(outputs, dim=-1)
    return y if D is None else y + D[:, None] * u


def selective_scan(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                   D: Tensor | None = None, chunk: int = DEFAULT_CHUNK) -> Tensor:
    """The same scan, `chunk` steps at a time in closed form, the state passed between chunks.

    Within a chunk, with S_t the running sum of the log-decays delta_k A from the chunk start,
        h_t = exp(S_t) h_0 + exp(S_t) * cumsum_s(exp(-S_s) delta_s B_s u_s).
    exp(-S_s) grows along the chunk, so a chunk whose total decay would overflow the float range
    is split in halves until it fits (down to single steps, which always fit): exact for any
    delta and A, never a clamp. Rounding error stays relative to the output because the newest,
    largest terms dominate each cumulative sum.
    """
    if chunk < 1:
        raise ValueError(f"chunk: expected >= 1, got {chunk}")
    batch, channels, T = u.shape
    h = u.new_zeros(batch, channels, A.shape[1])
    outputs = []
    for start in range(0, T, chunk):
        part = slice(start, min(start + chunk, T))
        y, h = _scan_span(h, u[..., part], delta[..., part], A, B[..., part], C[..., part])
        outputs.append(y)
    y = torch.cat(outputs, dim=-1)
    return y if D is None else y + D[:, None] * u


def _largest_safe_exponent(dtype: torch.dtype) -> float:
    # leave room for the size of delta B u itself: exp(exponent) * |x| must stay finite
    return 0.7 * math.log(torch.finfo(dtype).max)


def _scan_span(h: Tensor, u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor) -> tuple[Tensor, Tensor]:
    """Outputs (batch, D_inner, L) and final state of one span of L steps starting from state h."""
    L = u.shape[-1]
    log_decay = torch.cumsum(delta[:, :, None, :] * A[None, :, :, None], dim=-1)  # S_t: (b, d, n, L)
    inputs = (delta * u)[:, :, None, :] * B[:, None, :, :]  # delta_s B_s u_s: (b, d, n, L)
    if L == 1:  # one plain step: exp(-S) could overflow even though exp(S) exp(-S) = 1
        states = torch.exp(log_decay) * h[..., None] + inputs
        return (states * C[:, None]).sum(dim=2), states[..., -1]
    if float(log_decay[..., -1].detach().abs().max()) > _largest_safe_exponent(u.dtype):
        half = L // 2
        first, h = _scan_span(h, u[..., :half], delta[..., :half], A, B[..., :half], C[..., :half])
        second, h = _scan_span(h, u[..., half:], delta[..., half:], A, B[..., half:], C[..., half:])
        return torch.cat([first, second], dim=-1), h
    decay = torch.exp(log_decay)  # never underflows to 0 here: the span's total decay is in range
    states = decay * (h[..., None] + torch.cumsum(inputs / decay, dim=-1))  # h_t for every t in the span
    y = (states * C[:, None]).sum(dim=2)
    return y, states[..., -1]


def implicit_attention(delta: Tensor, A: Tensor, B: Tensor, C: Tensor) -> Tensor:
    """The hidden attention of the selective scan (Ali et al. 2024, arXiv 2403.01590):
        alpha[t, s] = sum_n C_t[n] exp(A[n] (S_t - S_s)) delta_s B_s[n]   for s <= t, else 0,
    with S the running sum of delta, so that y_t = sum_s alpha[t, s] u_s + D u_t exactly.
    Shapes as selective_scan; returns (batch, D_inner, T, T), signed, one map per channel.
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
