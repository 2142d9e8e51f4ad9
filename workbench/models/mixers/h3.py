"""H3 (Fu et al. 2023, "Hungry Hungry Hippos", arXiv 2212.14052): a shift SSM and a diagonal SSM
with multiplicative gates, built to recall tokens the way attention does.

    q, k, v = projections of x
    k~ = shift_ssm(k)              shift matrix A: the kernel is a learned causal filter of d_state taps
    y  = q * diagonal_ssm(k~ * v)  S4D kernel with its D skip
    out = out_proj(y)
We use head dimension 1 (every product elementwise per channel), H3's simplest form.

Attention-like map: per channel d, y_t = sum_s M[t, s] v_s with
    M[t, s] = q_t * (K_diag[t - s] + D [t = s]) * k~_s,
the gates folded in, so the map depends on the input and reproduces the layer exactly (before
out_proj). `hook_pattern` receives |M| averaged over channels (H = 1).

`hook_state` (only while listened to) receives the diagonal SSM's state on its input k~ * v, laid
out as S4D's (s4d.py): (B, T, d_model, d_state // 2, 2), real and imaginary parts. A listener that
changes it at a position patches the state there and the recurrence continues from it. The shift
SSM's state, the last d_state values of k, is not part of it: it depends on the inputs alone.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..linear import make_linear
from .base import Mixer, MixerContext, register_mixer
from .s4d import DiagonalSSM, causal_convolution


@register_mixer("h3")
class H3(Mixer):
    settings = ("d_state",)
    has_state = True

    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        d = config.d_model
        self.qkv = make_linear(d, 3 * d, sigma_reparam=config.sigma_reparam)
        # shift SSM: with A the shift matrix and B = e_1, C A^l B = C[l], a filter of d_state taps
        self.shift_kernel = nn.Parameter(torch.randn(d, config.d_state) / math.sqrt(config.d_state))
        self.diagonal = DiagonalSSM(d, config.d_state)
        self.out_proj = make_linear(d, d, sigma_reparam=config.sigma_reparam)

    def gates(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, shifted k, v, each (B, d_model, T)."""
        q, k, v = self.qkv(x).transpose(1, 2).chunk(3, dim=1)
        return q, causal_convolution(k, self.shift_kernel[:, : x.shape[1]]), v

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        q, shifted, v = self.gates(x)
        if self.hook_pattern.active:
            self.hook_pattern(self._mean_magnitude(q, shifted))
        u = shifted * v
        mixed = self.diagonal(u)
        if self.hook_state.active:
            mixed = self.diagonal.listened(self.hook_state, mixed, u)
        y = q * mixed
        return self.out_proj(self.units(y.transpose(1, 2), y.shape[1]))

    def _map(self, q: Tensor, shifted: Tensor) -> Tensor:
        T = q.shape[-1]
        return q[..., :, None] * self.diagonal.toeplitz(T)[None] * shifted[..., None, :]

    def _mean_magnitude(self, q: Tensor, shifted: Tensor, group: int = 16) -> Tensor:
        """(B, 1, T, T) mean of |M| over channels, `group` channels at a time (long sequences)."""
        T, channels = q.shape[-1], q.shape[1]
        kernel = self.diagonal.toeplitz(T).abs()
        total = q.new_zeros(q.shape[0], 1, T, T)
        for start in range(0, channels, group):
            part = slice(start, start + group)
            M = q[:, part, :, None].abs() * kernel[None, part] * shifted[:, part, None, :].abs()
            total = total + M.sum(dim=1, keepdim=True)
        return total / channels

    def attention_like_per_channel(self, x: Tensor, context: MixerContext) -> Tensor:
        """(B, d_model, T, T) signed M with y_t = sum_s M[t, s] v_s per channel (before out_proj)."""
        q, shifted, _ = self.gates(x)
        return self._map(q, shifted)

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        q, shifted, _ = self.gates(x)
        return self._mean_magnitude(q, shifted)

    def state_size(self, length: int) -> int:
        # the shift SSM's window of d_state values plus the diagonal SSM's d_state, per channel
        return 2 * self.config.d_model * self.config.d_state
