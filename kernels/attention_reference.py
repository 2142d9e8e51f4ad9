"""Causal attention that also returns each query's softmax entropy, in plain PyTorch.

Two paths live here, beside the Triton kernel in attention_triton.py:

- `attention_entropy_reference` materializes the T x T scores: the definition, used by the tests.
- `attention_entropy_chunked` walks query blocks and key blocks with the online-softmax recurrence
  and never holds more than one (block x block) tile of scores per head: O(T) extra memory.
  `attention_entropy_backward_chunked` is its blocked backward, shared with the Triton forward.

The entropy is accumulated in the same pass as the output. Beside the running max m and the
running normalizer l = sum exp(s - m), keep t = sum exp(s - m) * (s - m); then
    lse = m + log l,   H = -sum p log p = lse - sum p s = log l - t / l.
Shifting s by the running max (rather than summing exp(s - m) * s) keeps t of the size of the
entropy, so H does not come out of a difference of two large numbers when logits are large.

Bias (added to the scaled logits), one of:
- None;
- ALiBi slopes, a (H,) tensor: bias[h, i, j] = -slope[h] * max(i - j, 0), computed per tile from
  positions (the same convention as workbench.models.positions.Alibi with default positions);
- a tensor broadcastable to (B, H, T, T), e.g. (1, H, T, T);
- a callable `bias(query_positions, key_positions) -> tensor broadcastable to (B, H, Lq, Lk)`,
  evaluated per tile, so a functional bias (FIRE, say) never needs the full T x T map.
Scale: a float, or a (T,) tensor of per-query logit multipliers; default 1 / sqrt(head_dim).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from workbench.errors import check

MASKED = -1.0e30  # the logit of a hidden key in the blocked paths: exp underflows to exactly 0


@dataclass
class Bias:
    """One additive bias, able to hand out any (query range x key range) tile of itself."""

    kind: str  # "none" | "alibi" | "tensor" | "callable"
    value: Tensor | Callable | None = None

    def tile(self, i0: int, i1: int, j0: int, j1: int, device) -> Tensor | None:
        if self.kind == "none":
            return None
        if self.kind == "tensor":
            return self.value[..., i0:i1, j0:j1]
        rows = torch.arange(i0, i1, device=device)
        cols = torch.arange(j0, j1, device=device)
        if self.kind == "alibi":
            distance = (rows[:, None] - cols[None, :]).clamp(min=0).to(self.value.dtype)
            return -self.value[None, :, None, None] * distance
        return self.value(rows, cols)


def make_bias(bias, q: Tensor) -> Bias:
    """Sort the `bias` argument into one of the four kinds, checking shapes against q (B, H, T, Dh)."""
    B, H, T, _ = q.shape
    if bias is None:
        return Bias("none")
    if callable(bias) and not isinstance(bias, Tensor):
        return Bias("callable", bias)
    check(isinstance(bias, Tensor), "bias", type(bias).__name__,
          "a (H,) tensor of ALiBi slopes, a (1|B, H, T, T) tensor, a callable or None")
    if bias.dim() == 1:
        check(bias.shape[0] == H, "bias", tuple(bias.shape), f"ALiBi slopes need shape ({H},)")
        return Bias("alibi", bias)
    check(bias.dim() == 4 and bias.shape[0] in (1, B) and bias.shape[1] in (1, H)
          and tuple(bias.shape[2:]) == (T, T), "bias", tuple(bias.shape),
          f"a bias tensor needs shape (1|{B}, 1|{H}, {T}, {T})")
    return Bias("tensor", bias)


def query_scale(scale, q: Tensor) -> Tensor:
    """The logit multiplier of every query as a float32 (T,) vector."""
    T, head_dim = q.shape[-2], q.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(head_dim)
    if isinstance(scale, Tensor):
        check(scale.numel() in (1, T), "scale", tuple(scale.shape), f"a float or a ({T},) tensor")
        return scale.detach().to(device=q.device, dtype=torch.float32).reshape(-1).expand(T).contiguous()
    return torch.full((T,), float(scale), device=q.device, dtype=torch.float32)


def _scores(q: Tensor, k: Tensor, qscale: Tensor, bias: Bias, i0: int, j0: int, causal: bool,
            masked: float = float("-inf")) -> Tensor:
    """Scaled, biased float32 logits of queries i0.. against keys j0.. (one tile); hidden keys get
    `masked`. The blocked paths pass a finite MASKED so that p * (s - m) is 0 there, never NaN."""
    i1, j1 = i0 + q.shape[-2], j0 + k.shape[-2]
    s = (q.float() @ k.float().transpose(-1, -2)) * qscale[i0:i1, None]
    tile = bias.tile(i0, i1, j0, j1, q.device)
    if tile is not None:
        s = s + tile.float()
        if masked != float("-inf"):
            s = s.clamp_min(masked)  # a bias may hide keys with -inf itself
    if causal and j1 - 1 > i0:  # the tile reaches above the diagonal
        rows = torch.arange(i0, i1, device=q.device)[:, None]
        cols = torch.arange(j0, j1, device=q.device)[None, :]
        s = s.masked_fill(cols > rows, masked)
    return s


def attention_entropy_reference(q: Tensor, k: Tensor, v: Tensor, bias=None, scale=None,
                                causal: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """Materialize the T x T map: out (B,H,T,Dh), lse (B,H,T) and entropy -sum p log p (B,H,T).

    Differentiable by plain autograd (also into a callable bias's parameters). p log p is taken as
    0 where p = 0, with a gradient of 0 there, so masked keys never produce NaN.
    """
    s = _scores(q, k, query_scale(scale, q), make_bias(bias, q), 0, 0, causal)
    log_p = s.log_softmax(dim=-1)
    p = log_p.exp()
    entropy = -(p * log_p.masked_fill(~torch.isfinite(s), 0.0)).sum(dim=-1)
    out = (p @ v.float()).to(v.dtype)
    return out, torch.logsumexp(s, dim=-1), entropy


def attention_entropy_chunked(q: Tensor, k: Tensor, v: Tensor, bias: Bias, qscale: Tensor,
                              causal: bool = True, block_size: int = 256) -> tuple[Tensor, Tensor, Tensor]:
    """The online recurrence over query blocks and key blocks; O(T) memory beyond one tile."""
    T = q.shape[-2]
    outs, lses, entropies = [], [], []
    for i0 in range(0, T, block_size):
        i1 = min(i0 + block_size, T)
        out, lse, entropy = _query_block(q[..., i0:i1, :], k, v, bias, qscale, i0, causal, block_size)
        outs.append(out), lses.append(lse), entropies.append(entropy)
    return torch.cat(outs, dim=-2).to(v.dtype), torch.cat(lses, dim=-1), torch.cat(entropies, dim=-1)


def _query_block(q, k, v, bias, qscale, i0, causal, block_size):
    shape = q.shape[:-1]
    # Starting m at MASKED rather than -inf keeps every update finite. A row whose first tiles hide
    # all its keys counts them with p = 1 for a while; the first visible key makes alpha = 0 and
    # erases them, as in FlashAttention. (Under causal masking key 0 is visible to every row.)
    m = torch.full(shape, MASKED, device=q.device)  # running max
    l = torch.zeros(shape, device=q.device)  # running sum of exp(s - m)
    t = torch.zeros(shape, device=q.device)  # running sum of exp(s - m) * (s - m)
    acc = torch.zeros(*shape, v.shape[-1], device=q.device)
    key_end = min(i0 + q.shape[-2], k.shape[-2]) if causal else k.shape[-2]
    for j0 in range(0, key_end, block_size):
        j1 = min(j0 + block_size, key_end)
        s = _scores(q, k[..., j0:j1, :], qscale, bias, i0, j0, causal, MASKED)
        m_new = torch.maximum(m, s.amax(dim=-1))
        alpha = torch.exp(m - m_new)
        shifted = s - m_new[..., None]
        p = torch.exp(shifted)
        t = alpha * (t + (m - m_new) * l) + (p * shifted).sum(dim=-1)
        l = alpha * l + p.sum(dim=-1)
        acc = alpha[..., None] * acc + p @ v[..., j0:j1, :].float()
        m = m_new
    return acc / l[..., None], m + torch.log(l), torch.log(l) - t / l


def attention_entropy_backward_chunked(q, k, v, bias: Bias, qscale, causal, out, lse, entropy,
                                       grad_out, grad_lse, grad_entropy, block_size: int = 256):
    """Blocked backward of (out, lse, entropy), recomputing each tile of p from the saved lse.

    With s the logits of one query row, p = softmax(s) and S = sum p s = lse - H:
        d out/ds_j contributes  p_j (dout . v_j - dout . out),
        d lse/ds_j = p_j,   d H/ds_j = -p_j (s_j - S).
    Returns (dq, dk, dv, dbias) with dbias shaped like the bias tensor or slopes (None otherwise).
    """
    T = q.shape[-2]
    qf, kf, vf, dout = q.float(), k.float(), v.float(), grad_out.float()
    dq, dk, dv = torch.zeros_like(qf), torch.zeros_like(kf), torch.zeros_like(vf)
    dbias = torch.zeros_like(bias.value, dtype=torch.float32) if bias.kind in ("alibi", "tensor") else None
    delta = (dout * out.float()).sum(dim=-1)  # dout . out per query
    mean_logit = lse - entropy
    for i0 in range(0, T, block_size):
        i1 = min(i0 + block_size, T)
        rows = slice(i0, i1)
        key_end = i1 if causal else T
        for j0 in range(0, key_end, block_size):
            j1 = min(j0 + block_size, key_end)
            cols = slice(j0, j1)
            s = _scores(qf[..., rows, :], kf[..., cols, :], qscale, bias, i0, j0, causal, MASKED)
            p = torch.exp(s - lse[..., rows, None])  # 0 on hidden keys
            dp = dout[..., rows, :] @ vf[..., cols, :].transpose(-1, -2)
            ds = p * (dp - delta[..., rows, None] + grad_lse[..., rows, None]
                      - grad_entropy[..., rows, None] * (s - mean_logit[..., rows, None]))
            dv[..., cols, :] += p.transpose(-1, -2) @ dout[..., rows, :]
            ds_scaled = ds * qscale[rows, None]
            dq[..., rows, :] += ds_scaled @ kf[..., cols, :]
            dk[..., cols, :] += ds_scaled.transpose(-1, -2) @ qf[..., rows, :]
            if dbias is not None:
                _accumulate_bias_grad(dbias, bias, ds, i0, i1, j0, j1)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dbias


def _accumulate_bias_grad(dbias: Tensor, bias: Bias, ds: Tensor, i0, i1, j0, j1) -> None:
    if bias.kind == "alibi":
        rows = torch.arange(i0, i1, device=ds.device)[:, None]
        cols = torch.arange(j0, j1, device=ds.device)[None, :]
        distance = (rows - cols).clamp(min=0).float()
        dbias -= (ds * distance).sum(dim=(0, 2, 3))
        return
    reduce = tuple(d for d in (0, 1) if dbias.shape[d] == 1 and ds.shape[d] != 1)
    dbias[..., i0:i1, j0:j1] += ds.sum(dim=reduce, keepdim=True) if reduce else ds
