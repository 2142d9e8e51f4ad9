"""The task contract: every synthetic task yields the same shape of Batch.

A task is built from its typed parameters, owns its vocabulary, samples seeded batches at any
length (including lengths never trained on), decodes tokens for people and scores exact match.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import Tensor

from ..registry import Registry

PAD, BOS, EOS = ".", "^", "$"


@dataclass
class Batch:
    tokens: Tensor  # (B, T) long: the model's input
    targets: Tensor  # (B, T) long: the next token at each position
    loss_mask: Tensor  # (B, T) bool: where the loss (and exact match) counts
    position_ids: Tensor | None = None  # (B, T) long, for tasks with structured positions
    meta: dict[str, Tensor] = field(default_factory=dict)  # per-sample facts, e.g. "length"
    # Tasks with real-valued tokens (in-context regression): the model reads `vectors` through a
    # linear read-in added to the token embedding (the tokens then only mark each slot's kind),
    # and a regression task is scored on `values`, the real-valued targets, where the loss mask is set.
    vectors: Tensor | None = None  # (B, T, d_in) float
    values: Tensor | None = None  # (B, T) float

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def inputs(self) -> tuple:
        """What the model is called with: model(*batch.inputs())."""
        if self.vectors is None:
            return self.tokens, self.position_ids
        return self.tokens, self.position_ids, self.vectors

    def _map(self, fn) -> "Batch":
        apply = lambda t: None if t is None else fn(t)  # noqa: E731
        return Batch(apply(self.tokens), apply(self.targets), apply(self.loss_mask), apply(self.position_ids),
                     {k: apply(v) for k, v in self.meta.items()}, apply(self.vectors), apply(self.values))

    def to(self, device) -> "Batch":
        return self._map(lambda t: t.to(device))

    def select(self, index) -> "Batch":
        return self._map(lambda t: t[index])

    def trimmed(self) -> "Batch":
        """The same rows without the padding columns every row shares at the right (a causal model's
        outputs before them do not change, nor a bidirectional one's: it hides PAD keys)."""
        used = (self.tokens != 0).any(0).nonzero()
        width = int(used[-1]) + 1 if len(used) else 1
        return Batch(self.tokens[:, :width], self.targets[:, :width], self.loss_mask[:, :width],
                     None if self.position_ids is None else self.position_ids[:, :width], dict(self.meta),
                     None if self.vectors is None else self.vectors[:, :width],
                     None if self.values is None else self.values[:, :width])


class Vocab:
    """Symbols <-> ids. PAD is always id 0 so padding is all zeros."""

    def __init__(self, symbols: list[str]):
        self.symbols = [PAD, BOS, EOS] + [s for s in symbols if s not in (PAD, BOS, EOS)]
        self.index = {s: i for i, s in enumerate(self.symbols)}

    def __len__(self) -> int:
        return len(self.symbols)

    def __getitem__(self, symbol: str) -> int:
        return self.index[symbol]

    def decode(self, ids) -> str:
        return "".join(self.symbols[int(i)] if len(self.symbols[int(i)]) == 1 else f"<{self.symbols[int(i)]}>"
                       for i in ids)


class Task:
    """Base class. Subclasses set `name`, `Params` (a dataclass), `length_name` and implement `_sample`."""

    name: ClassVar[str]
    Params: ClassVar[type]
    description: ClassVar[str] = ""
    length_name: ClassVar[str] = "length"  # what "length" means for this task, e.g. digits per operand
    uses_position_ids: ClassVar[bool] = False  # True when the task defines structured position ids
    # Coupled-id tasks: the smallest start of their ids. Training draws each sample's start from
    # here up; evaluation starts every sample here, unless `at_offset` asked for another start.
    coupled_first: ClassVar[int | None] = None
    trainable: ClassVar[bool] = True  # False: the task only probes a model made elsewhere (imported)
    # False where the answer is a random draw (a Markov chain's next symbol): no model gets every
    # answer right, so a low exact match does not mean the run failed to learn
    exact_match_reachable: ClassVar[bool] = True
    id_offset: int | str | None = None
    # Real-valued tasks (in-context regression and Boolean functions): the size of each vector the
    # model reads (Batch.vectors), and "regression" where the model predicts one real number per
    # position, trained on the squared error against Batch.values, instead of a next-token class.
    input_dim: int = 0
    output: ClassVar[str] = "tokens"

    def __init__(self, params=None):
        self.params = params if params is not None else self.Params()
        self.validate()
        self.vocab = self.build_vocab()

    # --- to implement -------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ConfigError for impossible parameters."""

    def build_vocab(self) -> Vocab:
        raise NotImplementedError

    def train_lengths(self) -> tuple[int, int]:
        """Smallest and largest length sampled in training."""
        raise NotImplementedError

    def _sample(self, n: int, generator: torch.Generator, length: int | None, train: bool) -> Batch:
        raise NotImplementedError

    def max_position_id(self, length: int) -> int:
        """The largest position id a sample of this length can carry (sizes position tables)."""
        return self.sequence_length(length)

    def sequence_length(self, length: int) -> int:
        """Tokens in the model input for one sample of this length."""
        raise NotImplementedError

    # --- shared behaviour ---------------------------------------------------------------------
    def sample(self, n: int, generator: torch.Generator, length: int | None = None, train: bool = True) -> Batch:
        """n samples; length=None draws from the training range, an int fixes it (any value >= 1).

        train=True applies training-time randomness that evaluation must not see (e.g. the random
        start offset of coupled position ids)."""
        from ..errors import check

        check(n >= 1, "n", n, "expected at least 1 sample")
        if length is not None:
            check(int(length) >= 1, f"{self.name}.{self.length_name}", length, "expected a length >= 1")
        return self._sample(n, generator, None if length is None else int(length), train)

    def at_offset(self, offset: int | str, field: str = "offset") -> "Task":
        """This task with evaluation samples whose coupled ids start at `offset` instead of at
        `coupled_first`: the same data otherwise, so exact match by offset shows which ids a model
        learned (training draws the start at random, so the smallest ids are the rarest). "random":
        each sample's start drawn as training draws it, the evaluation fair to what was trained."""
        import copy

        from ..errors import ConfigError, check

        if self.coupled_first is None:
            raise ConfigError(field, offset, f"task {self.name} has no coupled position ids")
        from .common import RANDOM_START

        check(offset == RANDOM_START or (isinstance(offset, int) and offset >= self.coupled_first), field, offset,
              f"expected an integer >= {self.coupled_first}, the smallest start of {self.name}'s ids, or "
              f"{RANDOM_START} (each sample's start drawn as in training)")
        shifted = copy.copy(self)
        shifted.id_offset = offset
        return shifted

    def decode(self, tokens) -> str:
        return self.vocab.decode(tokens)

    def predictions(self, logits: Tensor) -> Tensor:
        """The model's answer at every position: the likeliest symbol (a real number for regression)."""
        return logits.argmax(-1)

    def score(self, predictions: Tensor, batch: Batch) -> Tensor:
        """Exact match per sample: every position under the loss mask predicted right."""
        wrong = (predictions != batch.targets) & batch.loss_mask
        return ~wrong.any(dim=1)

    def describe(self) -> dict:
        from ..typed import describe

        return {"name": self.name, "description": self.description, "length": self.length_name,
                "params": describe(self.Params), "vocab": self.vocab.symbols}


TASKS: Registry[type[Task]] = Registry("task", "task.name")


def register_task(cls: type[Task]) -> type[Task]:
    return TASKS.register(cls.name)(cls)


def assemble(prompt: Tensor, answer: Tensor, prompt_pos: Tensor | None = None,
             answer_pos: Tensor | None = None, meta: dict | None = None) -> Batch:
    """Glue same-length prompts and answers (answers end with EOS) into a next-token Batch.

    The loss covers exactly the answer tokens. Position ids, if given, follow the input tokens."""
    sequence = torch.cat([prompt, answer], dim=1)
    tokens, targets = sequence[:, :-1], sequence[:, 1:]
    loss_mask = torch.zeros_like(targets, dtype=torch.bool)
    loss_mask[:, prompt.shape[1] - 1:] = True
    position_ids = None
    if prompt_pos is not None:
        position_ids = torch.cat([prompt_pos, answer_pos], dim=1)[:, :-1]
    return Batch(tokens, targets, loss_mask, position_ids, meta or {})


def concat_padded(batches: list[Batch]) -> Batch:
    """Stack batches of different sequence lengths, padding on the right (PAD=0, no loss)."""
    width = max(b.tokens.shape[1] for b in batches)

    def pad(t: Tensor | None, value=0) -> Tensor | None:
        if t is None:
            return None
        return torch.nn.functional.pad(t, (0, width - t.shape[1]), value=value)

    def pad_rows(t: Tensor | None) -> Tensor | None:  # (B, T, d) vectors: pad the T axis
        return None if t is None else torch.nn.functional.pad(t, (0, 0, 0, width - t.shape[1]))

    def cat(ts: list) -> Tensor | None:
        return None if ts[0] is None else torch.cat(ts)

    return Batch(
        torch.cat([pad(b.tokens) for b in batches]),
        torch.cat([pad(b.targets) for b in batches]),
        torch.cat([pad(b.loss_mask, False) for b in batches]),
        cat([pad(b.position_ids) for b in batches]),
        {k: torch.cat([b.meta[k] for b in batches]) for k in batches[0].meta},
        cat([pad_rows(b.vectors) for b in batches]),
        cat([pad(b.values, 0.0) for b in batches]),
    )


def split_by_length(lengths: Tensor) -> list[tuple[int, Tensor]]:
    """Group sample indices by length so each group can be generated with vectorized ops."""
    return [(int(v), (lengths == v).nonzero().flatten()) for v in torch.unique(lengths)]

