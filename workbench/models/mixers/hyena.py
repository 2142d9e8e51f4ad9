"""Hyena (Poli et al. 2023, "Hyena Hierarchy: Towards Larger Convolutional Language Models",
arXiv 2302.10866): long causal convolutions with implicit filters, interleaved with data-controlled
elementwise gates. The order-N operator, per channel:

    v, x_1 ... x_N = short causal depthwise conv (3 taps) of in_proj(x)     N + 1 streams of width d
    z_1 = v;   z_{n+1} = x_n * (h_n * z_n + b_n z_n)   for n = 1 ... N      * = causal long convolution
    out = out_proj(z_{N+1})

The filters h_n are implicit: a small MLP with sine activations reads positional features of the lag
l and gives one value per channel and order; an exponential-decay window, fast in some channels and
slow in others, multiplies it; b_n is a learned skip (bias) per channel. The convolution is
s4d.causal_convolution: an FFT padded to 2T (causal, no circular wrap-around) for long sequences,
an exact Toeplitz product for short ones, where it is cheaper on a CPU and exactly causal.

Our one departure from the paper's filter: its positional features are functions of t / L for the
training length L. Here they are functions of the absolute lag l (l / MAX_PERIOD, and a cosine and
sine per band with periods geometric from MIN_PERIOD to MAX_PERIOD lags), so a filter tap means the
same at every sequence length: appending tokens never changes earlier outputs, and a model can be
evaluated on lengths it never saw.

Attention-like map: the operator is linear in v once the gates are fixed, so per channel
    y = M v,   M = diag(x_N) T_N ... diag(x_1) T_1,   T_n[t, s] = h_n[t - s] (+ b_n on the diagonal)
with T_n lower-triangular Toeplitz, so M is causal and depends on the input through the gates.
`attention_like_per_channel` gives the signed M (B, d_model, T, T), exact for the layer before
out_proj; `hook_pattern` receives |M| averaged over channels (H = 1), as for S4D, H3 and Mamba.
`hook_units` splits z_{N+1} into its d_model channels (width 1). Hyena has no fixed-size recurrent
state (a long filter needs the whole history), so it has no `hook_state`.
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
from .mamba import causal_conv
from .s4d import causal_convolution, toeplitz

SHORT_TAPS = 3  # the short depthwise convolution on the projected streams, as in the paper
MIN_PERIOD, MAX_PERIOD = 4.0, 1024.0  # periods (in lags) of the filter's positional features
# The window exp(-rate l) falls to 1% after `reach` lags; reaches are geometric across channels, so
# some channels look a few tokens back and others across the whole sequence (the paper's fast and
# slow decay, here in lags rather than fractions of a training length).
FAST_REACH, SLOW_REACH = 8.0, 1024.0


@dataclass
class HyenaOptions:
    order: int = setting(2, "Hyena: long convolutions, each followed by a data-controlled gate (the paper's N; "
                            "N + 1 projected streams)")
    filter_width: int = setting(32, "Hyena: hidden width of the implicit filter's MLP")
    filter_bands: int = setting(4, "Hyena: cosine/sine pairs of positional features the filter MLP reads "
                                   "(1 + 2 x bands inputs)")

    def __post_init__(self):
        # the upper bounds only catch typos: the paper's models use orders 2-3 and filters of width 64
        for name, most in (("order", 8), ("filter_width", 1024), ("filter_bands", 64)):
            value = getattr(self, name)
            check(1 <= value <= most, f"model.{name}", value, f"expected an integer from 1 to {most}")


class Sine(nn.Module):
    """sin(w x) with a learned frequency w per unit: the implicit filter's activation."""

    def __init__(self, width: int):
        super().__init__()
        self.frequency = nn.Parameter(torch.ones(width))

    def forward(self, x: Tensor) -> Tensor:
        return torch.sin(self.frequency * x)


