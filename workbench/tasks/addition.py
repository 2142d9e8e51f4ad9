"""Integer addition in the position-coupling format (Cho et al. 2024, seed 000 #3).

`^ 0 6 5 3 + 0 0 4 9 = 2 0 7 0 0 $`: operands zero-padded to equal length n, the answer written
least significant digit first (n + 1 digits, the overflow digit zero-padded), loss on the answer
and EOS only.

Coupled position ids follow the reference code's orientation (least significant digit gets the
smallest id): '+' and '=' get `start`, a digit of significance k (units: k = 1) gets `start + k`
in both operands and in the answer; BOS, EOS and PAD get 0. In training `start` is drawn per
sample from 1..max_position - (n + 1), so every id up to max_position is trained; in evaluation
start = 1.

Abacus ids (`ids=abacus`, McLeish et al. 2024): each number's digits are counted from its least
significant digit, the digit of significance k getting `offset + k`, in both operands and the
answer; every other token gets 0. The offset is drawn once per batch in training (uniform over
0..max_position - (n + 1)) and is 0 in evaluation. `model.pos=abacus` selects these ids.

`reverse_answer=False` writes the answer most significant digit first (the "plain" format); the
ids still follow each digit's significance. Training draws operand lengths from
min_digits..max_digits; a test set may take any length.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..errors import check
from .base import BOS, EOS, Batch, Task, Vocab, assemble, concat_padded, register_task, split_by_length
from .common import random_start

DIGITS = [str(d) for d in range(10)]
ID_SCHEMES = ("coupling", "abacus")


@dataclass
class AdditionParams:
    min_digits: int = field(default=1, metadata={"help": "fewest digits per operand in training"})
    max_digits: int = field(default=10, metadata={"help": "most digits per operand in training"})
    reverse_answer: bool = field(default=True, metadata={"help": "answer least significant digit first"})
    max_position: int = field(default=64, metadata={"help": "largest coupled position id trained"})
    ids: str = field(default="coupling", metadata={"help": "position ids: coupling or abacus (follows model.pos)",
                                                   "choices": ID_SCHEMES})


def random_operands(n: int, lengths: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Digits (m, n) least significant first; operand i has lengths[i] digits, no leading zero."""
    m = lengths.shape[0]
    digits = torch.randint(0, 10, (m, n), generator=generator)
    column = torch.arange(n).expand(m, n)
    digits = torch.where(column < lengths[:, None], digits, 0)
    leading = torch.randint(1, 10, (m,), generator=generator)
    top = (lengths - 1).clamp(min=0)
    multi_digit = lengths > 1
    digits[multi_digit, top[multi_digit]] = leading[multi_digit]
    return digits


def add_digits(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Column addition with carries: (m, n) + (m, n) -> (m, n + 1), least significant first."""
    m, n = a.shape
    out = torch.zeros(m, n + 1, dtype=torch.long)
    carry = torch.zeros(m, dtype=torch.long)
    for k in range(n):
        column = a[:, k] + b[:, k] + carry
        out[:, k], carry = column % 10, column // 10
    out[:, n] = carry
    return out


@register_task
class Addition(Task):
    name = "addition"
    Params = AdditionParams
    description = "a + b with zero-padded operands and a (by default) reversed answer"
    length_name = "digits per operand"
    uses_position_ids = True
    id_schemes = ID_SCHEMES

    def validate(self) -> None:
        p = self.params
        check(p.ids in ID_SCHEMES, "task.ids", p.ids, "choose one of: " + ", ".join(ID_SCHEMES))
        check(p.min_digits >= 1, "task.min_digits", p.min_digits, "expected >= 1")
        check(p.max_digits >= p.min_digits, "task.max_digits", p.max_digits,
              f"expected >= task.min_digits ({p.min_digits})")
        check(p.max_position >= p.max_digits + 2, "task.max_position", p.max_position,
              f"expected >= task.max_digits + 2 ({p.max_digits + 2})")

    def build_vocab(self) -> Vocab:
        return Vocab(DIGITS + ["+", "="])

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_digits, self.params.max_digits

    def sequence_length(self, length: int) -> int:
        return 3 * length + 4  # BOS a + b = answer(n+1) EOS, minus the last token

    def max_position_id(self, length: int) -> int:
        return max(self.params.max_position, length + 2)

    def _sample(self, n, generator, length, train) -> Batch:
        if length is None:
            low, high = self.train_lengths()
            len_a = torch.randint(low, high + 1, (n,), generator=generator)
            len_b = torch.randint(low, high + 1, (n,), generator=generator)
        else:
            len_a = len_b = torch.full((n,), length)
        width = torch.maximum(len_a, len_b)
        abacus_offset = 0
        if self.params.ids == "abacus" and train:  # one offset per batch, as McLeish et al. draw it
            high = max(0, self.params.max_position - (int(width.max()) + 1))
            abacus_offset = int(torch.randint(0, high + 1, (1,), generator=generator))
        groups = [self._fixed_width(w, len_a[idx], len_b[idx], generator, train, abacus_offset)
                  for w, idx in split_by_length(width)]
        return concat_padded(groups)

    def _fixed_width(self, n: int, len_a, len_b, generator, train: bool, abacus_offset: int = 0) -> Batch:
        m = len_a.shape[0]
        a = random_operands(n, len_a, generator)
        b = random_operands(n, len_b, generator)
        total = add_digits(a, b)
        zero, v = self.vocab["0"], self.vocab
        column = lambda s: torch.full((m, 1), v[s])  # noqa: E731
        answer = total if self.params.reverse_answer else total.flip(1)
        prompt = torch.cat([column(BOS), a.flip(1) + zero, column("+"), b.flip(1) + zero, column("=")], 1)
        answer_tokens = torch.cat([answer + zero, column(EOS)], 1)

        significance = torch.arange(n, 0, -1).expand(m, n)  # operands are written most significant first
        answer_significance = torch.arange(1, n + 2).expand(m, n + 1)
        if not self.params.reverse_answer:
            answer_significance = answer_significance.flip(1)
        zeros = torch.zeros(m, 1, dtype=torch.long)
        if self.params.ids == "abacus":
            start, operator = torch.full((m, 1), abacus_offset), zeros
        else:
            start = random_start(m, n + 1, self.params.max_position, generator, train)
            operator = start
        prompt_pos = torch.cat([zeros, start + significance, operator, start + significance, operator], 1)
        answer_pos = torch.cat([start + answer_significance, zeros], 1)
        meta = {"length": torch.full((m,), n), "len_a": len_a, "len_b": len_b}
        return assemble(prompt, answer_tokens, prompt_pos, answer_pos, meta)
