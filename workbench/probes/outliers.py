"""Activation outliers and the tokens that absorb attention (Bondarenko et al. 2023, arXiv 2306.12929).

A head with nothing to do parks its attention on the first token or a delimiter (a "no-op" head);
to make that update small the model grows huge residual activations on those tokens. Per layer:
- `max_abs_activation` and `kurtosis` (E[(x - mu)^4] / sigma^4 over every value of the residual
  stream after the block, real tokens only; 3 for a Gaussian, far more with outliers);
- `attention_first_token`, `attention_delimiters` per head (and the layer mean, head -1): the mean
  share of attention mass a query gives to position 0, or to delimiter tokens (BOS, EOS and the
  task's punctuation such as '=' or '+'); queries at position 0 (one key) are left out;
- `noop_head_fraction`: the share of heads that give more than half their mass to those tokens.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..tasks.base import BOS, EOS
from .attention import attention_layers
from .registry import Probe, ProbeResult, register_probe, row

NOOP_SHARE = 0.5  # a head giving more than this to the first token or delimiters is "no-op"


def kurtosis(values: Tensor) -> Tensor:
    """Plain (not excess) kurtosis of a flat tensor: 3 for a Gaussian."""
    values = values.double().flatten()
    centered = values - values.mean()
    variance = centered.pow(2).mean()
    return centered.pow(4).mean() / variance.clamp_min(1e-30).pow(2)


def delimiter_ids(vocab) -> list[int]:
    """BOS, EOS and every symbol with no letter or digit in it ('=', '+', '|', ...), never PAD."""
    if vocab is None:
        return [1, 2]  # BOS and EOS ids of every task's vocabulary
    return [i for i, s in enumerate(vocab.symbols)
            if i > 0 and (s in (BOS, EOS) or not any(ch.isalnum() for ch in s))]


def attention_shares(pattern: Tensor, tokens: Tensor, delimiters: list[int]) -> tuple[Tensor, Tensor]:
    """Mean attention share on key 0 and on delimiter keys per head: pattern (B, H, T, T)."""
    valid = tokens != 0
    queries = valid.clone()
    queries[:, 0] = False
    weights = queries[:, None, :].float()  # (B, 1, T)
    is_delimiter = torch.isin(tokens, torch.tensor(delimiters, device=tokens.device)).float()  # (B, T)
    first = pattern[..., 0]  # (B, H, T)
    delimited = (pattern * is_delimiter[:, None, None, :]).sum(-1)  # (B, H, T)
    count = weights.sum((0, 2)).clamp_min(1)
    return (first * weights).sum((0, 2)) / count, (delimited * weights).sum((0, 2)) / count


@register_probe("outliers")
class Outliers(Probe):
    hooks = ("hook_resid_post", "mixer.hook_pattern")

    def __call__(self, model, batch, cache) -> ProbeResult:
        valid = (batch.tokens != 0).reshape(-1)
        rows = []
        for layer in range(len(model.blocks)):
            resid = cache[f"blocks.{layer}.hook_resid_post"]
            values = resid.reshape(-1, resid.shape[-1])[valid]
            rows.append(row("max_abs_activation", values.abs().max(), layer))
            rows.append(row("kurtosis", kurtosis(values), layer))
        vocab = self.context.task.vocab if self.context is not None else None
        delimiters = delimiter_ids(vocab)
        for layer in attention_layers(model):
            pattern = cache[f"blocks.{layer}.mixer.hook_pattern"].float()
            first, delimited = attention_shares(pattern, batch.tokens, delimiters)
            for head in range(pattern.shape[1]):
                rows.append(row("attention_first_token", first[head], layer, head))
                rows.append(row("attention_delimiters", delimited[head], layer, head))
            rows.append(row("attention_first_token", first.mean(), layer))
            rows.append(row("attention_delimiters", delimited.mean(), layer))
            parked = torch.maximum(first, delimited) > NOOP_SHARE
            rows.append(row("noop_head_fraction", parked.float().mean(), layer))
        return ProbeResult(rows)
