"""Multiplication a x b with a scratchpad and multi-level coupled ids (Cho et al. 2024b, arXiv
2410.15787), and optional train-set priming (Jelassi et al. 2023, arXiv 2306.15400).

Two scratchpads (`scratchpad`); a has N digits (the length axis), b has M (min_b_digits..max_b_digits;
N x 2 by default); every number is written least significant digit first, zero-padded; loss on the
whole answer.

- `running` (ours, the default): `^ 4 2 3 * 1 2 = 6 4 8 0 0 > 6 7 0 5 0 $` for 423 x 21. The answer
  lists s_j = s_{j-1} + a * b_j * 10^(j-1) for the digits b_1 (units) .. b_M of b, each of N + M
  digits, separated by '>'; s_M = a * b. Each digit folds a digit product, its carry and a sum.
- `partial_products` (the paper's code): `^ 4 2 3 * 1 2 = 6 4 8 0 + 3 2 4 0 = 6 4 8 0 0 > 6 7 0 5 0 $`.
  First the N x 1 products p_j = a * b_j (N + 1 digits, '+' between), then after '=' the running
  sums of the shifted p_j as above: one multiplication step, then one addition step, per digit.

Position ids of `running` (our interpretation; packed as `significance + LEVEL_STRIDE * level`, see
`multi_operand_addition`): a's digit of significance t gets start + t at level 0, '*' and '='
get start at level 0; b's digit j gets start + j at level j; digit t of s_j gets start + t at level j,
and the '>' after it start at level j. start is random in training, 1 in evaluation.

Position ids of `partial_products` (the paper's three, packed by `coupled_ids.pack`): a's digit t gets
significance start + 1 + t; b's digit j (units j = 1) level j; digit t of p_j significance start + 1 + t,
level j and shifted significance start3 + j + t (its place in the sums); digit k of s_j level j and
shifted significance start3 + 1 + k. The separator before p_j or s_j carries that part's ids with
its digit slot at 0 (significance start, shifted start3 + j - 1 for p_j, start3 for s_j); '*' and b
have significance 0, and only the answer has shifted ids (every token still marks the sequence as one
of three ids). start and start3 are drawn apart in training (the paper's code draws its three starts
apart; the level here starts at 1, as in `running`).

Priming: `priming` > 0 keeps that many fixed long examples (a of `priming_digits` digits, drawn once
from `priming_seed`); in training each sample is replaced by one of them with probability
`priming_rate`. Test sets never contain them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..coupled_ids import LEVEL_STRIDE, MAX_LEVELS, SHIFTED_ROW, pack
from ..errors import ConfigError, check
from .addition import DIGITS, random_operands
from .base import BOS, EOS, Batch, Task, Vocab, assemble, concat_padded, register_task, split_by_length
from .common import check_range, column, random_start


SCRATCHPADS = ("running", "partial_products")


@dataclass
class MultiplicationParams:
    min_digits: int = field(default=1, metadata={"help": "fewest digits of a in training"})
    max_digits: int = field(default=5, metadata={"help": "most digits of a in training"})
    min_b_digits: int = field(default=2, metadata={"help": "fewest digits of b"})
    max_b_digits: int = field(default=2, metadata={"help": "most digits of b"})
    max_position: int = field(default=32, metadata={"help": "largest significance id trained"})
    priming: int = field(default=0, metadata={"help": "fixed long examples mixed into training (0: off)"})
    priming_digits: int = field(default=0, metadata={"help": "digits of a in primed examples (0: 3 x max_digits)"})
    priming_rate: float = field(default=0.02, metadata={"help": "probability a training sample is primed"})
    priming_seed: int = field(default=0, metadata={"help": "seed of the primed examples"})
    scratchpad: str = field(default="running", metadata={
        "help": "running (ours: the running sums alone) or partial_products (the paper's: the N x 1 "
                "products, then their running sums, with a third coupled id)", "choices": SCRATCHPADS})


def times_digit(a: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """(m, n) digits least significant first times (m,) single digits -> (m, n + 1)."""
    m, n = a.shape
    out = torch.zeros(m, n + 1, dtype=torch.long)
    carry = torch.zeros(m, dtype=torch.long)
    for t in range(n):
        value = a[:, t] * d + carry
        out[:, t], carry = value % 10, value // 10
    out[:, n] = carry
    return out


def partial_sums(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(m, N) and (m, M) digits least significant first -> (m, M, N + M) running sums of a * b_j * 10^(j-1)."""
    m, N = a.shape
    M, W = b.shape[1], a.shape[1] + b.shape[1]
    sums = torch.zeros(m, M, W, dtype=torch.long)
    total = torch.zeros(m, W, dtype=torch.long)
    for j in range(M):
        shifted = torch.zeros(m, W, dtype=torch.long)
        shifted[:, j:j + N + 1] = times_digit(a, b[:, j])
        carry = torch.zeros(m, dtype=torch.long)
        for t in range(W):
            value = total[:, t] + shifted[:, t] + carry
            total[:, t], carry = value % 10, value // 10
        sums[:, j] = total
    return sums


