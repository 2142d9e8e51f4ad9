"""Mamba (Gu & Dao 2023): a selective state-space block, with its reference and mimetic inits.

    x, z = in_proj(x)                       two streams of width d_inner = expand * d_model
    u = SiLU(causal depthwise conv1d(x))    d_conv taps, applied as shifted sums (see causal_conv)
    dt, B, C = x_proj(u)                    dt of rank ceil(d_model / 16), B and C of size d_state
    delta = softplus(dt_proj(dt))           per channel, with a bias
    y = selective_scan(u, delta, A = -exp(A_log), B, C, D)
    out = out_proj(y * SiLU(z))

`hook_pattern` receives the implicit attention of the scan (scan.implicit_attention) averaged
as |alpha| over the d_inner channels: one map per layer, H = 1. The full per-channel maps
(B, d_inner, T, T) come from `attention_like_per_channel`. The map excludes the D skip, the gate
and the projections, as the hidden attention of Ali et al. 2024 (arXiv 2403.01590) does; it is for
observation (listeners cannot replace it).

`hook_state` (only while listened to) receives the scan's state h_t for every position,
(B, T, d_inner, d_state), with h_t = exp(delta_t A) h_{t-1} + delta_t u_t B_t and
y_t = C_t . h_t + D u_t. A listener that changes it at a position patches the state there and the
scan continues from it (mixers/state.py). The convolution's window of the last d_conv - 1 inputs,
also carried by a recurrent Mamba, is not part of it: it depends on the inputs alone.

The scan is workbench.kernels.selective_scan: the Triton kernel on CUDA tensors, on CPU tensors the
stepwise scan with a hand-written backward, the fastest CPU form at these sizes (kernels/scan_stepwise.py).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..linear import make_linear
from .base import Mixer, MixerContext, register_mixer
from .common import set_linear
from .implicit_attention import implicit_attention, implicit_attention_magnitude
from .state import through_state_hook

DT_MIN, DT_MAX, DT_FLOOR = 1e-3, 1e-1, 1e-4  # the reference init's range for delta at init

# Mimetic init (Trockman et al. 2024, arXiv 2410.11135). The paper's constants are not
# public: these are OUR INTERPRETATION of its three ingredients.
MIMETIC_A_LOG = -8.0  # A = -exp(-8) ~ -3.4e-4: exp(delta A) ~ 1, the state barely decays
MIMETIC_DELTA = 1.0  # dt bias = softplus^-1(1), so delta ~ 1 at init (our choice; not in the paper)
MIMETIC_BC_NOISE = 0.1  # W_C = W_B + noise of this size relative to W_B ("not strictly equal")
MIMETIC_CONV_IDENTITY = False  # conv1d = identity on the current token: a separate ablation, off


def inverse_softplus(y: Tensor) -> Tensor:
    return y + torch.log(-torch.expm1(-y))


@register_mixer("mamba")
class Mamba(Mixer):
    settings = ("d_state", "d_conv", "expand", "ssm_init")
    has_state = True
    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        d, self.d_state = config.d_model, config.d_state
        self.d_inner = config.expand * d
        self.dt_rank = math.ceil(d / 16)
        linear = lambda i, o, bias=False: make_linear(i, o, bias, sigma_reparam=config.sigma_reparam)  # noqa: E731
        self.in_proj = linear(d, 2 * self.d_inner)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, config.d_conv, groups=self.d_inner,
                                padding=config.d_conv - 1)
        self.x_proj = linear(self.d_inner, self.dt_rank + 2 * self.d_state)
        self.dt_proj = linear(self.dt_rank, self.d_inner, bias=True)
        self.A_log = nn.Parameter(torch.zeros(self.d_inner, self.d_state))
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = linear(self.d_inner, d)
        self.init_weights()

    # --- initialization -----------------------------------------------------------------------
    @torch.no_grad()
    def init_weights(self) -> None:
        """The reference Mamba init: A from S4D-real (A_log = log n, n = 1..d_state, per channel);
        dt_proj weight uniform in +-dt_rank^-0.5 (the bound the reference names its "std");
        dt bias = softplus^-1 of a log-uniform draw in [1e-3, 1e-1]. Then the mimetic changes
        when model.ssm_init=mimetic."""
        n = torch.arange(1, self.d_state + 1, dtype=torch.float32)
        self.A_log.copy_(torch.log(n).expand(self.d_inner, -1))
        self.D.fill_(1.0)
        bound = self.dt_rank ** -0.5
        dt = torch.exp(torch.rand(self.d_inner) * (math.log(DT_MAX) - math.log(DT_MIN)) + math.log(DT_MIN))
        weight = torch.empty_like(self.dt_proj.weight).uniform_(-bound, bound)
        set_linear(self.dt_proj, weight, inverse_softplus(dt.clamp(min=DT_FLOOR)))
        if self.config.ssm_init == "mimetic":
            self.mimetic_init(conv_identity=MIMETIC_CONV_IDENTITY)

    @torch.no_grad()
    def mimetic_init(self, conv_identity: bool = False) -> None:
        """Make the layer start like linear attention (arXiv 2410.11135, our interpretation):
        1. A -> no decay: A_log very negative, so exp(delta A) ~ 1 over the whole sequence.
        2. delta ~ 1: with A ~ 0, delta only scales Bbar = delta B; softplus(bias) = 1.
        3. C_t . B_s ~ x_t . x_s: W_B rows ~ N(0, 1/d_state), so E[W_B^T W_B] = I, and
           W_C = W_B + small noise (the paper discusses W_B, W_C close but not equal).
        4. optionally conv1d = identity (taps [0, ..., 0, 1], bias 0): off by default."""
        self.A_log.fill_(MIMETIC_A_LOG)
        bias = inverse_softplus(torch.full((self.d_inner,), MIMETIC_DELTA))
        set_linear(self.dt_proj, bias=bias)
        weight = self.x_proj.weight.clone()
        rows_B = slice(self.dt_rank, self.dt_rank + self.d_state)
        rows_C = slice(self.dt_rank + self.d_state, self.dt_rank + 2 * self.d_state)
        W_B = torch.randn_like(weight[rows_B]) / math.sqrt(self.d_state)
        weight[rows_B] = W_B
        weight[rows_C] = W_B + MIMETIC_BC_NOISE * torch.randn_like(W_B) / math.sqrt(self.d_state)
        set_linear(self.x_proj, weight)
        if conv_identity:
            self.conv1d.weight.zero_()
            self.conv1d.weight[:, 0, -1] = 1.0
            self.conv1d.bias.zero_()

    # --- the block ----------------------------------------------------------------------------
    def ssm_inputs(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
        """u, delta (B, d_inner, T); A (d_inner, d_state); B, C (B, d_state, T); z (B, T, d_inner)."""
        stream, z = self.in_proj(x).chunk(2, dim=-1)
        u = F.silu(causal_conv(stream.transpose(1, 2), self.conv1d))
        dt, B, C = self.x_proj(u.transpose(1, 2)).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(self.dt_proj(dt)).transpose(1, 2)
        A = -torch.exp(self.A_log)
        return u, delta, A, B.transpose(1, 2), C.transpose(1, 2), z

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        u, delta, A, B, C, z = self.ssm_inputs(x)
        if self.hook_pattern.active:
            self.hook_pattern(implicit_attention_magnitude(delta, A, B, C))
        y = scan(u, delta, A, B, C, self.D).transpose(1, 2)
        if self.hook_state.active:
            y = self.listened_state(y, u, delta, A, B, C)
        return self.out_proj(self.units(y * F.silu(z), self.d_inner))

    def listened_state(self, y: Tensor, u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor) -> Tensor:
        """y (B, T, d_inner) after `hook_state` saw (and perhaps patched) the scan's states."""

        def step(h: Tensor, t: int) -> Tensor:
            drive = (delta[:, :, t] * u[:, :, t])[:, :, None] * B[:, None, :, t]
            return torch.exp(delta[:, :, t, None] * A) * h + drive

        def readout(h: Tensor, t: int) -> Tensor:
            return (h * C[:, None, :, t]).sum(dim=-1) + self.D * u[:, :, t]

        initial = u.new_zeros(u.shape[0], self.d_inner, self.d_state)
        return through_state_hook(self.hook_state, y, initial, step, readout)

    def attention_like_per_channel(self, x: Tensor, context: MixerContext) -> Tensor:
        """(B, d_inner, T, T) signed alpha, one map per channel: y_t = sum_s alpha[t, s] u_s + D u_t."""
        _, delta, A, B, C, _ = self.ssm_inputs(x)
        return implicit_attention(delta, A, B, C)

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        """(B, 1, T, T): mean over channels of |alpha| (not row-normalized)."""
        _, delta, A, B, C, _ = self.ssm_inputs(x)
        return implicit_attention_magnitude(delta, A, B, C)

    def state_size(self, length: int) -> int:
        # the SSM state plus the last d_conv - 1 inputs of the convolution; independent of length
        return self.d_inner * self.d_state + self.d_inner * (self.config.d_conv - 1)


def scan(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor) -> Tensor:
    """The selective scan on the fastest path for the device: Triton on CUDA, stepwise on CPU."""
    from workbench.kernels import selective_scan  # Triton itself loads only on a CUDA tensor

    return selective_scan(u, delta, A, B, C, D, backend="auto")


def causal_conv(x: Tensor, conv: nn.Conv1d) -> Tensor:
    """conv's depthwise causal convolution of x (B, channels, T), as d_conv shifted products.

    Equal to conv(x)[..., :T] with conv's left padding, but on short sequences far cheaper to
    differentiate on a CPU than the depthwise convolution kernel (whose backward dominated)."""
    taps, T = conv.weight.shape[-1], x.shape[-1]
    padded = F.pad(x, (taps - 1, 0))
    out = conv.bias[:, None].expand_as(x) if conv.bias is not None else torch.zeros_like(x)
    for k in range(taps):
        out = torch.addcmul(out, conv.weight[:, 0, k, None], padded[..., k:k + T])
    return out
