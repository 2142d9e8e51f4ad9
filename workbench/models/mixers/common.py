"""Small pieces the non-attention mixers share: causal masks, channel-averaged maps, re-init."""
from __future__ import annotations

import functools

import torch
from torch import Tensor, nn

from ..linear import SigmaReparamLinear


# Masks are built once per (length, device) and shared: callers must never write into them.
@functools.lru_cache(maxsize=32)
def causal_mask(T: int, device) -> Tensor:
    """(T, T) bool, True where the key position s <= the query position t."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


@functools.lru_cache(maxsize=32)
def future_mask(T: int, device) -> Tensor:
    """(T, T) bool, True where the key position s > the query position t (what causal attention hides)."""
    return torch.ones(T, T, dtype=torch.bool, device=device).triu(1)


@functools.lru_cache(maxsize=32)
def future_bias(T: int, device, dtype) -> Tensor:
    """(T, T) additive mask: 0 where the key position s <= the query position t, -inf after."""
    return torch.zeros(T, T, device=device, dtype=dtype).masked_fill_(future_mask(T, device), float("-inf"))


def channel_mean_map(per_channel: Tensor) -> Tensor:
    """(B, channels, T, T) signed maps -> (B, 1, T, T): the mean of |map| over channels.

    Signed per-channel maps cancel when averaged, so the display averages magnitudes, as the
    explainability code of HiddenMambaAttn (Ali et al. 2024, arXiv 2403.01590) does; the paper's
    own figures show single channels."""
    return per_channel.abs().mean(dim=1, keepdim=True)


@torch.no_grad()
def set_linear(layer: nn.Linear, weight: Tensor | None = None, bias: Tensor | None = None) -> None:
    """Overwrite a linear layer's parameters. With sigmaReparam, the power-iteration vector and
    gamma are recomputed so the effective weight equals the new weight, as at construction."""
    if weight is not None:
        layer.weight.copy_(weight)
    if bias is not None:
        layer.bias.copy_(bias)
    if isinstance(layer, SigmaReparamLinear):
        _, singular, vh = torch.linalg.svd(layer.weight, full_matrices=False)
        layer.u.copy_(vh[0])
        layer.gamma.copy_(singular[0])