@register_task
class Multiplication(Task):
    name = "multiplication"
    Params = MultiplicationParams
    description = "a x b with a scratchpad (running sums, or the paper's partial products first), coupled ids, priming"
    length_name = "digits of a"
    uses_position_ids = True
    coupled_first = 1

    def __init__(self, params=None):
        super().__init__(params)
        self.primed = self.primed_examples() if self.params.priming else None

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_digits", p.min_digits, "max_digits", p.max_digits)
        check_range("task", "min_b_digits", p.min_b_digits, "max_b_digits", p.max_b_digits)
        check(p.max_b_digits < MAX_LEVELS, "task.max_b_digits", p.max_b_digits, f"expected < {MAX_LEVELS}")
        width = p.max_digits + p.max_b_digits
        check(p.max_position >= width + 1, "task.max_position", p.max_position, f"expected >= {width + 1}")
        check(p.priming >= 0, "task.priming", p.priming, "expected >= 0")
        check(p.priming_digits >= 0, "task.priming_digits", p.priming_digits, "expected >= 0 (0: 3 x max_digits)")
        check(0.0 <= p.priming_rate <= 1.0, "task.priming_rate", p.priming_rate, "expected 0..1")
        if p.scratchpad not in SCRATCHPADS:
            raise ConfigError("task.scratchpad", p.scratchpad, choices=SCRATCHPADS)
        check(not self.shifted_ids or p.max_position < SHIFTED_ROW, "task.max_position", p.max_position,
              f"expected < {SHIFTED_ROW} with scratchpad=partial_products (coupling's table holds the shifted ids above)")

    @property
    def shifted_ids(self) -> bool:
        """Whether the ids carry the paper's third, shifted significance (`coupling` and `coupling_relative`
        read it; the other encodings ignore task ids)."""
        return self.params.scratchpad == "partial_products"

    def build_vocab(self) -> Vocab:
        return Vocab(DIGITS + ["*", "=", ">"] + (["+"] if self.shifted_ids else []))

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_digits, self.params.max_digits

    def sequence_length(self, length: int) -> int:
        M = self.params.max_b_digits
        products = M * (length + 2) if self.shifted_ids else 0
        return 1 + length + 1 + M + 1 + products + M * (length + M + 1) - 1

    def max_position_id(self, length: int) -> int:
        return max(self.params.max_position, length + self.params.max_b_digits + 1)

    def primed_examples(self) -> Batch:
        p = self.params
        digits = p.priming_digits or 3 * p.max_digits
        generator = torch.Generator().manual_seed(p.priming_seed)
        examples = self.draw(p.priming, generator, digits, train=False)
        examples.meta["primed"] = torch.ones(p.priming, dtype=torch.bool)
        return examples

    def _sample(self, n, generator, length, train) -> Batch:
        if not (train and length is None and self.primed is not None):
            return self.draw(n, generator, length, train)
        primed = torch.rand(n, generator=generator) < self.params.priming_rate
        parts = []
        if int((~primed).sum()):
            parts.append(self.draw(int((~primed).sum()), generator, None, train))
        if int(primed.sum()):
            which = torch.randint(0, self.params.priming, (int(primed.sum()),), generator=generator)
            parts.append(self.primed.select(which))
        return concat_padded(parts)

    def draw(self, n, generator, length, train) -> Batch:
        p = self.params
        len_a = torch.randint(p.min_digits, p.max_digits + 1, (n,), generator=generator) if length is None \
            else torch.full((n,), length)
        len_b = torch.randint(p.min_b_digits, p.max_b_digits + 1, (n,), generator=generator)
        groups = []
        for N, idx in split_by_length(len_a):
            for M, sub in split_by_length(len_b[idx]):
                fixed = self._products_then_sums if self.shifted_ids else self._fixed
                groups.append(fixed(N, M, sub.numel(), generator, train))
        batch = concat_padded(groups)
        batch.meta["primed"] = torch.zeros(n, dtype=torch.bool)
        return batch

    def _fixed(self, N: int, M: int, m: int, generator, train: bool) -> Batch:
        v, W = self.vocab, N + M
        a = random_operands(N, torch.full((m,), N), generator)
        b = random_operands(M, torch.full((m,), M), generator)
        sums = partial_sums(a, b)
        zero = v["0"]
        start = random_start(m, W, self.params.max_position, generator, train, offset=self.id_offset)
        zeros = torch.zeros(m, 1, dtype=torch.long)
        b_pos = start + torch.arange(M, 0, -1) + LEVEL_STRIDE * torch.arange(M, 0, -1)
        prompt = torch.cat([column(m, v[BOS]), a.flip(1) + zero, column(m, v["*"]), b.flip(1) + zero,
                            column(m, v["="])], 1)
        prompt_pos = torch.cat([zeros, start + torch.arange(N, 0, -1), start, b_pos, start], 1)
        answer, answer_pos = [], []
        for j in range(M):
            last, level = j == M - 1, LEVEL_STRIDE * (j + 1)
            answer += [sums[:, j] + zero, column(m, v[EOS] if last else v[">"])]
            answer_pos += [start + torch.arange(1, W + 1) + level, zeros if last else start + level]
        meta = {"length": torch.full((m,), N), "b_digits": torch.full((m,), M)}
        return assemble(prompt, torch.cat(answer, 1), prompt_pos, torch.cat(answer_pos, 1), meta)

    def _products_then_sums(self, N: int, M: int, m: int, generator, train: bool) -> Batch:
        """The paper's scratchpad and its three ids (see the module's docstring)."""
        v, W = self.vocab, N + M
        a = random_operands(N, torch.full((m,), N), generator)
        b = random_operands(M, torch.full((m,), M), generator)
        sums = partial_sums(a, b)
        zero, digit = v["0"], torch.arange(1, N + 2)
        start = random_start(m, N + 1, self.params.max_position, generator, train, offset=self.id_offset)
        start3 = random_start(m, W, self.params.max_position, generator, train, offset=self.id_offset)
        zeros = torch.zeros(m, 1, dtype=torch.long)
        prompt = torch.cat([column(m, v[BOS]), a.flip(1) + zero, column(m, v["*"]), b.flip(1) + zero], 1)
        prompt_pos = pack(torch.cat([zeros, start + torch.arange(N, 0, -1), zeros,
                                     pack(0, torch.arange(M, 0, -1)).expand(m, M)], 1), shifted=0)
        answer, answer_pos = [], []
        for j in range(1, M + 1):  # '=' or '+', then p_j
            answer += [column(m, v["=" if j == 1 else "+"]), times_digit(a, b[:, j - 1]) + zero]
            answer_pos += [pack(start, j, start3 + j - 1), pack(start + digit, j, start3 + j - 1 + digit)]
        for j in range(1, M + 1):  # '=' or '>', then s_j
            answer += [column(m, v["=" if j == 1 else ">"]), sums[:, j - 1] + zero]
            answer_pos += [pack(zeros, j, start3), pack(0, j, start3 + torch.arange(1, W + 1))]
        # The first '=' closes the prompt: the loss starts at its target, p_1's first digit. So it moves
        # from the answer to the prompt, and EOS (whose id is never an input) ends the answer.
        prompt, answer = torch.cat([prompt, answer[0]], 1), answer[1:] + [column(m, v[EOS])]
        prompt_pos, answer_pos = torch.cat([prompt_pos, answer_pos[0]], 1), answer_pos[1:] + [pack(zeros, shifted=0)]
        meta = {"length": torch.full((m,), N), "b_digits": torch.full((m,), M)}
        return assemble(prompt, torch.cat(answer, 1), prompt_pos, torch.cat(answer_pos, 1), meta)
