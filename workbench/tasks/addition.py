"""Integer addition in the position-coupling format (Cho et al. 2024a, arXiv 2405.20671).

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
from .base import BOS, EOS, Batch, Task, Vocab, register_task, split_by_length
from .common import RANDOM_START, random_start

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

    @property
    def coupled_first(self) -> int:
        return 0 if self.params.ids == "abacus" else 1

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
        abacus_offset = 0 if self.id_offset in (None, RANDOM_START) else self.id_offset
        if self.params.ids == "abacus" and train:  # one offset per batch, as McLeish et al. draw it
            high = max(0, self.params.max_position - (int(width.max()) + 1))
            abacus_offset = int(torch.randint(0, high + 1, (1,), generator=generator))
        # Samples are drawn group by group, narrowest width first: that order fixes the generator's
        # stream, hence the data of every seed. Only the draws run per group; the digits, the sum
        # and the layout are then computed for the whole batch at once.
        groups = split_by_length(width)
        order = torch.cat([index for _, index in groups])
        len_a, len_b, width = len_a[order], len_b[order], width[order]
        widest = groups[-1][0]
        raw = torch.zeros(2, n, widest, dtype=torch.long)
        leading = torch.zeros(2, n, dtype=torch.long)
        start = torch.full((n, 1), abacus_offset)
        filled = 0
        for w, index in groups:
            rows = slice(filled, filled + index.shape[0])
            for operand in (0, 1):
                raw[operand, rows, :w] = torch.randint(0, 10, (index.shape[0], w), generator=generator)
                leading[operand, rows] = torch.randint(1, 10, (index.shape[0],), generator=generator)
            if self.params.ids != "abacus":
                start[rows] = random_start(index.shape[0], w + 1, self.params.max_position, generator, train,
                                           offset=self.id_offset)
            filled += index.shape[0]
        if self.params.ids == "abacus" and not train and self.id_offset == RANDOM_START:
            # each sample its own offset, drawn from training's range (one per batch would let one
            # draw decide a whole evaluation)
            start = random_start(n, int(width.max()) + 1, self.params.max_position, generator, False, first=0,
                                 offset=RANDOM_START)
        a = place_leading_digit(raw[0], len_a, leading[0])
        b = place_leading_digit(raw[1], len_b, leading[1])
        operator = torch.zeros(n, 1, dtype=torch.long) if self.params.ids == "abacus" else start
        return self._layout(width, a, b, add_digits(a, b), start, operator, {"length": width, "len_a": len_a,
                                                                              "len_b": len_b})

    def _layout(self, width, a, b, total, start, operator, meta) -> Batch:
        """`^ a + b = answer $` for every sample, each at its own width, padded on the right.

        Column p of a sample of width w holds: BOS (p = 0), a's digits most significant first
        (1..w), '+' (w + 1), b's digits (w + 2..2w + 1), '=' (2w + 2), the answer (2w + 3..3w + 3),
        EOS (3w + 4), then padding. Position ids give each digit start + its significance."""
        v, n_max = self.vocab, a.shape[1]
        p = torch.arange(3 * n_max + 5).expand(a.shape[0], -1)
        w = width[:, None]
        in_a, in_b = (p >= 1) & (p <= w), (p >= w + 2) & (p <= 2 * w + 1)
        in_answer = (p >= 2 * w + 3) & (p <= 3 * w + 3)
        a_index, b_index = (w - p).clamp(0, n_max - 1), (2 * w + 1 - p).clamp(0, n_max - 1)
        answer_index = (p - (2 * w + 3)).clamp(0, n_max)  # least significant first
        if not self.params.reverse_answer:
            answer_index = (w - answer_index).clamp(0, n_max)
        digit = torch.where(in_a, a.gather(1, a_index),
                            torch.where(in_b, b.gather(1, b_index), total.gather(1, answer_index)))
        is_digit = in_a | in_b | in_answer
        significance = 1 + torch.where(in_a, a_index, torch.where(in_b, b_index, answer_index))
        is_operator = (p == w + 1) | (p == 2 * w + 2)
        sequence = torch.where(is_digit, digit + v["0"], 0)
        sequence = torch.where(p == 0, v[BOS], torch.where(p == 3 * w + 4, v[EOS], sequence))
        sequence = torch.where(p == w + 1, v["+"], torch.where(p == 2 * w + 2, v["="], sequence))
        positions = torch.where(is_digit, start + significance, torch.where(is_operator, operator, 0))
        inputs = p[:, :-1]
        real = inputs < 3 * w + 4
        return Batch(torch.where(real, sequence[:, :-1], 0), sequence[:, 1:], real & (inputs >= 2 * w + 2),
                     positions[:, :-1], meta)


def place_leading_digit(raw: torch.Tensor, lengths: torch.Tensor, leading: torch.Tensor) -> torch.Tensor:
    """random_operands' digits from its draws, for rows of different widths at once: digits past
    each operand's length are zero and a multi-digit operand gets a nonzero leading digit."""
    column = torch.arange(raw.shape[1]).expand_as(raw)
    digits = torch.where(column < lengths[:, None], raw, 0)
    top = (lengths - 1).clamp(min=0)[:, None]
    return torch.where((column == top) & (lengths[:, None] > 1), leading[:, None], digits)
