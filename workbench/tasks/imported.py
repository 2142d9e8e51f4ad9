"""The task of a model imported from Hugging Face transformers (`workbench import-model`).

Such a model was trained elsewhere, on text we do not have. Its run still needs a task, so every
probe, evaluation and dashboard page has inputs to give it: uniform random token ids of the
model's vocabulary, each position predicting the next id (the loss covers every position). Id 0
is left out, because everywhere in the workbench id 0 is padding. On random ids there is no right
answer, so exact match is near 0 by construction; the attention maps, entropies and activations
are the model's own.

The parameters record where the weights came from, so two different models never share a run id:
`weights` is a digest of the weight files, `architecture` the Hugging Face model_type and
`workbench_run` the run a workbench export came from (empty for any other model).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..errors import check
from .base import Batch, Task, Vocab, register_task


@dataclass
class ImportedParams:
    vocab_size: int = field(default=16, metadata={"help": "the model's vocabulary size"})
    length: int = field(default=32, metadata={"help": "tokens per sample for probes and evaluation"})
    architecture: str = field(default="", metadata={"help": "the Hugging Face model_type it came from"})
    weights: str = field(default="", metadata={"help": "sha256 of its weight files (first 16 hex digits)"})
    workbench_run: str = field(default="", metadata={"help": "the workbench run it was exported from, if any"})
    symbols: list[str] = field(default_factory=list, metadata={"help": "a name per token id (default t0, t1, ...)"})


class TokenIds(Vocab):
    """A name per token id, as given (a workbench export records its task's symbols) or t0, t1, ...;
    no PAD/BOS/EOS meaning is attached."""

    def __init__(self, size: int, symbols: list[str]):
        self.symbols = list(symbols) or [f"t{i}" for i in range(size)]
        self.index = {s: i for i, s in enumerate(self.symbols)}


@register_task
class Imported(Task):
    name = "imported"
    Params = ImportedParams
    description = "a model imported from Hugging Face transformers, probed on random token ids"
    length_name = "tokens"
    trainable = False  # random ids teach nothing; `workbench train` refuses it

    def validate(self) -> None:
        check(self.params.vocab_size >= 2, "task.vocab_size", self.params.vocab_size, "expected >= 2")
        check(self.params.length >= 1, "task.length", self.params.length, "expected >= 1")
        symbols = self.params.symbols
        check(not symbols or (len(symbols) == self.params.vocab_size and len(set(symbols)) == len(symbols)),
              "task.symbols", f"{len(symbols)} symbols", f"expected none or {self.params.vocab_size} distinct ones")

    def build_vocab(self) -> Vocab:
        return TokenIds(self.params.vocab_size, self.params.symbols)

    def train_lengths(self) -> tuple[int, int]:
        return self.params.length, self.params.length

    def sequence_length(self, length: int) -> int:
        return length

    def _sample(self, n, generator, length, train) -> Batch:
        length = self.params.length if length is None else length
        sequence = torch.randint(1, self.params.vocab_size, (n, length + 1), generator=generator)
        return Batch(sequence[:, :-1], sequence[:, 1:], torch.ones(n, length, dtype=torch.bool), None,
                     {"length": torch.full((n,), length)})
