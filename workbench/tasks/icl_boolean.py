"""In-context learning of Boolean functions (Bhattamishra, Patel, Blunsom and Kanade 2023,
"Understanding In-Context Learning in Transformers and LLMs by Learning to Learn Discrete
Functions", arXiv 2310.03016): every sequence draws its own function f: {0,1}^n -> {0,1} from a
class and shows (x_1, f(x_1), ..., x_k); the model labels every x_i from the examples before it.

Classes (`function`):
- conjunction: an AND of literals; each of the n variables enters with probability 1/3, negated or
  not with even odds. Uniform inputs would make almost every label 0, so, as in the paper, a
  fraction `positive` of the inputs is drawn to satisfy the conjunction (its literals set, the
  other bits uniform).
- disjunction: an OR of literals, the mirror image (a fraction `positive` of inputs is made to
  falsify it, the rest is uniform).
- parity: the XOR of `relevant` randomly chosen bits (sparse parity), on uniform inputs; the paper
  finds Transformers fail to learn it in context.

As in the regression tasks the model reads each slot through a linear read-in: an x slot carries
the bits as +-1, a y slot (2y - 1, 0, ..., 0), and its token is the label itself (`0` or `1`), so
the label is predicted as the next token with the usual cross-entropy; a sample counts as solved
when its final query is right.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..errors import check
from .base import Batch, Vocab, register_task
from .common import check_range
from .in_context import InContextTask, query_mask, slot_vectors

FUNCTIONS = ("conjunction", "disjunction", "parity")


@dataclass
class BooleanParams:
    bits: int = field(default=10, metadata={"help": "input bits n"})
    function: str = field(default="conjunction", metadata={"help": "function class",
                                                           "choices": FUNCTIONS})
    min_examples: int = field(default=40, metadata={"help": "fewest in-context examples in training"})
    max_examples: int = field(default=40, metadata={"help": "most in-context examples in training"})
    positive: float = field(default=0.3, metadata={"help": "conjunction/disjunction: fraction of inputs drawn to "
                                                           "satisfy (falsify) the function"})
    relevant: int = field(default=2, metadata={"help": "parity: bits in the XOR"})


@register_task
class ICLBoolean(InContextTask):
    name = "icl_boolean"
    Params = BooleanParams
    description = "label x by a fresh Boolean function per sequence (conjunction, disjunction, parity) from examples"
    exact_match_reachable = False  # early queries are guesses: read accuracy per query position instead

    def validate(self) -> None:
        p = self.params
        check(1 <= p.bits <= 256, "task.bits", p.bits, "expected 1..256")
        check(p.function in FUNCTIONS, "task.function", p.function, f"expected one of {', '.join(FUNCTIONS)}")
        check_range("task", "min_examples", p.min_examples, "max_examples", p.max_examples)
        check(0 <= p.positive <= 1, "task.positive", p.positive, "expected a fraction in [0, 1]")
        check(1 <= p.relevant <= p.bits, "task.relevant", p.relevant, f"expected 1..task.bits ({p.bits})")
        self.input_dim = p.bits

    def build_vocab(self) -> Vocab:
        return Vocab(["x", "0", "1"])

    # --- the functions ------------------------------------------------------------------------
    def draw_functions(self, m: int, generator) -> tuple[Tensor, Tensor]:
        """(relevant (m, n) bool, negated (m, n) bool): which bits the function reads, and, for
        conjunctions and disjunctions, which of those enter negated."""
        p = self.params
        if p.function == "parity":
            order = torch.rand(m, p.bits, generator=generator).argsort(-1)[:, :p.relevant]
            relevant = torch.zeros(m, p.bits, dtype=torch.bool).scatter_(1, order, True)
            return relevant, torch.zeros_like(relevant)
        relevant = torch.rand(m, p.bits, generator=generator) < 1 / 3
        negated = torch.rand(m, p.bits, generator=generator) < 0.5
        return relevant, negated & relevant

    def evaluate(self, bits: Tensor, relevant: Tensor, negated: Tensor) -> Tensor:
        """(m, k) labels in {0, 1} of inputs (m, k, n) in {0, 1}."""
        literal = (bits.bool() ^ negated.unsqueeze(1))
        reads = relevant.unsqueeze(1)
        if self.params.function == "parity":
            return ((literal & reads).sum(-1) % 2).long()
        if self.params.function == "conjunction":
            return (literal | ~reads).all(-1).long()
        return (literal & reads).any(-1).long()

    def draw_inputs(self, m: int, k: int, relevant: Tensor, negated: Tensor, generator) -> Tensor:
        bits = (torch.rand(m, k, self.params.bits, generator=generator) < 0.5).long()
        if self.params.function == "parity":
            return bits
        # conjunction: set every literal true; disjunction: set every literal false
        forced = torch.rand(m, k, 1, generator=generator) < self.params.positive
        wanted = (~negated).long() if self.params.function == "conjunction" else negated.long()
        chosen = forced & relevant.unsqueeze(1)
        return torch.where(chosen, wanted.unsqueeze(1).expand_as(bits), bits)

    def _fixed_length(self, k: int, m: int, generator) -> Batch:
        relevant, negated = self.draw_functions(m, generator)
        bits = self.draw_inputs(m, k, relevant, negated, generator)
        labels = self.evaluate(bits, relevant, negated)
        T = 2 * k - 1
        tokens = torch.full((m, 2 * k), self.vocab["x"])
        tokens[:, 1::2] = labels + self.vocab["0"]  # a y slot's token is its label: targets are the next tokens
        meta = {"length": torch.full((m,), k), "relevant": relevant, "negated": negated}
        vectors = slot_vectors(2.0 * bits - 1, 2.0 * labels - 1)
        return Batch(tokens[:, :T], tokens[:, 1:], query_mask(m, k), None, meta, vectors)

    # --- reading a batch back -----------------------------------------------------------------
    def labels(self, batch: Batch) -> Tensor:
        """(B, k) the true label at each query."""
        return batch.targets[:, 0::2] - self.vocab["0"]

    def correct(self, predictions: Tensor, batch: Batch) -> Tensor:
        """(B, k) bool: each query labelled right (position i has seen i examples)."""
        return predictions[:, 0::2] == batch.targets[:, 0::2]

    def score(self, predictions: Tensor, batch: Batch) -> Tensor:
        last = batch.meta["length"] - 1
        return self.correct(predictions, batch).gather(1, last.unsqueeze(1)).squeeze(1)
