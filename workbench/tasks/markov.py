"""In-context learning of Markov chains (Bondaschi et al. 2025, arXiv 2502.10178): every sequence
comes from its own random chain of order k, so the only way to predict well is to count transitions
in the context.

`^ x1 x2 ... xL`: the first k symbols are uniform; then x_t ~ P(. | x_{t-k} .. x_{t-1}), each row
P(. | context) drawn from a symmetric Dirichlet(beta). The loss covers every symbol. Under that
prior the Bayes-optimal predictor is add-beta smoothing of the in-context counts,
  p(s | c) = (count(c -> s) + beta) / (count(c) + S * beta)
(beta = 1: Laplace's rule), and `bayes_loss` returns its per-position cross-entropy: the
reference a model's in-context loss is compared against.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..errors import check
from .base import BOS, Batch, Task, Vocab, concat_padded, register_task, split_by_length
from .common import check_range, column, dirichlet_rows, draw_lengths, first_symbol_id, symbol_names

MAX_CONTEXTS = 4096


@dataclass
class MarkovParams:
    min_length: int = field(default=32, metadata={"help": "shortest sequence in training"})
    max_length: int = field(default=64, metadata={"help": "longest sequence in training"})
    states: int = field(default=3, metadata={"help": "alphabet size S"})
    order: int = field(default=1, metadata={"help": "Markov order k (0: i.i.d. symbols)"})
    beta: float = field(default=1.0, metadata={"help": "Dirichlet concentration = add-beta smoothing"})


@register_task
class MarkovICL(Task):
    name = "markov_icl"
    Params = MarkovParams
    description = "predict a sequence from a fresh random Markov chain (in-context counting)"
    length_name = "symbols"
    exact_match_reachable = False  # the next symbol is drawn: compare the loss with bayes_loss instead

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_length", p.min_length, "max_length", p.max_length)
        check(2 <= p.states <= 64, "task.states", p.states, "expected 2..64")
        check(p.order >= 0, "task.order", p.order, "expected >= 0")
        check(p.states ** p.order <= MAX_CONTEXTS, "task.order", p.order,
              f"expected task.states ** task.order <= {MAX_CONTEXTS} contexts")
        check(p.beta > 0, "task.beta", p.beta, "expected > 0")

    def build_vocab(self) -> Vocab:
        return Vocab(symbol_names(self.params.states, "s"))

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_length, self.params.max_length

    def sequence_length(self, length: int) -> int:
        return length

    def _sample(self, n, generator, length, train) -> Batch:
        lengths = draw_lengths(n, *self.train_lengths(), generator, length)
        return concat_padded([self._fixed_length(L, idx.numel(), generator) for L, idx in split_by_length(lengths)])

    def random_chains(self, m: int, generator) -> Tensor:
        """(m, S^k, S) transition rows from Dirichlet(beta), reproducible from `generator`."""
        S, contexts = self.params.states, self.params.states ** self.params.order
        seed = int(torch.randint(0, 2 ** 62, (1,), generator=generator))
        # A generator of its own, seeded from the task's: the same draws as seeding torch's global
        # generator (what this did before), without touching it from the trainer's data thread.
        return dirichlet_rows((m, contexts, S), self.params.beta, torch.Generator().manual_seed(seed))

    def _fixed_length(self, L: int, m: int, generator) -> Batch:
        S, k = self.params.states, self.params.order
        chains = self.random_chains(m, generator)
        uniform = torch.rand(m, L, generator=generator, dtype=torch.float64)
        x = torch.zeros(m, L, dtype=torch.long)
        rows = torch.arange(m)
        for t in range(L):
            if t < k:
                x[:, t] = (uniform[:, t] * S).long().clamp(max=S - 1)
                continue
            probs = chains[rows, self.context_index(x, t)]
            x[:, t] = (probs.cumsum(-1) < uniform[:, t:t + 1]).sum(-1).clamp(max=S - 1)
        first = first_symbol_id(self.vocab, S, "s")
        sequence = torch.cat([column(m, self.vocab[BOS]), x + first], 1)
        return Batch(sequence[:, :-1], sequence[:, 1:], torch.ones(m, L, dtype=torch.bool), None,
                     {"length": torch.full((m,), L)})

    def context_index(self, x: Tensor, t: int) -> Tensor:
        """Index of the context x[t-k .. t-1] read as a base-S number (most recent symbol last)."""
        S, k = self.params.states, self.params.order
        index = torch.zeros(x.shape[0], dtype=torch.long)
        for j in range(t - k, t):
            index = index * S + x[:, j]
        return index

    def bayes_loss(self, batch: Batch) -> Tensor:
        """(B, T) cross-entropy in nats of the Bayes-optimal add-beta predictor at each position
        (0 where the loss mask is off): log S for the first k symbols, then
        -log((count(c -> x_t) + beta) / (count(c) + S beta)) with counts from x_1 .. x_{t-1}."""
        S, k, beta = self.params.states, self.params.order, self.params.beta
        first = first_symbol_id(self.vocab, S, "s")
        x = (batch.targets - first).clamp(min=0)
        B, T = x.shape
        counts = torch.zeros(B, S ** k, S, dtype=torch.float64)
        loss = torch.zeros(B, T, dtype=torch.float64)
        rows = torch.arange(B)
        for t in range(T):
            if t < k:
                loss[:, t] = math.log(S)
                continue
            c = self.context_index(x, t)
            seen = counts[rows, c]
            p = (seen[rows, x[:, t]] + beta) / (seen.sum(-1) + S * beta)
            loss[:, t] = -torch.log(p)
            counts[rows, c, x[:, t]] += batch.loss_mask[:, t].double()
        return torch.where(batch.loss_mask, loss, 0.0)
