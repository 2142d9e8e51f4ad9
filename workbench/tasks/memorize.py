"""A fixed random table key -> value; the training set *is* the table (capacity studies).

`^ k3 k9 = v5 $`: every sample is one row of a table of `table_size` distinct keys (each
`key_length` symbols) with random values (`value_length` symbols), drawn once from `table_seed`.
Sampling picks rows uniformly; `length` has no meaning here and is ignored. `table()` returns
every row once, in order, for probes that measure how much of the table a model holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..errors import check
from .base import BOS, EOS, Batch, Task, Vocab, assemble, register_task
from .common import column, first_symbol_id, symbol_names

MAX_TABLE = 1_000_000


@dataclass
class MemorizeParams:
    table_size: int = field(default=64, metadata={"help": "rows in the table"})
    key_length: int = field(default=2, metadata={"help": "symbols per key"})
    n_keys: int = field(default=16, metadata={"help": "distinct key symbols"})
    value_length: int = field(default=1, metadata={"help": "symbols per value"})
    n_values: int = field(default=16, metadata={"help": "distinct value symbols"})
    table_seed: int = field(default=0, metadata={"help": "seed of the table itself"})


@register_task
class Memorize(Task):
    name = "memorize"
    Params = MemorizeParams
    description = "recall the value of a key from a fixed random table (the training set is the table)"
    length_name = "key symbols"

    def __init__(self, params=None):
        super().__init__(params)
        self.keys, self.values = self.build_table()

    def validate(self) -> None:
        p = self.params
        for name in ("table_size", "key_length", "n_keys", "value_length", "n_values"):
            check(getattr(p, name) >= 1, f"task.{name}", getattr(p, name), "expected >= 1")
        space = p.n_keys ** p.key_length
        check(p.table_size <= min(space, MAX_TABLE), "task.table_size", p.table_size,
              f"expected <= {min(space, MAX_TABLE)} (task.n_keys ** task.key_length distinct keys"
              f", at most {MAX_TABLE})")

    def build_vocab(self) -> Vocab:
        p = self.params
        return Vocab(symbol_names(p.n_keys, "k") + symbol_names(p.n_values, "v", letters=False) + ["="])

    def build_table(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(table_size, key_length) distinct keys and (table_size, value_length) values, as token ids."""
        p = self.params
        generator = torch.Generator().manual_seed(p.table_seed)
        space = p.n_keys ** p.key_length
        if space <= 4 * MAX_TABLE:
            codes = torch.randperm(space, generator=generator)[: p.table_size].tolist()
        else:  # a huge key space: draw codes until enough are distinct (collisions are rare)
            seen: dict[int, None] = {}
            while len(seen) < p.table_size:
                draws = torch.randint(0, 2 ** 62, (p.table_size,), generator=generator).tolist()
                seen.update(dict.fromkeys(d % space for d in draws))
            codes = list(seen)[: p.table_size]
        digits = [[(code // p.n_keys ** i) % p.n_keys for i in reversed(range(p.key_length))] for code in codes]
        first_key = first_symbol_id(self.vocab, p.n_keys, "k")
        first_value = first_symbol_id(self.vocab, p.n_values, "v", letters=False)
        keys = torch.tensor(digits, dtype=torch.long) + first_key
        values = torch.randint(0, p.n_values, (p.table_size, p.value_length), generator=generator) + first_value
        return keys, values

    def train_lengths(self) -> tuple[int, int]:
        return self.params.key_length, self.params.key_length

    def sequence_length(self, length: int) -> int:
        return self.params.key_length + self.params.value_length + 2

    def _sample(self, n, generator, length, train) -> Batch:
        return self.rows(torch.randint(0, self.params.table_size, (n,), generator=generator))

    def table(self) -> Batch:
        """Every row of the table once, in order."""
        return self.rows(torch.arange(self.params.table_size))

    def rows(self, index: torch.Tensor) -> Batch:
        m = index.numel()
        prompt = torch.cat([column(m, self.vocab[BOS]), self.keys[index], column(m, self.vocab["="])], 1)
        answer = torch.cat([self.values[index], column(m, self.vocab[EOS])], 1)
        meta = {"length": torch.full((m,), self.params.key_length), "row": index}
        return assemble(prompt, answer, meta=meta)
