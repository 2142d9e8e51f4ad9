"""Multi-head softmax attention, causal unless `model.bidirectional` (then every query sees every real
key, PAD hidden), with the options the probes need.

Fast path: scaled_dot_product_attention; in CPU training, with no position bias or rotation, the
same kernels inside one autograd function (attention_fused.py), which copies less; in training with
a learned logit bias, torch's math path without its fully-masked-row guard (attention_biased.py). While
`hook_pattern` or `hook_scores` listens (or for a clipped softmax) the T x T pattern is computed
explicitly and handed to the hooks. While only `hook_entropy` listens, the layer runs through the
kernel dispatcher (workbench.kernels), which returns the output and every query's entropy without
a T x T map, so entropy can be measured at lengths where the map would not fit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ...errors import check
from ...typed import setting
from ..heads import attention_head_dim
from ..hooks import HookPoint
from ..linear import effective_weight, make_linear
from ..positions import PositionalEncoding
from .attention_biased import biased_attention, needs_bias_gradient
from .attention_fused import causal_attention
from .base import Mixer, MixerContext, register_mixer
from .common import future_bias, future_mask

# Clipped softmax (Bondarenko et al. 2023, arXiv 2306.12929): stretch to [gamma, zeta], clip to
# [0, 1], so a head can output exact zeros without pushing logits to infinity.
CLIP_GAMMA, CLIP_ZETA = -0.03, 1.0


@dataclass
class AttentionOptions:
    attention_head_dim: int = setting(0, "attention: width of each head's queries, keys and values; 0 (the default) "
                                         "splits d_model evenly (d_model / n_heads); a width of its own gives every "
                                         "head its own projections, so parameters grow with n_heads at a fixed d_model")

    def __post_init__(self):
        check(self.attention_head_dim >= 0, "model.attention_head_dim", self.attention_head_dim,
              "expected 0 (d_model / n_heads) or a width >= 1")


@register_mixer("attention")
class Attention(Mixer):
    settings = ("n_heads", "softmax", "gated_attention", "logit_scaling", "scalable_softmax", "bidirectional")
    Options = AttentionOptions

    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        d, self.n_heads = config.d_model, config.n_heads
        self.head_dim = attention_head_dim(config)
        inner = self.n_heads * self.head_dim  # d unless model.attention_head_dim says otherwise
        self.qkv = make_linear(d, 3 * inner, sigma_reparam=config.sigma_reparam)
        self.out = make_linear(inner, d, sigma_reparam=config.sigma_reparam)
        self.gate = make_linear(d, self.n_heads, sigma_reparam=config.sigma_reparam) if config.gated_attention else None
        # Scalable-Softmax's per-head factor s; from 1 / log 2 its scale log(i + 1) / log 2 starts as
        # the fixed logit_scaling's one key later, so the two differ only in what training does to s.
        self.length_factor = (torch.nn.Parameter(torch.full((self.n_heads,), 1.0 / math.log(2.0)))
                              if config.scalable_softmax else None)
        self.hook_scores = HookPoint()  # pre-softmax logits (B, H, T, T), masked with -inf
        self.hook_entropy = HookPoint()  # per-query softmax entropy in nats (B, H, T)
        # queries, keys (after any rotation and logit scaling) and values, each (B, H, T, head_dim)
        self.hook_q, self.hook_k, self.hook_v = HookPoint(), HookPoint(), HookPoint()

    def project(self, x: Tensor, context: MixerContext, contiguous: bool = False) -> tuple[Tensor, Tensor, Tensor]:
        B, T, _ = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        # For explicit matmuls, one copy into (3, B, H, T, head_dim) beats the strided copies each
        # matmul would make; scaled_dot_product_attention reads the strided views faster as they are.
        q, k, v = qkv.contiguous() if contiguous else qkv
        q, k = context.encoding.rotate(q, k, context.positions)
        if self.config.logit_scaling:
            q = q * log_length_scale(T, x.device)[:, None]
        if self.length_factor is not None:  # s log n, n = i + 1 keys seen by query i (Nakanishi 2025)
            keys_seen = torch.arange(1, T + 1, device=x.device, dtype=q.dtype)
            q = q * (self.length_factor[:, None] * keys_seen.log())[None, :, :, None]
        return self.hook_q(q), self.hook_k(k), self.hook_v(v)

    def scores(self, q: Tensor, k: Tensor, context: MixerContext) -> Tensor:
        B, H, T, head_dim = q.shape
        scale = 1.0 / math.sqrt(head_dim)  # on q (T x d numbers) rather than on the T x T scores
        # Without autograd and with no listener holding q, q is this forward's own copy (project's
        # contiguous one, or a fresh rotated or rescaled tensor), so it is scaled where it lies: the
        # same products, one buffer fewer. Under autograd the product keeps its own tensor, as before.
        q = q.mul_(scale) if not torch.is_grad_enabled() and not self.hook_q.active else q * scale
        bias = context.encoding.bias(self.layer_index, context.positions)
        if self.config.bidirectional:  # the config allows no logit bias here
            hidden = padding_bias(context, q.dtype)
            scores = q @ k.transpose(-1, -2)
            return scores if hidden is None else scores + hidden
        if bias is None:
            # The batched matmul adds the causal mask as it writes the scores (one pass over T x T
            # instead of two). Adding 0 or -inf is exact: the same scores as masking afterwards.
            mask = future_bias(T, q.device, q.dtype)
            return torch.baddbmm(mask, q.reshape(B * H, T, head_dim), k.reshape(B * H, T, head_dim).transpose(1, 2)
                                 ).view(B, H, T, T)
        scores = q @ k.transpose(-1, -2) + bias
        return scores.masked_fill_(future_mask(T, q.device), float("-inf"))  # a fresh tensor: in place is safe

    def pattern(self, scores: Tensor) -> Tensor:
        # Not in place (softmax(out=scores)): the same numbers, but measured 2x slower at T=34,
        # and no faster at T=64, than the out-of-place kernel.
        pattern = scores.softmax(dim=-1)
        if self.config.softmax == "clipped":
            pattern = ((CLIP_ZETA - CLIP_GAMMA) * pattern + CLIP_GAMMA).clamp(0.0, 1.0)
        return pattern

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        B, T, _ = x.shape
        # the entropy kernels are causal: bidirectional entropy comes from the explicit pattern
        explicit = (self.hook_pattern.active or self.hook_scores.active or self.config.softmax != "standard"
                    or (self.hook_entropy.active and self.config.bidirectional))
        if not explicit and not self.projections_listened() and self.fused_training(x, context):
            return causal_attention(x, effective_weight(self.qkv), self.qkv.bias, effective_weight(self.out),
                                    self.out.bias, self.n_heads)
        q, k, v = self.project(x, context, contiguous=explicit)
        if explicit:
            scores = self.hook_scores(self.scores(q, k, context))
            pattern = self.hook_pattern(self.pattern(scores))
            if self.hook_entropy.active:
                self.hook_entropy(-(pattern * pattern.clamp_min(1e-30).log()).sum(-1))
            mixed = pattern @ v
        elif self.hook_entropy.active:
            from ...kernels import attention_entropy  # imported late: kernels import workbench

            mixed, _, entropy = attention_entropy(q, k, v, bias=self.kernel_bias(context))
            self.hook_entropy(entropy)
            mixed = mixed.to(q.dtype)
        elif self.config.bidirectional:
            hidden = padding_bias(context, q.dtype)
            mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=hidden)
        else:
            bias = context.encoding.bias(self.layer_index, context.positions)
            if bias is None:
                mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                mask = bias.masked_fill(future_mask(T, x.device), float("-inf")).to(q.dtype)
                if needs_bias_gradient(mask):  # a learned bias in training: the same numbers, faster
                    mixed = biased_attention(q, k, v, mask)
                else:
                    mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        if self.gate is not None:
            mixed = mixed * torch.sigmoid(self.gate(x)).transpose(1, 2)[..., None]
        return self.out(self.units(mixed.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim), self.n_heads))

    def projections_listened(self) -> bool:
        """Whether a listener wants q, k, v or the per-head outputs, which the fused path never forms."""
        return any(h.active for h in (self.hook_q, self.hook_k, self.hook_v, self.hook_units))

    def fused_training(self, x: Tensor, context: MixerContext) -> bool:
        """Whether a forward that needs no explicit pattern is what attention_fused covers (see there).

        An encoding with a logit bias or a rotation overrides `bias` or `rotate`; asking the class
        spares computing a T x T bias here that the fast path would compute again."""
        encoding = type(context.encoding)
        plain_positions = encoding.rotate is PositionalEncoding.rotate and encoding.bias is PositionalEncoding.bias
        return (torch.is_grad_enabled() and x.device.type == "cpu" and plain_positions and not self.hook_entropy.active
                and not self.config.logit_scaling and self.length_factor is None and self.gate is None
                and not self.config.bidirectional)

    def kernel_bias(self, context: MixerContext):
        """This layer's logit bias in the form workbench.kernels takes: None, ALiBi slopes (H,), or
        a callable giving any (query range x key range) tile, so no T x T bias is ever built."""
        encoding, positions = context.encoding, context.positions
        if encoding.bias(self.layer_index, positions[:1, :1]) is None:
            return None
        if positions.shape[0] > 1 and bool((positions == positions[:1]).all()):
            positions = positions[:1]  # one bias broadcast over the batch
        default = bool((positions == torch.arange(positions.shape[1], device=positions.device)).all())
        if encoding.name == "alibi" and default:
            return encoding.slopes

        def tile(rows: Tensor, cols: Tensor) -> Tensor:
            # the encoding's own bias over the queries followed by the keys, cut to the cross block
            joined = torch.cat([positions[:, rows], positions[:, cols]], dim=1)
            return encoding.bias(self.layer_index, joined)[..., :rows.numel(), rows.numel():]

        return tile

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        q, k, _ = self.project(x, context, contiguous=True)
        return self.pattern(self.scores(q, k, context))

    def state_size(self, length: int) -> int:
        return 2 * self.n_heads * self.head_dim * length  # the key-value cache grows with the sequence


def padding_bias(context: MixerContext, dtype) -> Tensor | None:
    """(B, 1, 1, T) additive mask hiding PAD keys from bidirectional attention (0 or -inf); None when
    every token is real. A row always keeps its first token (BOS), so no query loses every key."""
    if context.real is None or bool(context.real.all()):
        return None
    hidden = torch.zeros(context.real.shape, dtype=dtype, device=context.real.device)
    return hidden.masked_fill_(~context.real, float("-inf"))[:, None, None, :]


def log_length_scale(T: int, device) -> Tensor:
    """Per-query logit scale log(i + 2) / log(2): keeps attention sharp as the context grows
    (Chi et al. 2023, arXiv 2311.00684; Wang et al. 2024, arXiv 2404.12224). It is 1 for the first
    query and grows slowly."""
    return torch.log(torch.arange(T, device=device, dtype=torch.float32) + 2.0) / math.log(2.0)
