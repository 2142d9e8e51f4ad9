"""Multi-operand addition with a running-sum scratchpad and two-level position coupling
(Cho et al. 2024b, arXiv 2410.15787).

`scratchpad=running` (ours, the default): `^ 0 7 + 1 2 + 0 5 = 7 0 0 > 9 1 0 > 4 2 0 $`: k operands
zero-padded to n digits (most
significant first); the answer lists the running sums s_1 = a_1, s_i = s_{i-1} + a_i, each
written least significant digit first and zero-padded to W = n + digits(k - 1) digits, separated
by '>'; the last one is the result. Loss on the whole answer.

Position ids have two levels, packed as `significance + LEVEL_STRIDE * level` (the `coupling`
encoding unpacks them into two summed tables): significance as in `addition` (digit of
significance j gets start + j, '+', '=', '>' get start; start random in training, 1 in
evaluation), level i for operand a_i, for running sum s_i and for the operator after either
(level offset random in training too, so every level up to max_level is trained). BOS/EOS/PAD: 0.
`levels=1` keeps significance only (every level 0): the paper's single-level ablation.
The length axis is digits per operand; the operand count of a test set is `eval_operands`
(0: drawn from the training range).

`scratchpad=padded` is the paper's code's format (Cho et al.'s `MultipleAdditionScratchPadDataset`):
`^ 0 0 7 + 0 1 2 + 0 0 5 = 0 0 0 > 7 0 0 > 9 1 0 > 4 2 0 $`. Every operand is zero-padded to the sum's
width W, so each digit of a sum has an operand digit of the same significance, the top one included,
and the sums start from a zero sum s_0: every step is s_i = s_{i-1} + a_i, the same for every i.
Levels: s_i gets level i and a_i shares s_{i-1}'s (the level before the sum it enters), '+' after a_i
its operand's, '=' the zero sum's, the '>' before s_i that sum's. `equal_lengths` is the share of
training samples whose operands all have one length (the paper's code: 0.5; the others draw each
operand's length on its own).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..coupled_ids import LEVEL_STRIDE, MAX_LEVELS
from ..errors import ConfigError, check
from .addition import DIGITS, random_operands
from .base import BOS, EOS, Batch, Task, Vocab, assemble, concat_padded, register_task, split_by_length
from .common import check_range, column, random_start


SCRATCHPADS = ("running", "padded")


@dataclass
class MultiOperandParams:
    min_digits: int = field(default=1, metadata={"help": "fewest digits per operand in training"})
    max_digits: int = field(default=5, metadata={"help": "most digits per operand in training"})
    min_operands: int = field(default=2, metadata={"help": "fewest operands in training"})
    max_operands: int = field(default=5, metadata={"help": "most operands in training"})
    eval_operands: int = field(default=0, metadata={"help": "operands in test sets (0: training range)"})
    max_position: int = field(default=32, metadata={"help": "largest significance id trained"})
    max_level: int = field(default=12, metadata={"help": "largest operand-level id trained"})
    levels: int = field(default=2, metadata={"help": "position-id levels: 2 (significance and operand, multi-level "
                                                     "coupling) or 1 (significance only: the single-level ablation)",
                                             "choices": (1, 2)})
    scratchpad: str = field(default="running", metadata={
        "help": "running (ours: operands at their own width, the first sum is a_1) or padded (the paper's: "
                "operands and sums zero-padded to the sum's width, a zero sum first)", "choices": SCRATCHPADS})
    equal_lengths: float = field(default=0.0, metadata={
        "help": "share of training samples whose operands all have one length (the paper's code: 0.5)"})


def sum_width(n: int, k: int) -> int:
    """Digits that hold the sum of k numbers of n digits: k (10^n - 1) < 10^(n + digits(k - 1))."""
    return n + len(str(max(k - 1, 1)))


def running_sums(operands: torch.Tensor, width: int) -> torch.Tensor:
    """(m, k, n) digits least significant first -> (m, k, width) running sums, same order.

    Every running sum at once: the digit columns summed over the operands so far (cumsum over k),
    then one carry pass over the width for all k sums together. The digits of a sum are unique, so
    this writes what adding the operands one by one writes, with width steps instead of k x width."""
    m, k, n = operands.shape
    columns = torch.nn.functional.pad(operands, (0, width - n)).cumsum(1)  # (m, k, width), no carries yet
    sums = torch.empty_like(columns)
    carry = torch.zeros(m, k, dtype=torch.long)
    for j in range(width):
        column_sum = columns[:, :, j] + carry
        sums[:, :, j], carry = column_sum % 10, column_sum // 10
    return sums


@register_task
class MultiOperandAddition(Task):
    name = "multi_operand_addition"
    Params = MultiOperandParams
    description = ("sum of several operands with a running-sum scratchpad (ours, or the paper's zero-padded one) "
                   "and two-level coupled ids")
    length_name = "digits per operand"
    uses_position_ids = True
    coupled_first = 1

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_digits", p.min_digits, "max_digits", p.max_digits)
        check_range("task", "min_operands", p.min_operands, "max_operands", p.max_operands, floor=2)
        check(p.levels in (1, 2), "task.levels", p.levels, "expected 1 (single-level ids) or 2 (multi-level)")
        check(p.eval_operands == 0 or p.eval_operands >= 2, "task.eval_operands", p.eval_operands,
              "expected 0 (training range) or >= 2")
        if p.scratchpad not in SCRATCHPADS:
            raise ConfigError("task.scratchpad", p.scratchpad, choices=SCRATCHPADS)
        check(0.0 <= p.equal_lengths <= 1.0, "task.equal_lengths", p.equal_lengths, "expected a share from 0 to 1")
        most = max(p.max_operands, p.eval_operands) + (p.scratchpad == "padded")  # the zero sum takes a level
        check(most <= p.max_level <= MAX_LEVELS - 1, "task.max_level", p.max_level,
              f"expected {most}..{MAX_LEVELS - 1} (at least the number of running sums)")
        width = sum_width(p.max_digits, p.max_operands)
        check(p.max_position >= width + 1, "task.max_position", p.max_position,
              f"expected >= {width + 1} (the widest running sum + 1)")

    def build_vocab(self) -> Vocab:
        return Vocab(DIGITS + ["+", "=", ">"])

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_digits, self.params.max_digits

    def eval_count(self) -> int:
        return self.params.eval_operands or self.params.max_operands

    def sequence_length(self, length: int) -> int:
        k, W = self.eval_count(), sum_width(length, self.eval_count())
        if self.params.scratchpad == "padded":  # BOS, k operands and operators, s_0, k of '>' and a sum, EOS
            return 1 + k * (W + 1) + W + k * (W + 1) + 1 - 1
        return 1 + k * (length + 1) + k * (W + 1) - 1

    def max_position_id(self, length: int) -> int:
        return max(self.params.max_position, sum_width(length, self.eval_count()) + 1)

    def _sample(self, n, generator, length, train) -> Batch:
        p = self.params
        if length is None or not p.eval_operands:
            counts = torch.randint(p.min_operands, p.max_operands + 1, (n,), generator=generator)
        else:
            counts = torch.full((n,), p.eval_operands)
        groups = []
        for k, idx in split_by_length(counts):
            m = idx.numel()
            if length is None:
                lengths = torch.randint(p.min_digits, p.max_digits + 1, (m, k), generator=generator)
                if p.equal_lengths > 0:  # drawn only then, so the default's data stays as it was
                    equal = torch.rand(m, generator=generator) < p.equal_lengths
                    lengths[equal] = lengths[equal, :1]
            else:
                lengths = torch.full((m, k), length)
            width = lengths.max(1).values
            build = self._padded if p.scratchpad == "padded" else self._fixed
            groups += [build(w, k, lengths[sub], generator, train) for w, sub in split_by_length(width)]
        return concat_padded(groups)

    def _ids(self, m: int, W: int, count: int, generator, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """The significance start (m, 1) for sums W wide and `count` consecutive levels (m, count), packed
        (each level times LEVEL_STRIDE), from a random first level in training."""
        start = random_start(m, W, self.params.max_position, generator, train, offset=self.id_offset)
        level0 = random_start(m, count, self.params.max_level, generator, train, first=0)
        level = (level0 + torch.arange(1, count + 1)) * LEVEL_STRIDE
        if self.params.levels == 1:  # drawn all the same, so both ablation arms see the same digits
            level = torch.zeros_like(level)
        return start, level

    def _operands(self, operands: torch.Tensor, operators: torch.Tensor, base: torch.Tensor,
                  operator_pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The prompt of either scratchpad: BOS, then each operand of (m, k, width) digits, most significant
        first, and the operator after it, with their ids: digit of significance s at base + s (base: (m, k,
        1), each operand's id at significance 0), the operator at operator_pos (m, k, 1); BOS carries 0."""
        m, width = operands.shape[0], operands.shape[2]
        digits = operands.flip(2) + self.vocab["0"]
        prompt = torch.cat([column(m, self.vocab[BOS]), torch.cat([digits, operators], 2).reshape(m, -1)], 1)
        prompt_pos = torch.cat([torch.zeros(m, 1, dtype=torch.long),
                                torch.cat([base + torch.arange(width, 0, -1), operator_pos], 2).reshape(m, -1)], 1)
        return prompt, prompt_pos

    def _fixed(self, n: int, k: int, lengths: torch.Tensor, generator, train: bool) -> Batch:
        m, W, v = lengths.shape[0], sum_width(n, k), self.vocab
        operands = torch.stack([random_operands(n, lengths[:, i], generator) for i in range(k)], 1)
        sums = running_sums(operands, W)
        zero = v["0"]
        start, level = self._ids(m, W, k, generator, train)  # (m, 1) and (m, k)

        # Each operand and each running sum as one (m, k, ...) block, flattened operand by operand:
        # operand i's digits (most significant first) and its operator ('+', '=' after the last); then
        # running sum i and its separator ('>', EOS after the last, which carries id 0).
        base = start[:, :, None] + level[:, :, None]  # (m, k, 1): each operand's id at significance 0
        operators, separators = torch.full((m, k, 1), v["+"]), torch.full((m, k, 1), v[">"])
        operators[:, -1], separators[:, -1] = v["="], v[EOS]
        separator_pos = base.clone()
        separator_pos[:, -1] = 0
        prompt, prompt_pos = self._operands(operands, operators, base, base)
        answer = torch.cat([sums + zero, separators], 2).reshape(m, -1)
        answer_pos = torch.cat([base + torch.arange(1, W + 1), separator_pos], 2).reshape(m, -1)
        meta = {"length": torch.full((m,), n), "operands": torch.full((m,), k)}
        return assemble(prompt, answer, prompt_pos, answer_pos, meta)

    def _padded(self, n: int, k: int, lengths: torch.Tensor, generator, train: bool) -> Batch:
        """The paper's scratchpad (see the module's docstring): operands and sums W wide, s_0 = 0 first."""
        m, W, v = lengths.shape[0], sum_width(n, k), self.vocab
        operands = torch.stack([random_operands(W, lengths[:, i], generator) for i in range(k)], 1)
        sums = torch.cat([torch.zeros(m, 1, W, dtype=torch.long), running_sums(operands, W)], 1)  # s_0 .. s_k
        zero = v["0"]
        start, level = self._ids(m, W, k + 1, generator, train)  # level: (m, k + 1), s_0 .. s_k
        base = start[:, :, None] + level[:, :, None]  # (m, k + 1, 1): each sum's id at significance 0

        # Operand i (1-based) with the operator after it, at s_{i-1}'s level; the last operator is '=',
        # at the zero sum's level. Then s_0; then each s_i after its '>'; then EOS (id 0).
        operators = torch.full((m, k, 1), v["+"])
        operators[:, -1] = v["="]
        operator_pos = base[:, :k].clone()
        operator_pos[:, -1] = base[:, 0]
        prompt, prompt_pos = self._operands(operands, operators, base[:, :k], operator_pos)
        digits_pos = base + torch.arange(1, W + 1)  # (m, k + 1, W)
        steps = torch.cat([torch.full((m, k, 1), v[">"]), sums[:, 1:] + zero], 2).reshape(m, -1)
        steps_pos = torch.cat([base[:, 1:], digits_pos[:, 1:]], 2).reshape(m, -1)
        answer = torch.cat([sums[:, 0] + zero, steps, column(m, v[EOS])], 1)
        answer_pos = torch.cat([digits_pos[:, 0], steps_pos, torch.zeros(m, 1, dtype=torch.long)], 1)
        meta = {"length": torch.full((m,), n), "operands": torch.full((m,), k)}
        return assemble(prompt, answer, prompt_pos, answer_pos, meta)
