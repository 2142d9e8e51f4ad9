"""The Triton forward of attention + entropy: one program per (query block, batch x head).

Each program keeps its query block in registers and streams key/value blocks through the
online-softmax recurrence (running max m, normalizer l, and t = sum exp(s - m) (s - m) for the
entropy; see attention_reference.py). Nothing of size T x T is ever written. Under causal masking
a program stops at the key block that holds its last query.

Runs natively on CUDA and, for tests, on the CPU with TRITON_INTERPRET=1 set before this module is
first imported (the @triton.jit decorator reads it).
"""
from __future__ import annotations

import os

import torch
import triton
import triton.language as tl
from torch import Tensor

from .attention_reference import Bias

BIAS_NONE, BIAS_ALIBI, BIAS_TENSOR = 0, 1, 2


@triton.jit
def _attention_entropy_forward(
    Q, K, V, OUT, LSE, ENT, QSCALE, BIAS,
    stride_qb, stride_qh, stride_qt, stride_qd,
    stride_kb, stride_kh, stride_kt, stride_kd,
    stride_vb, stride_vh, stride_vt, stride_vd,
    stride_ob, stride_oh, stride_ot, stride_od,
    stride_bb, stride_bh, stride_bq, stride_bk,
    n_heads, seq_len, head_dim,
    CAUSAL: tl.constexpr, BIAS_MODE: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    block_m = tl.program_id(0)
    batch_head = tl.program_id(1)
    b = (batch_head // n_heads).to(tl.int64)  # 64-bit offsets: a (B, H, T, T) bias passes 2**31 elements
    h = (batch_head % n_heads).to(tl.int64)
    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    row_ok = rows < seq_len
    dim_ok = dims < head_dim

    q = tl.load(Q + b * stride_qb + h * stride_qh + rows[:, None] * stride_qt + dims[None, :] * stride_qd,
                mask=row_ok[:, None] & dim_ok[None, :], other=0.0)
    qscale = tl.load(QSCALE + rows, mask=row_ok, other=0.0)
    # A finite floor instead of -inf keeps (m_old - m_new) * l_old at 0 * finite, never NaN.
    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    t_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    key_end = seq_len
    if CAUSAL:
        key_end = tl.minimum(seq_len, (block_m + 1) * BLOCK_M)
    for start_n in range(0, key_end, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        col_ok = cols < seq_len
        kv_mask = col_ok[:, None] & dim_ok[None, :]
        k = tl.load(K + b * stride_kb + h * stride_kh + cols[:, None] * stride_kt + dims[None, :] * stride_kd,
                    mask=kv_mask, other=0.0)
        v = tl.load(V + b * stride_vb + h * stride_vh + cols[:, None] * stride_vt + dims[None, :] * stride_vd,
                    mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qscale[:, None]
        if BIAS_MODE == 1:
            slope = tl.load(BIAS + h * stride_bh).to(tl.float32)
            distance = tl.maximum(rows[:, None] - cols[None, :], 0).to(tl.float32)
            s = s - slope * distance
        if BIAS_MODE == 2:
            s += tl.load(BIAS + b * stride_bb + h * stride_bh + rows[:, None] * stride_bq + cols[None, :] * stride_bk,
                         mask=row_ok[:, None] & col_ok[None, :], other=0.0).to(tl.float32)
        valid = col_ok[None, :] & row_ok[:, None]
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        s = tl.where(valid, s, float("-inf"))

        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        shifted = tl.where(valid, s - m_new[:, None], 0.0)
        t_i = alpha * (t_i + (m_i - m_new) * l_i) + tl.sum(p * shifted, 1)
        l_i = alpha * l_i + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new

    l_safe = tl.where(row_ok, l_i, 1.0)  # padding rows past seq_len saw no key
    out = acc / l_safe[:, None]
    tl.store(OUT + b * stride_ob + h * stride_oh + rows[:, None] * stride_ot + dims[None, :] * stride_od,
             out.to(OUT.dtype.element_ty), mask=row_ok[:, None] & dim_ok[None, :])
    row_offset = batch_head.to(tl.int64) * seq_len + rows
    tl.store(LSE + row_offset, m_i + tl.log(l_safe), mask=row_ok)
    tl.store(ENT + row_offset, tl.log(l_safe) - t_i / l_safe, mask=row_ok)


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def attention_entropy_triton(q: Tensor, k: Tensor, v: Tensor, bias: Bias, qscale: Tensor,
                             causal: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """Launch the kernel: out (B,H,T,Dh) in q's dtype, lse and entropy (B,H,T) in float32."""
    B, H, T, head_dim = q.shape
    out = torch.empty_like(q)
    lse = torch.empty(B, H, T, device=q.device, dtype=torch.float32)
    entropy = torch.empty_like(lse)
    bias_mode, bias_arg, bias_strides = _bias_arguments(bias, q)
    # Small tiles in the interpreter keep odd lengths spanning several blocks and the tests quick.
    block = 16 if interpreting() else 64
    block_d = max(16, triton.next_power_of_2(head_dim))
    # fp32 follows torch's own matmul setting: exact unless the user allowed TF32 (other dtypes
    # ignore the choice).
    exact = q.dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32
    precision = "ieee" if exact else "tf32"
    grid = (triton.cdiv(T, block), B * H)
    _attention_entropy_forward[grid](
        q, k, v, out, lse, entropy, qscale, bias_arg,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(), *bias_strides,
        H, T, head_dim,
        CAUSAL=causal, BIAS_MODE=bias_mode, PRECISION=precision,
        BLOCK_M=block, BLOCK_N=block, BLOCK_D=block_d,
        num_warps=4 if block_d <= 64 else 8,
    )
    return out, lse, entropy


def _bias_arguments(bias: Bias, q: Tensor) -> tuple[int, Tensor, tuple[int, int, int, int]]:
    if bias.kind == "alibi":
        return BIAS_ALIBI, bias.value.contiguous(), (0, bias.value.contiguous().stride(0), 0, 0)
    if bias.kind == "tensor":
        expanded = bias.value.expand(q.shape[0], q.shape[1], q.shape[2], q.shape[2])  # stride 0 on broadcast dims
        return BIAS_TENSOR, expanded, tuple(expanded.stride())
    return BIAS_NONE, q, (0, 0, 0, 0)  # any pointer: never read
