"""Copy a random string: `^ c a b = c a b $`, loss on the copy.

Coupled position ids pair each input symbol with its copy: symbol i gets `start + i` on both
sides, '=' gets `start`, BOS/EOS/PAD get 0 (start random in training, 0 in evaluation). Every
answer token is predicted by looking up the id one above its own, except the end: after the last
symbol (id start + L) the id start + L + 1 holds nothing, so the model must learn when to stop some
other way, and learns it from the training lengths. `couple_end=true` gives BOS that id, so the
end follows the same lookup as every symbol (a format variant, not the paper's).
"""
from __future__ import annotations

import string
from dataclasses import dataclass, field

import torch

from ..errors import check
from .base import BOS, EOS, Batch, Task, Vocab, assemble, concat_padded, register_task, split_by_length
from .common import random_start


@dataclass
class CopyParams:
    min_length: int = field(default=1, metadata={"help": "shortest string in training"})
    max_length: int = field(default=10, metadata={"help": "longest string in training"})
    alphabet: int = field(default=10, metadata={"help": "number of distinct symbols (2..26)"})
    max_position: int = field(default=64, metadata={"help": "largest coupled position id trained"})
    couple_end: bool = field(default=False, metadata={"help": "BOS takes the id after the last symbol's, so the "
                                                              "end is found by the same id lookup as each symbol"})


@register_task
class Copy(Task):
    name = "copy"
    Params = CopyParams
    description = "repeat a random string after '='"
    length_name = "string length"
    uses_position_ids = True
    coupled_first = 0

    def validate(self) -> None:
        p = self.params
        check(p.min_length >= 1, "task.min_length", p.min_length, "expected >= 1")
        check(p.max_length >= p.min_length, "task.max_length", p.max_length,
              f"expected >= task.min_length ({p.min_length})")
        check(2 <= p.alphabet <= 26, "task.alphabet", p.alphabet, "expected 2..26")
        span = p.max_length + 1 + p.couple_end
        check(p.max_position >= span, "task.max_position", p.max_position, f"expected >= {span} (the ids one "
              "string of task.max_length spans" + (", BOS's included)" if p.couple_end else ")"))

    def build_vocab(self) -> Vocab:
        return Vocab(list(string.ascii_lowercase[: self.params.alphabet]) + ["="])

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_length, self.params.max_length

    def sequence_length(self, length: int) -> int:
        return 2 * length + 2

    def max_position_id(self, length: int) -> int:
        return max(self.params.max_position, length + 1 + self.params.couple_end)

    def _sample(self, n, generator, length, train) -> Batch:
        low, high = self.train_lengths()
        lengths = torch.randint(low, high + 1, (n,), generator=generator) if length is None else torch.full((n,), length)
        return concat_padded([self._fixed_length(L, idx.numel(), generator, train)
                              for L, idx in split_by_length(lengths)])

    def _fixed_length(self, L: int, m: int, generator, train: bool) -> Batch:
        first = self.vocab["a"]
        symbols = torch.randint(first, first + self.params.alphabet, (m, L), generator=generator)
        column = lambda s: torch.full((m, 1), self.vocab[s])  # noqa: E731
        prompt = torch.cat([column(BOS), symbols, column("=")], 1)
        answer = torch.cat([symbols, column(EOS)], 1)
        couple_end = self.params.couple_end
        start = random_start(m, L + 1 + couple_end, self.params.max_position, generator, train,
                             first=self.coupled_first, offset=self.id_offset)
        index = start + torch.arange(1, L + 1).expand(m, L)
        zeros = torch.zeros(m, 1, dtype=torch.long)
        bos = start + L + 1 if couple_end else zeros
        prompt_pos = torch.cat([bos, index, start], 1)
        answer_pos = torch.cat([index, zeros], 1)
        return assemble(prompt, answer, prompt_pos, answer_pos, {"length": torch.full((m,), L)})
