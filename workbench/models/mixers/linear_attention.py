"""Linear attention (Katharopoulos et al. 2020) with the feature maps of model.feature_map.

    elu1:  phi(x) = elu(x) + 1, on the head's own query/key dimension
    identity: phi(x) = x and no normalization by the key sum: each row of the causal map q_t . k_s is
           divided by the number of keys it sees (t + 1) instead, the 1/n of the linear self-attention
           the theory papers analyse (von Oswald et al. 2023; Ahn et al. 2023; Gatmiry et al. 2024,
           arXiv 2410.08292): out_t = (1/(t+1)) sum_{s<=t} v_s (k_s . q_t)
    based: the 2nd-order Taylor expansion of exp (Arora et al. 2024, "Based", arXiv 2402.18668), on
           queries and keys projected to BASED_QK_DIM = d' features per head:
           phi(x) = [1, x / d'^(1/4), vec(x x^T) / (sqrt(2) sqrt(d'))], so that
           phi(q) . phi(k) = 1 + q.k / sqrt(d') + (q.k)^2 / (2 d') ~ exp(q.k / sqrt(d'))

Two forms with the same math (tests check they agree):
    parallel:  out = normalize(mask * phi(Q) phi(K)^T) V          (training; T x T per head)
               based never builds its d'^2 features here: phi(q) . phi(k) is 1 + s + s^2 / 2 with
               s = q.k / sqrt(d'), one T x T product of d' = 16 columns instead of 273 (training steps 2-4x
               faster on mqar-vs-width's models: benchmarks/mixer_forms.py)
    recurrent: S_t = S_{t-1} + phi(k_t) v_t^T,  z_t = z_{t-1} + phi(k_t),
               out_t = phi(q_t) S_t / (phi(q_t) . z_t)             (constant state per token)
elu1 and based are positive (1 + x + x^2/2 > 0), so the normalizer never changes sign; identity has
no normalizer (out_t = phi(q_t) S_t / (t + 1)) and its map can be negative.
Positions come from the model's additive encodings only: rotary and bias encodings act on
softmax attention. `hook_pattern` gets the normalized map (B, H, T, T); as for attention, a
listener that returns a map changes the output.

model.gd_form=true (identity feature map only) is the linear self-attention of the theory papers in the
form where one layer is one step of (preconditioned) gradient descent on the prediction alone (Ahn et al.
2023; Gatmiry et al. 2024, arXiv 2410.08292, whose value/output matrix has a single nonzero entry, the
label's): the layer reads its values from one learned direction o of the residual stream (one number per
head: the stream's coordinate along o, times a learned scale) and writes along o only, and its queries and
keys read the stream with the o component projected out. What the layer writes is then invisible to later queries and keys, so a looped or stacked
model of such layers stays a polynomial of degree 3 in its inputs at any depth instead of 3^depth (the
plain form, looped, explodes on rare large inputs).

    out_t = o * sum_h (1/(t+1)) sum_{s<=t} c_h (x_s . u) (k_{s,h} . q_{t,h}),   q, k from x - (x.u) u, u = o/|o|

`hook_state` (only while listened to) receives S_t and z_t after every token packed in one tensor,
(B, T, H, F, head_dim + 1): [..., :head_dim] is S_t, [..., head_dim] is z_t (F features of phi).
Packed so, one step is a single update, [S | z] += phi(k_t) [v_t | 1]^T. A listener that changes it
at a position patches the state there and the recurrent form continues from it (mixers/state.py).
The states come from the layer's own queries and keys: a map returned to `hook_pattern` does not
change them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...errors import check
from ...typed import setting
from ..linear import make_linear
from .base import Mixer, MixerContext, register_mixer
from .common import causal_mask
from .state import through_state_hook

BASED_QK_DIM = 16  # Based uses a small query/key dimension so the d'^2 features stay cheap
EPS = 1e-6  # keeps 0/0 out when elu(x) + 1 underflows


def feature_map(x: Tensor, name: str) -> Tensor:
    if name == "identity":
        return x
    if name == "elu1":
        return F.elu(x) + 1.0
    d = x.shape[-1]
    square = (x[..., :, None] * x[..., None, :]).flatten(-2) / (math.sqrt(2.0) * math.sqrt(d))
    return torch.cat([torch.ones_like(x[..., :1]), x / d ** 0.25, square], dim=-1)


def feature_size(name: str, qk_dim: int) -> int:
    return qk_dim if name in ("elu1", "identity") else 1 + qk_dim + qk_dim * qk_dim


@dataclass
class LinearAttentionOptions:
    gd_form: bool = setting(False, "linear attention with feature_map=identity: values read from one learned "
                                   "direction and written back along it only, queries and keys blind to it (the theory "
                                   "papers' gradient-descent form; a looped model of it stays stable)")
    gd_shared_write: bool = setting(False, "gd_form: every layer writes along the same fixed direction (the stream's "
                                           "last coordinate) instead of its own learned one, so no layer's queries or "
                                           "keys see what any layer wrote (the theory's stacked form)")


@register_mixer("linear_attention")
class LinearAttention(Mixer):
    settings = ("n_heads", "feature_map")
    Options = LinearAttentionOptions
    has_state = True

    @classmethod
    def check_options(cls, config, options) -> None:
        check(not options.gd_form or config.feature_map == "identity", "model.gd_form", options.gd_form,
              "expected false unless model.feature_map=identity")
        check(not options.gd_shared_write or options.gd_form, "model.gd_shared_write", options.gd_shared_write,
              "expected false unless model.gd_form=true")

    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        d, self.n_heads = config.d_model, config.n_heads
        self.head_dim = d // self.n_heads
        self.qk_dim = self.head_dim if config.feature_map in ("elu1", "identity") else BASED_QK_DIM
        linear = lambda i, o: make_linear(i, o, sigma_reparam=config.sigma_reparam)  # noqa: E731
        self.qk = linear(d, 2 * self.n_heads * self.qk_dim)
        self.gd_form = bool(self.options.gd_form)
        if self.gd_form:  # one value per head, the stream's coordinate along `write`, written back along it
            self.head_dim = 1
            if self.options.gd_shared_write:
                # Own learned directions let layer l + 1's queries read what layer l wrote: a stack is then a
                # polynomial of degree 3^depth again and overflows at init from depth 3 on. One fixed direction
                # for all layers keeps every write out of every query and key (the learned read-in and read-out
                # can rotate the stream to it, so nothing is lost).
                # Even so each layer multiplies the prediction by about (1 + c q.k), so a stack at fan-in init
                # grows exponentially with depth (1e14 at depth 8 and kappa 100): each layer starts as the
                # identity instead (value scale 0, as ReZero's residual gate; Bachlechner et al. 2020).
                self.register_buffer("write", torch.eye(d)[-1].clone())
                self.value_scale = nn.Parameter(torch.zeros(self.n_heads))
            else:
                self.write = nn.Parameter(torch.randn(d) / math.sqrt(d))
                self.value_scale = nn.Parameter(torch.ones(self.n_heads))
        else:
            self.v = linear(d, d)
            self.out = linear(d, d)

    def blind(self, x: Tensor) -> Tensor:
        """x with its component along the written direction removed (gd_form: what queries and keys read)."""
        u = self.write / self.write.norm().clamp_min(1e-12)
        return x - (x @ u)[..., None] * u

    def features(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """phi(q), phi(k): (B, H, T, F) and v: (B, H, T, head_dim)."""
        q, k, v = self.projections(x)
        name = self.config.feature_map
        return feature_map(q, name), feature_map(k, name), v

    def projections(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, k: (B, H, T, qk_dim) before the feature map, and v: (B, H, T, head_dim)."""
        B, T, _ = x.shape
        q, k = self.qk(self.blind(x) if self.gd_form else x).view(B, T, 2, self.n_heads, self.qk_dim).permute(
            2, 0, 3, 1, 4)
        if self.gd_form:
            u = self.write / self.write.norm().clamp_min(1e-12)
            v = ((x @ u)[..., None] * self.value_scale).transpose(1, 2).unsqueeze(-1)
        else:
            v = self.v(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        return q, k, v

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        q, k, _ = self.projections(x)
        return normalized_map(q, k, self.config.feature_map)

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        q, k, v = self.projections(x)
        name = self.config.feature_map
        mixed = self.hook_pattern(normalized_map(q, k, name)) @ v
        if self.hook_state.active:
            phi_q, phi_k = feature_map(q, name), feature_map(k, name)
            mixed = self.listened_state(mixed.transpose(1, 2), phi_q, phi_k, v).transpose(1, 2)
        return self.merge(mixed)

    def listened_state(self, mixed: Tensor, phi_q: Tensor, phi_k: Tensor, v: Tensor) -> Tensor:
        """mixed (B, T, H, head_dim) after `hook_state` saw (and perhaps patched) [S | z]."""
        values = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # [v_t | 1]: (B, H, T, head_dim + 1)

        def step(state: Tensor, t: int) -> Tensor:
            return state + phi_k[:, :, t, :, None] * values[:, :, t, None, :]

        def readout(state: Tensor, t: int) -> Tensor:
            numerator = torch.einsum("bhf,bhfd->bhd", phi_q[:, :, t], state[..., :self.head_dim])
            if self.config.feature_map == "identity":
                return numerator / (t + 1)
            normalizer = torch.einsum("bhf,bhf->bh", phi_q[:, :, t], state[..., self.head_dim])
            return numerator / (normalizer[..., None] + EPS)

        B, H, _, features = phi_k.shape
        initial = v.new_zeros(B, H, features, self.head_dim + 1)
        return through_state_hook(self.hook_state, mixed, initial, step, readout)

    def recurrent(self, x: Tensor, context: MixerContext | None = None) -> Tensor:
        """The same layer one token at a time, carrying only S and z."""
        phi_q, phi_k, v = self.features(x)
        B, H, T, features = phi_q.shape
        S = v.new_zeros(B, H, features, self.head_dim)
        z = v.new_zeros(B, H, features)
        outputs = []
        for t in range(T):
            S = S + phi_k[:, :, t, :, None] * v[:, :, t, None, :]
            z = z + phi_k[:, :, t]
            numerator = torch.einsum("bhf,bhfd->bhd", phi_q[:, :, t], S)
            if self.config.feature_map == "identity":
                outputs.append(numerator / (t + 1))
                continue
            normalizer = torch.einsum("bhf,bhf->bh", phi_q[:, :, t], z)
            outputs.append(numerator / (normalizer[..., None] + EPS))
        return self.merge(torch.stack(outputs, dim=2))

    def merge(self, mixed: Tensor) -> Tensor:
        B, H, T, hd = mixed.shape
        if self.gd_form:
            return self.units(mixed.transpose(1, 2).reshape(B, T, H), H).sum(-1, keepdim=True) * self.write
        return self.out(self.units(mixed.transpose(1, 2).reshape(B, T, H * hd), H))

    def state_size(self, length: int) -> int:
        features = feature_size(self.config.feature_map, self.qk_dim)
        return self.n_heads * (features * self.head_dim + features)


def kernel(q: Tensor, k: Tensor, name: str) -> Tensor:
    """(B, H, T, T): phi(q_t) . phi(k_s) for every pair, from the queries and keys before the feature map."""
    if name == "based":  # the Taylor features' dot product in closed form (feature_map's docstring)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        return 1.0 + s + 0.5 * s.square()
    return feature_kernel(q, k, name)


def feature_kernel(q: Tensor, k: Tensor, name: str) -> Tensor:
    """The same pairs through the features themselves: phi(Q) phi(K)^T."""
    return feature_map(q, name) @ feature_map(k, name).transpose(-1, -2)


def normalized_map(q: Tensor, k: Tensor, name: str = "elu1") -> Tensor:
    """(B, H, T, T): causal phi(q_t) . phi(k_s), each row divided by its sum (plus EPS); for the
    identity map, by its number of keys t + 1. q and k come before the feature map."""
    T = q.shape[-2]
    scores = kernel(q, k, name) * causal_mask(T, q.device)
    if name == "identity":
        return scores / torch.arange(1, T + 1, device=scores.device, dtype=scores.dtype)[:, None]
    return scores / (scores.sum(dim=-1, keepdim=True) + EPS)
