"""Parity of a bit string, with or without a running-parity scratchpad.

`^ 1 0 1 1 = 1 $` (scratchpad off) or `^ 1 0 1 1 = 1 1 0 1 $` (scratchpad on: the parity of
every prefix, the last one being the answer). Loss and exact match on everything after '='.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .base import BOS, EOS, Batch, Task, Vocab, assemble, concat_padded, register_task, split_by_length
from .common import check_range, column, draw_lengths


@dataclass
class ParityParams:
    min_length: int = field(default=1, metadata={"help": "fewest bits in training"})
    max_length: int = field(default=10, metadata={"help": "most bits in training"})
    scratchpad: bool = field(default=False, metadata={"help": "answer with the parity of every prefix"})


@register_task
class Parity(Task):
    name = "parity"
    Params = ParityParams
    description = "parity of a bit string, optionally with a running-parity scratchpad"
    length_name = "bits"

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_length", p.min_length, "max_length", p.max_length)

    def build_vocab(self) -> Vocab:
        return Vocab(["0", "1", "="])

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_length, self.params.max_length

    def sequence_length(self, length: int) -> int:
        return length + 2 + (length if self.params.scratchpad else 1)

    def _sample(self, n, generator, length, train) -> Batch:
        lengths = draw_lengths(n, *self.train_lengths(), generator, length)
        return concat_padded([self._fixed_length(L, idx.numel(), generator)
                              for L, idx in split_by_length(lengths)])

    def _fixed_length(self, L: int, m: int, generator) -> Batch:
        bits = torch.randint(0, 2, (m, L), generator=generator)
        running = bits.cumsum(1) % 2
        answer = running if self.params.scratchpad else running[:, -1:]
        zero = self.vocab["0"]
        prompt = torch.cat([column(m, self.vocab[BOS]), bits + zero, column(m, self.vocab["="])], 1)
        answer_tokens = torch.cat([answer + zero, column(m, self.vocab[EOS])], 1)
        return assemble(prompt, answer_tokens, meta={"length": torch.full((m,), L)})
