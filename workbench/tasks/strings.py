"""String tasks: reverse, sort (with an optional hint task) and selective copy.

All three write `^ input <marker> answer $` with the loss on the answer and EOS.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..errors import ConfigError, check
from .base import BOS, EOS, Batch, Task, Vocab, assemble, concat_padded, register_task, split_by_length
from .common import (check_range, column, draw_lengths, first_symbol_id, random_start, sorted_random_positions,
                     symbol_names)


@dataclass
class ReverseParams:
    min_length: int = field(default=1, metadata={"help": "shortest string in training"})
    max_length: int = field(default=10, metadata={"help": "longest string in training"})
    alphabet: int = field(default=10, metadata={"help": "number of distinct symbols"})
    max_position: int = field(default=64, metadata={"help": "largest coupled position id trained"})
    couple_end: bool = field(default=False, metadata={"help": "BOS takes the id below the first symbol's, so the "
                                                              "end is found by the same id lookup as each symbol"})


class StringTask(Task):
    """Shared parts: a random string over `alphabet` symbols, lengths min_length..max_length."""

    length_name = "string length"
    markers: tuple[str, ...] = ("=",)

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_length", p.min_length, "max_length", p.max_length)
        check(2 <= p.alphabet <= 1000, "task.alphabet", p.alphabet, "expected 2..1000")

    def build_vocab(self) -> Vocab:
        return Vocab(symbol_names(self.params.alphabet, "s") + list(self.markers))

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_length, self.params.max_length

    def random_string(self, m: int, L: int, generator) -> torch.Tensor:
        first = first_symbol_id(self.vocab, self.params.alphabet, "s")
        return torch.randint(first, first + self.params.alphabet, (m, L), generator=generator)

    def _sample(self, n, generator, length, train) -> Batch:
        lengths = draw_lengths(n, *self.train_lengths(), generator, length)
        return concat_padded([self._fixed_length(L, idx.numel(), generator, train)
                              for L, idx in split_by_length(lengths)])


@register_task
class Reverse(StringTask):
    """`^ a b c = c b a $`. Coupled ids pair each symbol with its mirror in the answer (the
    reverse-copy example of Cho et al. 2024): input symbol i gets start + i, '=' gets
    start + L + 1, the answer's copy of symbol i gets start + i again; BOS, EOS, PAD get 0. Each
    answer token is predicted by looking up the id one below its own; after the answer's last
    symbol (id start + 1) that is `start`, which BOS holds only when `couple_end=true` (or when the
    ids start at 0, as in evaluation)."""

    name = "reverse"
    Params = ReverseParams
    description = "write a random string backwards after '='"
    uses_position_ids = True
    coupled_first = 0

    def validate(self) -> None:
        super().validate()
        p = self.params
        check(p.max_position >= p.max_length + 1, "task.max_position", p.max_position,
              f"expected >= task.max_length + 1 ({p.max_length + 1})")

    def sequence_length(self, length: int) -> int:
        return 2 * length + 2

    def max_position_id(self, length: int) -> int:
        return max(self.params.max_position, length + 1)

    def _fixed_length(self, L, m, generator, train) -> Batch:
        symbols = self.random_string(m, L, generator)
        prompt = torch.cat([column(m, self.vocab[BOS]), symbols, column(m, self.vocab["="])], 1)
        answer = torch.cat([symbols.flip(1), column(m, self.vocab[EOS])], 1)
        start = random_start(m, L + 1, self.params.max_position, generator, train, first=self.coupled_first,
                             offset=self.id_offset)
        index = start + torch.arange(1, L + 1)
        zeros = torch.zeros(m, 1, dtype=torch.long)
        bos = start if self.params.couple_end else zeros  # the id the last answer symbol looks up next
        prompt_pos = torch.cat([bos, index, start + L + 1], 1)
        answer_pos = torch.cat([index.flip(1), zeros], 1)
        return assemble(prompt, answer, prompt_pos, answer_pos, {"length": torch.full((m,), L)})


HINT_FORMS = ("successors", "pairs")


@dataclass
class SortParams:
    min_length: int = field(default=1, metadata={"help": "shortest list in training"})
    max_length: int = field(default=10, metadata={"help": "longest list in training"})
    alphabet: int = field(default=26, metadata={"help": "number of distinct values (repeats allowed)"})
    hint: float = field(default=0.0, metadata={"help": "fraction of training samples that are the hint task"})
    hint_form: str = field(default="successors", metadata={
        "help": "the hint's answer: 'successors' (each input element's successor) or 'pairs' (each input element, "
                "then its successor)", "choices": HINT_FORMS})


@register_task
class Sort(StringTask):
    """`^ c a b = a b c $` (stable ascending sort of symbol ids).

    Task hinting (Awasthi & Gupta 2023, arXiv 2310.00726): with `hint` > 0 that fraction of training
    samples is the auxiliary "successor" task `^ c a b > # b c $`: for each input element, the
    element that follows it in the sorted list (ties broken by input order), '#' for the last.
    `hint_form=pairs` writes each input element before its successor, `^ c a b > c # a b b c $`, so
    the successor is read off the element just written, as each sorted symbol is read off the one
    before it. Evaluation (train=False) is always the sort task."""

    name = "sort"
    Params = SortParams
    description = "sort a random list after '='; optional successor hint task after '>'"
    markers = ("=", ">", "#")

    def validate(self) -> None:
        super().validate()
        check(0.0 <= self.params.hint < 1.0, "task.hint", self.params.hint, "expected a fraction in [0, 1)")
        check(self.params.hint_form in HINT_FORMS, "task.hint_form", self.params.hint_form,
              f"expected one of: {', '.join(HINT_FORMS)}")

    def sequence_length(self, length: int) -> int:
        pairs = self.params.hint > 0 and self.params.hint_form == "pairs"
        return (3 if pairs else 2) * length + 2

    def _fixed_length(self, L, m, generator, train) -> Batch:
        values = self.random_string(m, L, generator)
        ordered, order = torch.sort(values, dim=1, stable=True)
        rank = torch.empty_like(order).scatter_(1, order, torch.arange(L).expand(m, L))
        following = torch.cat([ordered[:, 1:], column(m, self.vocab["#"])], 1)
        successor = following.gather(1, rank)
        hint = torch.zeros(m, dtype=torch.bool)
        if train and self.params.hint > 0:
            hint = torch.rand(m, generator=generator) < self.params.hint
        marker = torch.where(hint, self.vocab[">"], self.vocab["="])[:, None]
        prompt = torch.cat([column(m, self.vocab[BOS]), values, marker], 1)
        end = column(m, self.vocab[EOS])
        if self.params.hint_form == "pairs":
            # Hint rows are L symbols longer than sort rows, so the two are assembled apart.
            pairs = torch.stack([values, successor], 2).reshape(m, 2 * L)
            rows = [(prompt[chosen], torch.cat([answers[chosen], end[chosen]], 1), hint[chosen])
                    for chosen, answers in ((~hint, ordered), (hint, pairs)) if chosen.any()]
            return concat_padded([assemble(p, a, meta={"length": torch.full((len(h),), L), "hint": h})
                                  for p, a, h in rows])
        answer = torch.cat([torch.where(hint[:, None], successor, ordered), end], 1)
        return assemble(prompt, answer, meta={"length": torch.full((m,), L), "hint": hint})


@dataclass
class SelectiveCopyParams:
    min_length: int = field(default=8, metadata={"help": "shortest noisy region in training"})
    max_length: int = field(default=16, metadata={"help": "longest noisy region in training"})
    n_tokens: int = field(default=4, metadata={"help": "data tokens hidden in the region"})
    alphabet: int = field(default=8, metadata={"help": "number of distinct data symbols"})


@register_task
class SelectiveCopy(StringTask):
    """Selective copying (Gu & Dao 2023): `n_tokens` symbols at random places in a region of
    blanks '_'; after '=' write them in order: `^ _ a _ _ b _ = a b $`. Length = region length."""

    name = "selective_copy"
    Params = SelectiveCopyParams
    description = "copy the symbols scattered among blanks, in order"
    length_name = "region length"
    markers = ("_", "=")

    def validate(self) -> None:
        super().validate()
        p = self.params
        check(p.n_tokens >= 1, "task.n_tokens", p.n_tokens, "expected >= 1")
        check(p.min_length >= p.n_tokens, "task.min_length", p.min_length,
              f"expected >= task.n_tokens ({p.n_tokens}): the region must hold every data token")

    def sequence_length(self, length: int) -> int:
        return length + self.params.n_tokens + 2

    def _sample(self, n, generator, length, train) -> Batch:
        if length is not None and length < self.params.n_tokens:
            raise ConfigError("selective_copy.region length", length,
                              f"expected >= task.n_tokens ({self.params.n_tokens})")
        return super()._sample(n, generator, length, train)

    def _fixed_length(self, L, m, generator, train) -> Batch:
        k = self.params.n_tokens
        data = self.random_string(m, k, generator)
        where = sorted_random_positions(m, L, k, generator)
        region = torch.full((m, L), self.vocab["_"]).scatter_(1, where, data)
        prompt = torch.cat([column(m, self.vocab[BOS]), region, column(m, self.vocab["="])], 1)
        answer = torch.cat([data, column(m, self.vocab[EOS])], 1)
        return assemble(prompt, answer, meta={"length": torch.full((m,), L)})
