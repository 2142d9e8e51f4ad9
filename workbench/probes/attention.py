"""Attention entropy per layer and head (Zhai et al. 2023, arXiv 2303.06296).

Ent(A_i) = -sum_j A_ij log A_ij per query row i, averaged over real (non-padding) query positions.
The normalized value divides each row by log(number of keys it can see) = log(i + 1), so 1 means
uniform attention and 0 one-hot; the first query (one key, no choice) is left out of it.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .registry import Probe, ProbeResult, register_probe, row


def attention_layers(model) -> list[int]:
    return [i for i, block in enumerate(model.blocks) if block.mixer.name == "attention"]


def row_entropy(pattern: Tensor) -> Tensor:
    """(..., T, T) attention -> (..., T) entropy in nats, with 0 log 0 = 0."""
    return -(pattern * pattern.clamp_min(1e-30).log()).sum(-1)


def entropy_summary(pattern: Tensor, valid: Tensor) -> tuple[Tensor, Tensor]:
    """Mean raw and normalized entropy per head: pattern (B, H, T, T), valid (B, T) bool."""
    return summarize_row_entropy(row_entropy(pattern), valid)


def summarize_row_entropy(entropy: Tensor, valid: Tensor) -> tuple[Tensor, Tensor]:
    """Mean raw and normalized entropy per head from per-query entropies (B, H, T), valid (B, T).

    Shared by the map-based probe and the kernel path (entropy_length), which never holds a map."""
    T = entropy.shape[-1]
    entropy = entropy.float()
    weights = valid[:, None, :].float().expand_as(entropy)
    raw = (entropy * weights).sum((0, 2)) / weights.sum((0, 2)).clamp_min(1)
    keys = torch.arange(1, T + 1, device=entropy.device, dtype=entropy.dtype)
    normalizer = keys.log().clamp_min(1e-12)
    normalized_weights = weights.clone()
    normalized_weights[..., 0] = 0  # one key: nothing to choose
    normalized = (entropy / normalizer * normalized_weights).sum((0, 2)) / normalized_weights.sum((0, 2)).clamp_min(1)
    return raw, normalized


def entropy_rows(raw: Tensor, normalized: Tensor, layer: int, length: int = -1, prefix: str = "") -> list[dict]:
    """Rows per head plus the layer mean (head -1) for one layer; probe names start with `prefix`."""
    rows = []
    for head in range(raw.shape[0]):
        rows.append(row(prefix + "entropy", raw[head], layer, head, length))
        rows.append(row(prefix + "entropy_normalized", normalized[head], layer, head, length))
    rows.append(row(prefix + "entropy", raw.mean(), layer, length=length))
    rows.append(row(prefix + "entropy_normalized", normalized.mean(), layer, length=length))
    return rows


@register_probe("entropy")
class AttentionEntropy(Probe):
    hooks = ("mixer.hook_pattern",)

    def __call__(self, model, batch, cache) -> ProbeResult:
        valid = batch.tokens != 0
        rows = []
        for layer in attention_layers(model):
            pattern = cache[f"blocks.{layer}.mixer.hook_pattern"].float()
            rows += entropy_rows(*entropy_summary(pattern, valid), layer)
        return ProbeResult(rows)


@register_probe("max_logit")
class MaxLogit(Probe):
    """The largest pre-softmax attention logit per layer and head (entropy collapses as it grows)."""

    hooks = ("mixer.hook_scores",)

    def __call__(self, model, batch, cache) -> ProbeResult:
        rows = []
        for layer in attention_layers(model):
            scores = cache[f"blocks.{layer}.mixer.hook_scores"]
            finite = torch.where(torch.isfinite(scores), scores, torch.full_like(scores, -math.inf))
            per_head = finite.amax(dim=(0, 2, 3))
            rows += [row("max_logit", v, layer, h) for h, v in enumerate(per_head.tolist())]
            rows.append(row("max_logit", per_head.max(), layer))  # the layer's largest, for summaries
        return ProbeResult(rows)


def entropy_at_logit_scale(scales: list[float], keys: int = 16, n: int = 512, seed: int = 0) -> dict[float, float]:
    """Mean entropy (nats) of softmax(scale * z) over n rows of `keys` standard-normal logits z, per scale.

    What a growing spectral norm of W_Q^T W_K does to a head: it multiplies every logit, and the
    entropy falls from log(keys) (uniform) towards 0 (one-hot). Used by the entropy-collapse notebook."""
    logits = torch.randn(n, keys, generator=torch.Generator().manual_seed(seed))
    return {scale: float(row_entropy(torch.softmax(scale * logits, dim=-1).unsqueeze(0)).mean()) for scale in scales}
