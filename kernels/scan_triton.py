"""The Triton forward of the selective scan: one program per (batch, block of channels).

The program keeps its (channels x N) state in registers and walks time in chunks of BLOCK_T.
Inside a chunk the recurrence h_t = a_t h_{t-1} + x_t is solved in parallel with an associative
scan over pairs (a, x), combined as (a1, x1) then (a2, x2) -> (a1 a2, a2 x1 + x2); the state
entering the chunk is then carried in with the scanned products. Loads are coalesced along time.

Runs natively on CUDA and, for tests, on the CPU with TRITON_INTERPRET=1 set before this module is
first imported.
"""
from __future__ import annotations

import os

import torch
import triton
import triton.language as tl
from torch import Tensor


@triton.jit
def _combine(a_left, x_left, a_right, x_right):
    return a_left * a_right, a_right * x_left + x_right


@triton.jit
def _selective_scan_forward(
    U, DELTA, A, BM, CM, DSKIP, Y,
    stride_ub, stride_ud, stride_ut,
    stride_db, stride_dd, stride_dt,
    stride_ad, stride_an,
    stride_bb, stride_bn, stride_bt,
    stride_cb, stride_cn, stride_ct,
    stride_yb, stride_yd, stride_yt,
    inner, state_size, seq_len,
    HAS_D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    channels = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    states = tl.arange(0, BLOCK_N)
    steps = tl.arange(0, BLOCK_T)
    channel_ok = channels < inner
    state_ok = states < state_size

    # Padded states get A = 0 and B = C = 0: they decay by 1, are never driven, never read.
    A_block = tl.load(A + channels[:, None] * stride_ad + states[None, :] * stride_an,
                      mask=channel_ok[:, None] & state_ok[None, :], other=0.0).to(tl.float32)
    skip = tl.zeros([BLOCK_D], dtype=tl.float32)
    if HAS_D:
        skip = tl.load(DSKIP + channels, mask=channel_ok, other=0.0).to(tl.float32)
    h = tl.zeros([BLOCK_D, BLOCK_N], dtype=tl.float32)
    last_step = (steps == BLOCK_T - 1)[None, None, :]

    for t0 in range(0, seq_len, BLOCK_T):
        t = t0 + steps
        # Steps past seq_len load delta = 0, so a = 1 and x = 0: the state passes through unchanged.
        channel_time = channel_ok[:, None] & (t < seq_len)[None, :]
        state_time = state_ok[:, None] & (t < seq_len)[None, :]
        u = tl.load(U + b * stride_ub + channels[:, None] * stride_ud + t[None, :] * stride_ut,
                    mask=channel_time, other=0.0).to(tl.float32)
        dt = tl.load(DELTA + b * stride_db + channels[:, None] * stride_dd + t[None, :] * stride_dt,
                     mask=channel_time, other=0.0).to(tl.float32)
        Bt = tl.load(BM + b * stride_bb + states[:, None] * stride_bn + t[None, :] * stride_bt,
                     mask=state_time, other=0.0).to(tl.float32)
        Ct = tl.load(CM + b * stride_cb + states[:, None] * stride_cn + t[None, :] * stride_ct,
                     mask=state_time, other=0.0).to(tl.float32)

        decay = tl.exp(dt[:, None, :] * A_block[:, :, None])  # (BLOCK_D, BLOCK_N, BLOCK_T)
        drive = (dt * u)[:, None, :] * Bt[None, :, :]
        decay_prefix, drive_prefix = tl.associative_scan((decay, drive), 2, _combine)
        hs = decay_prefix * h[:, :, None] + drive_prefix
        y = tl.sum(hs * Ct[None, :, :], 1) + skip[:, None] * u
        tl.store(Y + b * stride_yb + channels[:, None] * stride_yd + t[None, :] * stride_yt,
                 y.to(Y.dtype.element_ty), mask=channel_time)
        h = tl.sum(tl.where(last_step, hs, 0.0), 2)


def selective_scan_triton(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                          D: Tensor | None = None) -> Tensor:
    """Launch the kernel: y (B, D_inner, T) in u's dtype; shapes checked by the caller."""
    batch, inner, length = u.shape
    y = torch.empty_like(u)
    interpreting = os.environ.get("TRITON_INTERPRET", "0") == "1"
    block_d = 16
    block_n = max(2, triton.next_power_of_2(A.shape[1]))
    block_t = 8 if interpreting else 16  # the chunk tile is BLOCK_D x BLOCK_N x BLOCK_T in registers
    grid = (batch, triton.cdiv(inner, block_d))
    _selective_scan_forward[grid](
        u, delta, A, B, C, D if D is not None else u, y,
        *u.stride(), *delta.stride(), *A.stride(), *B.stride(), *C.stride(), *y.stride(),
        inner, A.shape[1], length,
        HAS_D=D is not None, BLOCK_D=block_d, BLOCK_N=block_n, BLOCK_T=block_t,
        num_warps=4,
    )
    return y
