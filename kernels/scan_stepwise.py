"""The selective scan for CPU training: one step at a time with a hand-written backward.

Why not a chunked closed form (Mamba's parallel scan in chunks) for training? On a CPU it materializes
(batch, D_inner, N, chunk) tensors, far larger than the L2 cache, and autograd keeps a dozen of
them: a Mamba training step (batch 128, T = 22, d_inner 128, N 16) spent ~90% of its time there.
Stepping through time keeps the working state, (batch, D_inner, N), in cache; the backward walks
back through time the same way instead of replaying autograd's graph of a Python loop. Measured
on one core: ~2x faster than autograd through the sequential reference, ~3x faster than autograd
through the chunked scan (fwd + bwd). The Python loop costs ~20 small ops per step, negligible
beside the (batch, D_inner, N) arithmetic for the sequence lengths of this workbench.

Recurrence and shapes as scan_reference.py:
    h_t = exp(delta_t A) h_{t-1} + delta_t u_t B_t,    y_t = C_t . h_t (+ D u_t)
Backward, with g_t the gradient flowing into h_t (from y_t and from h_{t+1}):
    g_t = C_t gy_t + exp(delta_{t+1} A) g_{t+1}
    dC_t = sum_d gy_t h_t,   d(delta u)_t = g_t . B_t,   dB_t = sum_d g_t delta_t u_t,
    d(delta_t A) = g_t * exp(delta_t A) * h_{t-1}  -> dA, and delta's share of it.
Tests compare it with the reference in float64, forward and gradients.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable


def selective_scan_stepwise(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                            D: Tensor | None = None) -> Tensor:
    """Same signature and result as scan_reference.selective_scan_reference; fast forward and backward."""
    y = _StepwiseScan.apply(u, delta, A, B, C)
    return y if D is None else y + D[:, None] * u


def _time_major(x: Tensor) -> Tensor:
    """(batch, channels, T) -> contiguous (T, batch, channels): each step is one contiguous slice."""
    return x.permute(2, 0, 1).contiguous()


class _StepwiseScan(torch.autograd.Function):
    # Products that contract over N or over channels are written as multiply-and-sum: for these
    # tiny matrices (N = 16) that is ~2x faster than a batched matrix product on a CPU.

    @staticmethod
    def forward(ctx, u, delta, A, B, C):
        batch, channels, T = u.shape
        drive = _time_major(delta * u)[..., None]  # delta_t u_t: (T, b, d, 1)
        steps = _time_major(delta)[..., None]  # (T, b, d, 1)
        B_t = _time_major(B)[:, :, None, :]  # (T, b, 1, N)
        C_t = _time_major(C)[:, :, None, :]
        decay = u.new_empty(T, batch, channels, A.shape[1])  # exp(delta_t A), kept: exp is costly
        states = torch.empty_like(decay)  # every h_t, for the backward
        y = u.new_empty(T, batch, channels)
        h = u.new_zeros(batch, channels, A.shape[1])
        for t in range(T):
            h = torch.mul(torch.exp(steps[t] * A, out=decay[t]), h, out=states[t])
            h.addcmul_(drive[t], B_t[t])
            torch.sum(h * C_t[t], dim=-1, out=y[t])
        ctx.save_for_backward(u, delta, A, B, C, decay, states)
        return y.permute(1, 2, 0)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        u, delta, A, B, C, decay, states = ctx.saved_tensors
        batch, channels, T = u.shape
        drive = _time_major(delta * u)[..., None]
        steps = _time_major(delta)[..., None]
        B_t = _time_major(B)[:, :, None, :]  # (T, b, 1, N)
        C_t = _time_major(C)[:, :, None, :]
        gy = _time_major(grad_y)[..., None]  # (T, b, d, 1)
        g = torch.zeros_like(states[0])  # gradient into h_t
        grad_A = torch.zeros_like(g)  # summed over the batch at the end
        grad_drive = u.new_empty(T, batch, channels)
        grad_log_decay = u.new_zeros(T, batch, channels)  # sum_n of d(delta_t A[:, n]) * A[:, n]
        grad_B = u.new_empty(T, batch, B.shape[1])
        grad_C = u.new_empty(T, batch, C.shape[1])
        for t in range(T - 1, -1, -1):
            g.addcmul_(gy[t], C_t[t])
            torch.sum(states[t] * gy[t], dim=1, out=grad_C[t])
            torch.sum(g * B_t[t], dim=-1, out=grad_drive[t])
            torch.sum(g * drive[t], dim=1, out=grad_B[t])
            g.mul_(decay[t])  # now g * exp(delta_t A): into h_{t-1}
            if t > 0:  # h_{-1} = 0 carries no gradient to the decay
                grad_step = g * states[t - 1]  # d loss / d(delta_t A), per state
                grad_A.addcmul_(grad_step, steps[t])
                torch.sum(grad_step.mul_(A), dim=-1, out=grad_log_decay[t])
        grad_drive = grad_drive.permute(1, 2, 0)
        grad_delta = grad_log_decay.permute(1, 2, 0) + grad_drive * u
        return (grad_drive * delta, grad_delta, grad_A.sum(dim=0),
                grad_B.permute(1, 2, 0), grad_C.permute(1, 2, 0))
