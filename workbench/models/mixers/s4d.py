"""S4D (Gu et al. 2022, "On the Parameterization and Initialization of Diagonal State Space
Models"): a diagonal linear SSM per channel, applied as one long causal convolution.

Per channel, complex diagonal A (S4D-Lin init: A_n = -1/2 + i pi n), step dt (log-uniform in
[1e-3, 1e-1]), zero-order hold, B folded into C (B = 1, as in the paper's minimal S4D):
    K[l] = 2 Re( sum_n C_n (exp(dt A_n) - 1) / A_n * exp(dt A_n l) ),   y = K * u + D u
The block: y = out_linear(GELU(ssm(x))) with a GLU, as the S4D example model.

`hook_pattern` receives the Toeplitz kernel matrix M[t, s] = K[t - s] (+ D on the diagonal), so
that y = M u exactly; |M| averaged over channels gives one map (H = 1). The map does not depend
on the input, only on the weights.

The same layer as a recurrence, per channel and complex mode n (B folded into the state's input):
    x_t = exp(dt A_n) x_{t-1} + (exp(dt A_n) - 1) / A_n u_t,    y_t = 2 Re( sum_n C_n x_t ) + D u_t
`hook_state` (only while listened to) receives x_t for every position as real numbers,
(B, T, d_model, d_state // 2, 2), the last axis the real and imaginary parts (torch.view_as_real).
A listener that changes it at a position patches the state there and the recurrence continues from
it (mixers/state.py); without a change the convolution's output is used as it is.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..hooks import HookPoint
from ..linear import make_linear
from .base import Mixer, MixerContext, register_mixer
from .common import causal_mask, channel_mean_map
from .state import through_state_hook

DT_MIN, DT_MAX = 1e-3, 1e-1
FFT_ABOVE = 256  # longer sequences convolve by FFT (O(T log T)); shorter ones by an exact Toeplitz product


class DiagonalSSM(nn.Module):
    """The S4D kernel generator and its causal convolution, for `channels` independent channels."""

    def __init__(self, channels: int, d_state: int):
        super().__init__()
        half = max(1, d_state // 2)  # complex pairs: conjugate symmetry gives d_state real numbers
        self.log_dt = nn.Parameter(torch.empty(channels))
        self.log_A_real = nn.Parameter(torch.empty(channels, half))
        self.A_imag = nn.Parameter(torch.empty(channels, half))
        self.C = nn.Parameter(torch.empty(channels, half, 2))  # real and imaginary parts
        self.D = nn.Parameter(torch.empty(channels))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        channels, half = self.log_A_real.shape
        self.log_dt.copy_(torch.rand(channels) * (math.log(DT_MAX) - math.log(DT_MIN)) + math.log(DT_MIN))
        self.log_A_real.fill_(math.log(0.5))
        self.A_imag.copy_(math.pi * torch.arange(half, dtype=torch.float32).expand(channels, -1))
        self.C.normal_(0.0, math.sqrt(0.5))
        self.D.normal_()

    def kernel(self, T: int) -> Tensor:
        """K: (channels, T), the response at lag l to a unit input."""
        dt = torch.exp(self.log_dt)[:, None]
        A = torch.complex(-torch.exp(self.log_A_real), self.A_imag)
        dtA = A * dt
        C = torch.view_as_complex(self.C.contiguous()) * (torch.exp(dtA) - 1.0) / A
        lags = torch.arange(T, device=dt.device, dtype=dt.dtype)
        powers = torch.exp(dtA[..., None] * lags)  # (channels, half, T)
        return 2.0 * torch.einsum("cn,cnl->cl", C, powers).real

    def toeplitz(self, T: int) -> Tensor:
        """M: (channels, T, T) with M[t, s] = K[t - s] for s <= t, plus D on the diagonal."""
        return toeplitz(self.kernel(T), T) + torch.diag_embed(self.D[:, None].expand(-1, T))

    def forward(self, u: Tensor) -> Tensor:
        """u: (B, channels, T) -> (B, channels, T)."""
        T = u.shape[-1]
        return causal_convolution(u, self.kernel(T)) + self.D[:, None] * u

    def recurrence(self, u: Tensor):
        """(initial, step, readout) of the recurrent form on input u (B, channels, T), with the state
        as real numbers (B, channels, half, 2), for mixers/state.py."""
        dt = torch.exp(self.log_dt)[:, None]
        A = torch.complex(-torch.exp(self.log_A_real), self.A_imag)
        decay = torch.exp(A * dt)  # (channels, half)
        gain = (decay - 1.0) / A
        C = torch.view_as_complex(self.C.contiguous())

        def step(h: Tensor, t: int) -> Tensor:
            return torch.view_as_real(decay * torch.view_as_complex(h) + gain * u[:, :, t, None])

        def readout(h: Tensor, t: int) -> Tensor:
            return 2.0 * (C * torch.view_as_complex(h)).sum(dim=-1).real + self.D * u[:, :, t]

        initial = u.new_zeros(u.shape[0], *self.C.shape)
        return initial, step, readout

    def listened(self, hook: HookPoint, outputs: Tensor, u: Tensor) -> Tensor:
        """outputs (B, channels, T) of forward(u) after `hook` saw (and perhaps patched) the states."""
        return through_state_hook(hook, outputs.transpose(1, 2), *self.recurrence(u)).transpose(1, 2)


def toeplitz(kernel: Tensor, T: int) -> Tensor:
    """(channels, L) causal kernel -> (channels, T, T) lower-triangular Toeplitz matrix."""
    if kernel.shape[-1] < T:
        kernel = F.pad(kernel, (0, T - kernel.shape[-1]))
    lag = torch.arange(T, device=kernel.device)
    lag = lag[:, None] - lag[None, :]
    matrix = kernel[:, lag.clamp(min=0)]
    return matrix * causal_mask(T, kernel.device)


def causal_convolution(u: Tensor, kernel: Tensor) -> Tensor:
    """y_t = sum_{s <= t} kernel[t - s] u_s per channel; u (B, channels, T), kernel (channels, L).

    Short sequences use the Toeplitz product, whose masked zeros make it exactly causal; long ones
    use an FFT padded to 2T (causal up to rounding: no circular wrap-around)."""
    T = u.shape[-1]
    if T <= FFT_ABOVE:
        return torch.einsum("cts,bcs->bct", toeplitz(kernel[:, :T], T), u)
    n = 2 * T
    spectrum = torch.fft.rfft(u, n=n) * torch.fft.rfft(kernel[:, :T], n=n)
    return torch.fft.irfft(spectrum, n=n)[..., :T]


@register_mixer("s4d")
class S4D(Mixer):
    settings = ("d_state",)
    has_state = True

    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        d = config.d_model
        self.ssm = DiagonalSSM(d, config.d_state)
        self.out = make_linear(d, 2 * d, sigma_reparam=config.sigma_reparam)

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        if self.hook_pattern.active:
            self.hook_pattern(self.attention_like(x, context))
        u = x.transpose(1, 2)
        y = self.ssm(u)
        if self.hook_state.active:
            y = self.ssm.listened(self.hook_state, y, u)
        y = self.units(y.transpose(1, 2), x.shape[-1])
        return F.glu(self.out(F.gelu(y)), dim=-1)

    def attention_like_per_channel(self, x: Tensor, context: MixerContext) -> Tensor:
        """(B, d_model, T, T): the Toeplitz matrix of each channel (the same for every sample)."""
        B, T, _ = x.shape
        return self.ssm.toeplitz(T).expand(B, -1, -1, -1)

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        B, T, _ = x.shape
        return channel_mean_map(self.ssm.toeplitz(T)[None]).expand(B, -1, -1, -1)

    def state_size(self, length: int) -> int:
        return self.config.d_model * self.config.d_state  # d_state / 2 complex numbers per channel
