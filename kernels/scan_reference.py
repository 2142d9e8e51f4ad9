"""The selective scan of Mamba (S6), in plain PyTorch: the definition the Triton kernel matches.

Shapes: u, delta (B, D_inner, T); A (D_inner, N);
B, C (B, N, T); D (D_inner,) or None. Discretization as Mamba's kernel (Euler for the input):
    Abar_t = exp(delta_t * A),   Bbar_t = delta_t * B_t,
    h_t = Abar_t * h_{t-1} + Bbar_t * u_t,   y_t = C_t . h_t + D * u_t,   h_{-1} = 0.
One step at a time, so the memory beyond the output is the (B, D_inner, N) state (plus what
autograd keeps per step when gradients are asked for). That is already O(T), so the scan needs
no separate chunked path: on the CPU this is the path.
"""
from __future__ import annotations

import torch
from torch import Tensor

from workbench.errors import check


def selective_scan_reference(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                             D: Tensor | None = None) -> Tensor:
    """y (B, D_inner, T) in u's dtype, computed in float32 (float64 for float64 inputs); differentiable."""
    check_scan_shapes(u, delta, A, B, C, D)
    precision = torch.promote_types(u.dtype, torch.float32)  # float64 stays float64 for the tests
    u32, delta32, A32, B32, C32 = (x.to(precision) for x in (u, delta, A, B, C))
    state = u32.new_zeros(u.shape[0], u.shape[1], A.shape[1])
    outputs = []
    for t in range(u.shape[-1]):
        decay = torch.exp(delta32[:, :, t, None] * A32)  # (B, D_inner, N)
        drive = (delta32[:, :, t] * u32[:, :, t])[:, :, None] * B32[:, None, :, t]
        state = decay * state + drive
        outputs.append((state * C32[:, None, :, t]).sum(dim=-1))
    y = torch.stack(outputs, dim=-1)
    if D is not None:
        y = y + D.to(precision)[None, :, None] * u32
    return y.to(u.dtype)


def check_scan_shapes(u, delta, A, B, C, D) -> None:
    check(u.dim() == 3, "u", tuple(u.shape), "a (B, D_inner, T) tensor")
    batch, inner, length = u.shape
    check(delta.shape == u.shape, "delta", tuple(delta.shape), f"the shape of u, {tuple(u.shape)}")
    check(A.dim() == 2 and A.shape[0] == inner, "A", tuple(A.shape), f"({inner}, N)")
    state = A.shape[1]
    for name, x in (("B", B), ("C", C)):
        check(tuple(x.shape) == (batch, state, length), name, tuple(x.shape), f"({batch}, {state}, {length})")
    if D is not None:
        check(tuple(D.shape) == (inner,), "D", tuple(D.shape), f"({inner},) or None")
