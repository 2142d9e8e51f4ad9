"""What the in-context function tasks share: the layout (x_1, y_1, ..., x_k) of 2k - 1 slots, the
queries at the x slots, and k (the number of examples) as the length."""
from __future__ import annotations

import torch
from torch import Tensor

from .base import Batch, Task, concat_padded, split_by_length
from .common import draw_lengths


class InContextTask(Task):
    """Subclasses have params min_examples and max_examples and implement `_fixed_length(k, m, generator)`."""

    length_name = "examples"

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_examples, self.params.max_examples

    def sequence_length(self, length: int) -> int:
        return 2 * length - 1

    def _sample(self, n, generator, length, train) -> Batch:
        lengths = draw_lengths(n, *self.train_lengths(), generator, length)
        return concat_padded([self._fixed_length(k, idx.numel(), generator) for k, idx in split_by_length(lengths)])


def slot_vectors(xs: Tensor, ys: Tensor) -> Tensor:
    """(m, 2k - 1, d) what the read-in sees: x_i at slot 2i, (y_i, 0, ..., 0) at slot 2i + 1 (the
    last y is never shown: it is the answer to the last query)."""
    m, k, d = xs.shape
    vectors = torch.zeros(m, 2 * k, d)
    vectors[:, 0::2] = xs
    vectors[:, 1::2, 0] = ys
    return vectors[:, :2 * k - 1]


def query_mask(m: int, k: int) -> Tensor:
    """(m, 2k - 1) True at the x slots, where the model answers."""
    mask = torch.zeros(m, 2 * k - 1, dtype=torch.bool)
    mask[:, 0::2] = True
    return mask