class ImplicitFilter(nn.Module):
    """h: (order, channels, T) from an MLP over positional features of the lag, times a decay window."""

    def __init__(self, order: int, channels: int, width: int, bands: int):
        super().__init__()
        self.order, self.channels, self.bands = order, channels, bands
        self.mlp = nn.Sequential(nn.Linear(1 + 2 * bands, width), Sine(width), nn.Linear(width, width), Sine(width),
                                 nn.Linear(width, order * channels))
        reach = torch.logspace(math.log10(FAST_REACH), math.log10(SLOW_REACH), channels)
        self.register_buffer("decay_rate", math.log(100.0) / reach, persistent=False)

    @torch.no_grad()
    def reset_parameters(self) -> None:
        # PyTorch's own fan-in init: the model's N(0, 0.02) would leave filters of size ~1e-3
        for layer in self.mlp:
            if isinstance(layer, nn.Linear):
                layer.reset_parameters()

    def features(self, T: int) -> Tensor:
        """(T, 1 + 2 bands): l / MAX_PERIOD, then cos and sin of 2 pi l / period per band."""
        lags = torch.arange(T, dtype=self.decay_rate.dtype, device=self.decay_rate.device)
        periods = torch.logspace(math.log10(MIN_PERIOD), math.log10(MAX_PERIOD), self.bands,
                                 dtype=lags.dtype, device=lags.device)
        angles = 2 * math.pi * lags[:, None] / periods
        return torch.cat([lags[:, None] / MAX_PERIOD, torch.cos(angles), torch.sin(angles)], dim=-1)

    def forward(self, T: int) -> Tensor:
        lags = torch.arange(T, dtype=self.decay_rate.dtype, device=self.decay_rate.device)
        h = self.mlp(self.features(T)).t().reshape(self.order, self.channels, T)
        return h * torch.exp(-self.decay_rate[:, None] * lags)


@register_mixer("hyena")
class Hyena(Mixer):
    Options = HyenaOptions

    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        d, order = config.d_model, self.options.order
        self.in_proj = make_linear(d, (order + 1) * d, sigma_reparam=config.sigma_reparam)
        self.short_conv = nn.Conv1d((order + 1) * d, (order + 1) * d, SHORT_TAPS, groups=(order + 1) * d)
        self.filter = ImplicitFilter(order, d, self.options.filter_width, self.options.filter_bands)
        self.bias = nn.Parameter(torch.randn(order, d))
        self.out_proj = make_linear(d, d, sigma_reparam=config.sigma_reparam)

    def init_weights(self) -> None:
        self.filter.reset_parameters()

    def streams(self, x: Tensor) -> tuple[Tensor, list[Tensor]]:
        """v and the gates x_1 ... x_N, each (B, d_model, T)."""
        u = causal_conv(self.in_proj(x).transpose(1, 2), self.short_conv)
        v, *gates = u.chunk(self.options.order + 1, dim=1)
        return v, gates

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        v, gates = self.streams(x)
        h = self.filter(x.shape[1])
        if self.hook_pattern.active:
            self.hook_pattern(self._mean_magnitude(gates, h))
        z = v
        for n, gate in enumerate(gates):
            z = gate * (causal_convolution(z, h[n]) + self.bias[n, :, None] * z)
        return self.out_proj(self.units(z.transpose(1, 2), z.shape[1]))

    def _map(self, gates: list[Tensor], h: Tensor, part: slice) -> Tensor:
        """(B, channels in part, T, T) signed M = diag(x_N) T_N ... diag(x_1) T_1."""
        T = h.shape[-1]
        M = None
        for n, gate in enumerate(gates):
            kernel = toeplitz(h[n, part], T) + torch.diag_embed(self.bias[n, part, None].expand(-1, T))
            M = kernel[None] if M is None else kernel @ M
            M = gate[:, part, :, None] * M
        return M

    def _mean_magnitude(self, gates: list[Tensor], h: Tensor, group: int = 16) -> Tensor:
        """(B, 1, T, T) mean of |M| over channels, `group` channels at a time (long sequences)."""
        channels = h.shape[1]
        total = sum(self._map(gates, h, slice(start, start + group)).abs().sum(dim=1, keepdim=True)
                    for start in range(0, channels, group))
        return total / channels

    def attention_like_per_channel(self, x: Tensor, context: MixerContext) -> Tensor:
        """(B, d_model, T, T) signed M with z_{N+1} = M v per channel (before out_proj)."""
        v, gates = self.streams(x)
        return self._map(gates, self.filter(x.shape[1]), slice(None))

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        _, gates = self.streams(x)
        return self._mean_magnitude(gates, self.filter(x.shape[1]))

    def state_size(self, length: int) -> int:
        # a recurrent Hyena keeps every earlier input of each long convolution, plus the short
        # convolution's window of the last SHORT_TAPS - 1 projected inputs
        d, order = self.config.d_model, self.options.order
        return order * d * length + (order + 1) * d * (SHORT_TAPS - 1)
