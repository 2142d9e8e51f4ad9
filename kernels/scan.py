"""`selective_scan`: the Mamba scan with a backend switch, as `attention_entropy` has.

- "auto": CUDA tensors -> the Triton kernel, CPU tensors -> the stepwise scan;
- "reference": the step-by-step PyTorch scan, plain autograd: the definition the others match;
- "stepwise": the same steps with a hand-written backward, the fast path on a CPU (scan_stepwise.py);
- "triton": the Triton kernel; on CPU tensors only with TRITON_INTERPRET=1 (slow, for tests).
"""
from __future__ import annotations

import torch
from torch import Tensor

from workbench.errors import ConfigError, check

from .attention import _interpreting, triton_available
from .scan_reference import check_scan_shapes, selective_scan_reference
from .scan_stepwise import selective_scan_stepwise

BACKENDS = ("auto", "reference", "stepwise", "triton")


def selective_scan(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor | None = None,
                   backend: str = "auto") -> Tensor:
    """y (B, D_inner, T) of h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t, y_t = C_t . h_t + D u_t.

    Args:
        u, delta: (B, D_inner, T) input and (already positive, e.g. softplus'ed) step sizes.
        A: (D_inner, N) state matrix (diagonal per channel; negative for a stable scan).
        B, C: (B, N, T) input and output projections, shared across channels.
        D: (D_inner,) skip connection, or None.
        backend: "auto" | "reference" | "stepwise" | "triton" (see the module docstring).

    Backward: the Triton path recomputes the forward with the reference under autograd and
    differentiates that (gradients for u, delta, A, B, C, D match the reference by construction);
    its memory is the reference's, O(T * D_inner * N) per sequence for the saved steps.
    """
    check(backend in BACKENDS, "backend", backend, "choose one of: " + ", ".join(BACKENDS))
    check_scan_shapes(u, delta, A, B, C, D)
    chosen = backend
    if backend == "auto":
        chosen = "triton" if u.is_cuda and triton_available() else "stepwise"
    if chosen == "reference":
        return selective_scan_reference(u, delta, A, B, C, D)
    if chosen == "stepwise":
        return selective_scan_stepwise(u, delta, A, B, C, D)
    if not u.is_cuda and not _interpreting():
        raise ConfigError("backend", "triton", "on CPU tensors the Triton kernel runs only with "
                                               "TRITON_INTERPRET=1 set before it is first used")
    return _SelectiveScan.apply(u, delta, A, B, C, D)


class _SelectiveScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, u, delta, A, B, C, D):
        from .scan_triton import selective_scan_triton  # imported late: the jit reads TRITON_INTERPRET

        ctx.save_for_backward(u, delta, A, B, C, D)
        return selective_scan_triton(u, delta, A, B, C, D)

    @staticmethod
    def backward(ctx, grad_y):
        inputs = [x.detach().requires_grad_(needed) if x is not None else None
                  for x, needed in zip(ctx.saved_tensors, ctx.needs_input_grad)]
        wanted = [x for x in inputs if x is not None and x.requires_grad]
        with torch.enable_grad():
            y = selective_scan_reference(*inputs)
            grads = iter(torch.autograd.grad(y, wanted, grad_y))
        return tuple(next(grads) if x is not None and x.requires_grad else None for x in inputs)
