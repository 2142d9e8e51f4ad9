"""`attention_entropy`: causal attention that returns its output, log-sum-exp and per-query entropy.

This is the entry point the models and the entropy probe call. It picks a backend:
- "auto": CUDA tensors -> the Triton kernel, CPU tensors -> the chunked PyTorch path;
- "reference": materialize the T x T map (the definition; plain autograd);
- "chunked": PyTorch over query and key blocks, O(T) extra memory, any device;
- "triton": the Triton kernel; on CPU tensors only with TRITON_INTERPRET=1 (slow, for tests).
A callable bias has no Triton form, so "auto" takes the chunked path for it.
"""
from __future__ import annotations

import os

import torch
from torch import Tensor

from workbench.errors import ConfigError, check

from .attention_reference import (Bias, attention_entropy_backward_chunked, attention_entropy_chunked,
                                  attention_entropy_reference, make_bias, query_scale)

BACKENDS = ("auto", "reference", "chunked", "triton")


def attention_entropy(q: Tensor, k: Tensor, v: Tensor, bias=None, scale=None, causal: bool = True,
                      backend: str = "auto", block_size: int = 256) -> tuple[Tensor, Tensor, Tensor]:
    """Softmax attention with the entropy of every attention row, without a T x T map.

    Args:
        q, k, v: (B, H, T, Dh) queries, keys and values of one attention layer (after any rotary
            embedding; the logit scale is applied here, not expected in q).
        bias: None; a (H,) tensor of ALiBi slopes (bias -slope * max(i - j, 0), computed in the
            kernel from positions); a tensor broadcastable to (B, H, T, T); or a callable
            `bias(query_positions, key_positions) -> (1|B, 1|H, Lq, Lk)` evaluated per tile.
        scale: logit multiplier, a float or a (T,) tensor per query (e.g. log-length scaling);
            default 1 / sqrt(Dh). A tensor scale is treated as a constant (no gradient).
        causal: mask keys after each query.
        backend: "auto" | "reference" | "chunked" | "triton" (see the module docstring).
        block_size: query and key tile of the chunked path and its backward.

    Returns:
        out (B, H, T, Dh) in v's dtype; lse (B, H, T) and entropy (B, H, T) in float32, where
        lse_i = log sum_j exp(s_ij) and entropy_i = -sum_j p_ij log p_ij in nats (0 <= H_i <= log(i+1)
        under causal masking).

    Backward: the reference path uses plain autograd. The chunked and Triton paths use one
    blocked PyTorch backward (attention_entropy_backward_chunked) that recomputes each tile of p
    from the saved lse, so it also needs O(T) extra memory; gradients flow to q, k, v, a bias
    tensor and ALiBi slopes, through all three outputs. A callable bias gets no gradient there
    (use backend="reference" to train through one).
    """
    check(backend in BACKENDS, "backend", backend, "choose one of: " + ", ".join(BACKENDS))
    _check_shapes(q, k, v)
    if backend == "reference":
        return attention_entropy_reference(q, k, v, bias=bias, scale=scale, causal=causal)
    bias_spec = make_bias(bias, q)
    chosen = _choose(backend, q, bias_spec)
    bias_tensor = bias_spec.value if bias_spec.kind in ("alibi", "tensor") else None
    return _AttentionEntropy.apply(q, k, v, bias_tensor, query_scale(scale, q), bias_spec, causal, chosen,
                                   block_size)


def attention_entropy_from_qk(q: Tensor, k: Tensor, **options) -> tuple[Tensor, Tensor]:
    """Only the (lse, entropy) of each attention row, for probes that hold queries and keys but no
    values. Same options as `attention_entropy`; runs without gradients."""
    with torch.no_grad():
        _, lse, entropy = attention_entropy(q, k, k, **options)
    return lse, entropy


def _check_shapes(q: Tensor, k: Tensor, v: Tensor) -> None:
    check(q.dim() == 4, "q", tuple(q.shape), "a (B, H, T, Dh) tensor")
    check(k.shape == q.shape, "k", tuple(k.shape), f"the shape of q, {tuple(q.shape)}")
    check(v.shape == q.shape, "v", tuple(v.shape), f"the shape of q, {tuple(q.shape)}")


def _choose(backend: str, q: Tensor, bias: Bias) -> str:
    if backend == "auto":
        return "triton" if q.is_cuda and bias.kind != "callable" and triton_available() else "chunked"
    if backend == "triton":
        if bias.kind == "callable":
            raise ConfigError("bias", "callable", "the Triton backend takes ALiBi slopes or a bias tensor; "
                                                  "use backend='chunked' for a callable bias")
        if not q.is_cuda and not _interpreting():
            raise ConfigError("backend", "triton", "on CPU tensors the Triton kernel runs only with "
                                                   "TRITON_INTERPRET=1 set before it is first used")
        check(triton_available(), "backend", backend, "install triton (pip install triton) or use 'chunked'")
    return backend


class _AttentionEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias_tensor, qscale, bias: Bias, causal, chosen, block_size):
        if chosen == "triton":
            from .attention_triton import attention_entropy_triton  # imported late: see _interpreting
            out, lse, entropy = attention_entropy_triton(q, k, v, bias, qscale, causal)
        else:
            out, lse, entropy = attention_entropy_chunked(q, k, v, bias, qscale, causal, block_size)
        ctx.save_for_backward(q, k, v, bias_tensor, qscale, out, lse, entropy)
        # Only the kind and a callable stay on ctx; tensors go through save_for_backward.
        ctx.bias_kind, ctx.bias_callable = bias.kind, (bias.value if bias.kind == "callable" else None)
        ctx.causal, ctx.block_size = causal, block_size
        return out, lse, entropy

    @staticmethod
    def backward(ctx, grad_out, grad_lse, grad_entropy):
        q, k, v, bias_tensor, qscale, out, lse, entropy = ctx.saved_tensors
        bias = Bias(ctx.bias_kind, bias_tensor if bias_tensor is not None else ctx.bias_callable)
        dq, dk, dv, dbias = attention_entropy_backward_chunked(
            q, k, v, bias, qscale, ctx.causal, out, lse, entropy, grad_out, grad_lse, grad_entropy,
            ctx.block_size)
        if dbias is not None and ctx.needs_input_grad[3]:
            dbias = dbias.to(bias_tensor.dtype)
        else:
            dbias = None
        return dq, dk, dv, dbias, None, None, None, None, None


def triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"
