"""Random labels for any task: each answer token is replaced by a fixed pseudo-random symbol.

"Fixed" means a deterministic function of the sample's prompt and the answer position, so the same
input always carries the same (meaningless) label: the model can only memorize, never generalize
(the lazy-neuron and memorization studies train on such labels).
"""
from __future__ import annotations

import torch

from .base import Batch

_PRIME = 2_147_483_647
_FIRST_SYMBOL = 3  # skip PAD, BOS, EOS


def randomize_labels(batch: Batch, vocab_size: int, seed: int = 0) -> Batch:
    prompt = torch.where(batch.loss_mask.cumsum(1) == 0, batch.tokens, torch.zeros_like(batch.tokens))
    weights = torch.randint(1, _PRIME, (prompt.shape[1],), generator=torch.Generator().manual_seed(seed + 17))
    digest = (prompt * weights).sum(1) % _PRIME  # (B,)
    position = torch.arange(prompt.shape[1])
    mixed = (digest[:, None] * 1_000_003 + (position + 1) * 7_919 + seed) % _PRIME
    labels = _FIRST_SYMBOL + mixed % (vocab_size - _FIRST_SYMBOL)
    targets = torch.where(batch.loss_mask, labels, batch.targets)
    return Batch(batch.tokens, targets, batch.loss_mask, batch.position_ids, batch.meta)
