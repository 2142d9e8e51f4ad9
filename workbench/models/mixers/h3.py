"""H3 (Fu et al. 2023, "Hungry Hungry Hippos: Towards Language Modeling with State Space Models",
arXiv 2212.14052): a shift SSM and a diagonal SSM with multiplicative gates, built to recall tokens
the way attention does.

    q, k, v = projections of x
    k~ = shift_ssm(k)              shift matrix A: the kernel is a learned causal filter of d_state taps
    y  = q * diagonal_ssm(k~ * v)  S4D kernel with its D skip
    out = out_proj(y)

model.head_dim chooses the form. The default, 1, is H3's simplest form: every product elementwise
per channel, one diagonal SSM per channel. With head dimension e > 1 (the paper's multi-head H3,
its Algorithm 1) the d_model channels form H = d_model / e heads; per head and position the state
input is the outer product k~_t v_t^T (e x e), each entry runs through the head's diagonal SSM (one
kernel and D per head, shared by its e^2 entries), and the query reads it out like linear attention:
    y_t[h, j] = sum_i q_t[h, i] diagonal_ssm_h(k~[h, i] v[h, j])_t
The shift SSM stays per channel in both forms.

Attention-like map: per head h, y_t = sum_s M[t, s] v_s with
    M[t, s] = (q_t . k~_s) * (K_h[t - s] + D_h [t = s]),
q_t . k~_s over the head's e channels (a plain product with e = 1), so the map depends on the input
and reproduces the layer exactly (before out_proj). `attention_like_per_channel` gives the signed
maps, one per head (one per channel by default); `hook_pattern` receives |M| averaged over them
(H = 1). `hook_units` splits y into the heads (B, T, H, e): channels, width 1, by default.

`hook_state` (only while listened to) receives the diagonal SSM's state on its input k~ * v, laid
out by default as S4D's (s4d.py): (B, T, d_model, d_state // 2, 2), real and imaginary parts; with
e > 1, (B, T, H, e, e, d_state // 2, 2), the key axis before the value axis. A listener that
changes it at a position patches the state there and the recurrence continues from it. The shift
SSM's state, the last d_state values of k, is not part of it: it depends on the inputs alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ...errors import check
from ...typed import setting
from ..linear import make_linear
from .base import Mixer, MixerContext, register_mixer
from .common import channel_mean_map
from .s4d import FFT_ABOVE, DiagonalSSM, causal_convolution
from .state import through_state_hook


@dataclass
class H3Options:
    head_dim: int = setting(1, "H3: head dimension; 1 (the default) keeps a diagonal state per channel, a larger one "
                               "keeps per head the outer product of shifted key and value, read out by the query "
                               "(multi-head H3); must divide d_model")

    def __post_init__(self):
        check(self.head_dim >= 1, "model.head_dim", self.head_dim, "expected an integer >= 1 that divides d_model")


@register_mixer("h3")
class H3(Mixer):
    settings = ("d_state",)
    Options = H3Options
    has_state = True

    @classmethod
    def check_options(cls, config, options) -> None:
        check(config.d_model % options.head_dim == 0, "model.head_dim", options.head_dim,
              f"expected a divisor of model.d_model ({config.d_model})")

    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        d = config.d_model
        self.head_dim = self.options.head_dim
        self.n_heads = d // self.head_dim
        self.qkv = make_linear(d, 3 * d, sigma_reparam=config.sigma_reparam)
        # shift SSM: with A the shift matrix and B = e_1, C A^l B = C[l], a filter of d_state taps
        self.shift_kernel = nn.Parameter(torch.randn(d, config.d_state) / math.sqrt(config.d_state))
        self.diagonal = DiagonalSSM(self.n_heads, config.d_state)
        self.out_proj = make_linear(d, d, sigma_reparam=config.sigma_reparam)

    def gates(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, shifted k, v, each (B, d_model, T)."""
        q, k, v = self.qkv(x).transpose(1, 2).chunk(3, dim=1)
        return q, causal_convolution(k, self.shift_kernel[:, : x.shape[1]]), v

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        q, shifted, v = self.gates(x)
        if self.hook_pattern.active:
            self.hook_pattern(self._mean_magnitude(q, shifted))
        if self.head_dim > 1:
            y = self._multi_head(q, shifted, v)
        else:
            u = shifted * v
            mixed = self.diagonal(u)
            if self.hook_state.active:
                mixed = self.diagonal.listened(self.hook_state, mixed, u)
            y = q * mixed
        return self.out_proj(self.units(y.transpose(1, 2), self.n_heads))

    def _multi_head(self, q: Tensor, shifted: Tensor, v: Tensor) -> Tensor:
        """y (B, d_model, T): per head, the query reads the SSM of the outer products k~_t v_t^T."""
        B, _, T = q.shape
        H, e = self.n_heads, self.head_dim
        if T <= FFT_ABOVE and not self.hook_state.active:
            # The same sum in its attention form, y_t = sum_s M[t, s] v_s: e times fewer operations than
            # running the e^2 outer-product entries through the Toeplitz product (the state form below)
            mixed = self._map(q, shifted) @ v.view(B, H, e, T).transpose(-1, -2)  # (B, H, T, e)
            return mixed.transpose(-1, -2).reshape(B, H * e, T)
        outer = shifted.view(B, H, e, 1, T) * v.view(B, H, 1, e, T)  # (B, H, key, value, T)
        # the e x e entries of a head share its kernel: they run through the SSM as extra examples
        u = outer.permute(0, 2, 3, 1, 4).reshape(B * e * e, H, T)
        mixed = self.diagonal(u)
        if self.hook_state.active:
            mixed = self._listened_heads(mixed, u, B)
        mixed = mixed.view(B, e, e, H, T)
        return torch.einsum("bhit,bijht->bhjt", q.view(B, H, e, T), mixed).reshape(B, H * e, T)

    def _listened_heads(self, mixed: Tensor, u: Tensor, batch: int) -> Tensor:
        """mixed (B e e, H, T) after `hook_state` saw (and perhaps patched) the states, which it sees
        per example as (B, T, H, key, value, d_state // 2, 2)."""
        H, e = self.n_heads, self.head_dim
        initial, step, readout = self.diagonal.recurrence(u)
        half = initial.shape[-2]

        def per_example(h: Tensor) -> Tensor:  # (B e e, H, half, 2) -> (B, H, e, e, half, 2)
            return h.view(batch, e, e, H, half, 2).permute(0, 3, 1, 2, 4, 5)

        def per_entry(h: Tensor) -> Tensor:
            return h.permute(0, 2, 3, 1, 4, 5).reshape(batch * e * e, H, half, 2)

        outputs = mixed.view(batch, e, e, H, -1).permute(0, 4, 3, 1, 2)  # (B, T, H, key, value)
        result = through_state_hook(self.hook_state, outputs, per_example(initial),
                                    lambda h, t: per_example(step(per_entry(h), t)),
                                    lambda h, t: readout(per_entry(h), t).view(batch, e, e, H).permute(0, 3, 1, 2))
        return result.permute(0, 3, 4, 2, 1).reshape(batch * e * e, H, -1)

    def _map(self, q: Tensor, shifted: Tensor) -> Tensor:
        T = q.shape[-1]
        if self.head_dim > 1:
            B, H, e = q.shape[0], self.n_heads, self.head_dim
            scores = torch.einsum("bhit,bhis->bhts", q.reshape(B, H, e, T), shifted.reshape(B, H, e, T))
            return scores * self.diagonal.toeplitz(T)[None]
        return q[..., :, None] * self.diagonal.toeplitz(T)[None] * shifted[..., None, :]

    def _mean_magnitude(self, q: Tensor, shifted: Tensor, group: int = 16) -> Tensor:
        """(B, 1, T, T) mean of |M| over heads (channels by default), `group` channels at a time."""
        if self.head_dim > 1:  # few heads: their maps fit at once
            return channel_mean_map(self._map(q, shifted))
        T, channels = q.shape[-1], q.shape[1]
        kernel = self.diagonal.toeplitz(T).abs()
        total = q.new_zeros(q.shape[0], 1, T, T)
        for start in range(0, channels, group):
            part = slice(start, start + group)
            M = q[:, part, :, None].abs() * kernel[None, part] * shifted[:, part, None, :].abs()
            total = total + M.sum(dim=1, keepdim=True)
        return total / channels

    def attention_like_per_channel(self, x: Tensor, context: MixerContext) -> Tensor:
        """(B, n_heads, T, T) signed M with y_t = sum_s M[t, s] v_s per head (before out_proj); by
        default one head per channel, (B, d_model, T, T)."""
        q, shifted, _ = self.gates(x)
        return self._map(q, shifted)

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        q, shifted, _ = self.gates(x)
        return self._mean_magnitude(q, shifted)

    def state_size(self, length: int) -> int:
        # the shift SSM's window of d_state values per channel, plus the diagonal SSM's d_state per
        # channel (head dimension 1) or per entry of each head's e x e matrix
        d, n = self.config.d_model, self.config.d_state
        return d * n + self.n_heads * self.head_dim ** 2 * n
