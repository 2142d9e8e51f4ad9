"""Bigram-Backcopy (Guo et al. 2024, "Active-Dormant Attention Heads: Mechanistically Demystifying
Extreme-Token Phenomena in LLMs", arXiv 2410.13835): a task on which, as they report, 1-3 layer
Transformers grow attention sinks on the first token and outliers in its residual stream (what our
runs show: the outliers experiment's notes).

`^ x1 x2 ... xL`: x1 is drawn uniformly from the ordinary symbols. After an ordinary symbol the next
one is drawn from one fixed bigram table, the same for every sequence (drawn once from
`table_seed`), which puts `trigger_p` of every row's mass on the triggers, shared evenly, and the
rest on the ordinary symbols as a Dirichlet(`alpha`) draw. After a trigger the next symbol repeats
the one before the trigger (the back-copy). The loss covers every symbol.

Only the back-copy needs attention; a bigram is read off the current token. So a head that copies is
useful at trigger queries and has nothing to do everywhere else, the situation in which heads park
their attention on a token that carries nothing (the paper's "dormant" heads, Bondarenko et al.'s
"no-op" heads). The triggers appear only after ordinary symbols and are never copied, so two
triggers never follow each other. Exact match scores the back-copies alone (every bigram draw is
random): a sample is right when every symbol after a trigger is predicted right.

`objective=masked` trains the same chains by masked-language modelling, BERT's objective (Devlin et
al. 2019, arXiv 1810.04805), which Bondarenko et al. trained their outlier models on:
`^ x1 ... xL $`, each symbol chosen with probability `mask_p`, a chosen symbol shown as MASK (80%), as
a random symbol (10%) or as it is (10%), and the loss on the chosen ones. Train it with
`model.bidirectional=true`. Every row also hides one back-copy behind MASK with its trigger and its
source shown, so every row has an answer the context decides. Exact match then scores the chosen
back-copies whose trigger and source are shown: the rest are bigram draws. `fillers` puts a ',' that
carries nothing after a symbol now and then (never next to a trigger): punctuation, as in BERT's text.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..errors import check
from .base import BOS, EOS, Batch, Task, Vocab, register_task
from .common import check_range, column, dirichlet_rows, draw_lengths, first_symbol_id, symbol_names


OBJECTIVES = ("next", "masked")
MASK, FILLER = "MASK", ","


@dataclass
class BackcopyParams:
    min_length: int = field(default=32, metadata={"help": "shortest sequence in training"})
    max_length: int = field(default=64, metadata={"help": "longest sequence in training"})
    states: int = field(default=32, metadata={"help": "ordinary symbols (the bigram table's alphabet)"})
    triggers: int = field(default=3, metadata={"help": "trigger symbols: the symbol after one repeats the one before it"})
    trigger_p: float = field(default=0.2, metadata={"help": "probability that an ordinary symbol is followed by a trigger"})
    alpha: float = field(default=0.5, metadata={"help": "Dirichlet concentration of the bigram rows (small: peaked)"})
    table_seed: int = field(default=0, metadata={"help": "seed of the bigram table itself"})
    objective: str = field(default="next", metadata={
        "help": "next: predict every next symbol (a causal model); masked: BERT's masked-language modelling, "
                "mask_p of the symbols hidden and predicted (with model.bidirectional=true)",
        "choices": OBJECTIVES})
    mask_p: float = field(default=0.15, metadata={
        "help": "objective=masked: the share of symbols chosen (80% shown as MASK, 10% as a random symbol, 10% as "
                "they are)"})
    fillers: float = field(default=0.0, metadata={
        "help": "objective=masked: the chance of a filler ',' after each symbol, a token that carries nothing (the "
                "chain runs on across it, as text across punctuation); never next to a trigger"})


@register_task
class BigramBackcopy(Task):
    name = "bigram_backcopy"
    Params = BackcopyParams
    description = ("continue a fixed bigram chain; after a trigger, repeat the symbol before it (attention sinks); "
                   "objective=masked fills in hidden symbols, BERT's objective")
    length_name = "symbols"

    def __init__(self, params=None):
        super().__init__(params)
        self.table = self.bigram_table()

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_length", p.min_length, "max_length", p.max_length, floor=2)
        check(2 <= p.states <= 256, "task.states", p.states, "expected 2..256")
        check(1 <= p.triggers <= 16, "task.triggers", p.triggers, "expected 1..16")
        check(0 < p.trigger_p < 1, "task.trigger_p", p.trigger_p, "expected strictly between 0 and 1")
        check(p.alpha > 0, "task.alpha", p.alpha, "expected > 0")
        check(p.objective in OBJECTIVES, "task.objective", p.objective, f"expected one of: {', '.join(OBJECTIVES)}")
        check(0 < p.mask_p < 1, "task.mask_p", p.mask_p, "expected strictly between 0 and 1")
        check(0 <= p.fillers < 1, "task.fillers", p.fillers, "expected 0 <= fillers < 1")
        check(p.fillers == 0 or p.objective == "masked", "task.fillers", p.fillers,
              "expected 0 with objective=next (fillers are for the masked objective)")

    def build_vocab(self) -> Vocab:
        p = self.params
        masked = [MASK] if p.objective == "masked" else []  # the next-symbol vocabulary stays as it was
        fillers = [FILLER] if p.fillers > 0 else []
        return Vocab(symbol_names(p.states, "s") + [f"T{i}" for i in range(p.triggers)] + masked + fillers)

    def bigram_table(self) -> Tensor:
        """(states, states + triggers) next-symbol probabilities of the ordinary symbols."""
        p = self.params
        generator = torch.Generator().manual_seed(p.table_seed)
        ordinary = dirichlet_rows((p.states, p.states), p.alpha, generator, total=1 - p.trigger_p)
        triggers = torch.full((p.states, p.triggers), p.trigger_p / p.triggers, dtype=torch.float64)
        return torch.cat([ordinary, triggers], 1)

    def train_lengths(self) -> tuple[int, int]:
        return self.params.min_length, self.params.max_length

    def sequence_length(self, length: int) -> int:
        if self.params.objective == "next":
            return length
        return length + 2 + (length - 1 if self.params.fillers > 0 else 0)  # BOS, symbols (fillers between), EOS

    def _sample(self, n, generator, length, train) -> Batch:
        """Every row is drawn at the batch's longest length and cut at its own: one pass over the
        positions for the whole batch (a pass per length cost ~90 ms a batch, as much as a step)."""
        lengths = draw_lengths(n, *self.train_lengths(), generator, length)
        L, states = int(lengths.max()), self.params.states
        uniform = torch.rand(n, L, generator=generator, dtype=torch.float64)
        cumulative = self.table.cumsum(-1)
        x = torch.zeros(n, L, dtype=torch.long)  # 0..states-1 ordinary, states.. triggers
        x[:, 0] = (uniform[:, 0] * states).long().clamp(max=states - 1)
        for t in range(1, L):
            previous = x[:, t - 1]
            drawn = (cumulative[previous.clamp(max=states - 1)] < uniform[:, t:t + 1]).sum(-1)
            drawn = drawn.clamp(max=self.table.shape[1] - 1)
            # x[t - 2] exists whenever x[t - 1] is a trigger: x1 is always ordinary
            copied = x[:, t - 2] if t >= 2 else previous
            x[:, t] = torch.where(previous >= states, copied, drawn)
        first = self.first_symbol()
        inside = torch.arange(L)[None, :] < lengths[:, None]
        symbols = torch.where(inside, x + first, 0)  # PAD past each length
        if self.params.objective == "masked":
            return self._masked(symbols, lengths, generator)
        sequence = torch.cat([column(n, self.vocab[BOS]), symbols], 1)
        return Batch(sequence[:, :-1], sequence[:, 1:], inside, None, {"length": lengths})

    def _masked(self, symbols: Tensor, lengths: Tensor, generator: torch.Generator) -> Batch:
        """`^ x1 .. xL $` (with fillers between, if asked) under BERT's corruption; targets are the tokens
        themselves, the loss on the chosen symbols."""
        if self.params.fillers > 0:
            symbols = self._with_fillers(symbols, generator)
        n, L = symbols.shape
        count_symbols = (symbols != 0).sum(1)
        original = torch.cat([column(n, self.vocab[BOS]), symbols, column(n, 0)], 1)
        original[torch.arange(n), count_symbols + 1] = self.vocab[EOS]
        first, count = self.first_symbol(), self.params.states + self.params.triggers
        is_symbol = (original >= first) & (original < first + count)  # neither BOS, EOS, PAD nor a filler
        chosen = (torch.rand(n, L + 2, generator=generator) < self.params.mask_p) & is_symbol
        kind = torch.rand(n, L + 2, generator=generator)  # < 0.8 MASK, < 0.9 a random symbol, else as it is
        random_symbol = first + torch.randint(count, (n, L + 2), generator=generator)
        # one back-copy per row hidden behind MASK, its trigger and source shown (rows without a copy: none)
        copies = self.copies(original)
        pick = (torch.rand(n, L + 2, generator=generator) * copies).argmax(1)
        rows = copies.any(1).nonzero().flatten()
        at = pick[rows]
        chosen[rows, at], kind[rows, at] = True, 0.0
        chosen[rows, at - 1], chosen[rows, at - 2] = False, False
        corrupted = torch.where(chosen & (kind < 0.8), self.vocab[MASK],
                                torch.where(chosen & (kind < 0.9), random_symbol, original))
        return Batch(corrupted, original, chosen, None, {"length": lengths})

    def _with_fillers(self, symbols: Tensor, generator: torch.Generator) -> Tensor:
        """The symbols (PAD past each row's end) with a filler after each with chance `fillers`, except next to
        a trigger, so a back-copy, its trigger and its source stay side by side; compacted to the left."""
        n, L = symbols.shape
        following = torch.cat([symbols[:, 1:], torch.zeros(n, 1, dtype=symbols.dtype)], 1)
        allowed = (following != 0) & ~self.is_trigger(symbols) & ~self.is_trigger(following)
        filled = (torch.rand(n, L, generator=generator) < self.params.fillers) & allowed
        slots = torch.stack([symbols, torch.where(filled, self.vocab[FILLER], 0)], 2).reshape(n, 2 * L)
        kept = slots != 0
        width = int(kept.sum(1).max())
        out = torch.zeros(n, width, dtype=symbols.dtype)
        rows, cols = kept.nonzero(as_tuple=True)
        out[rows, kept.long().cumsum(1)[rows, cols] - 1] = slots[rows, cols]
        return out

    def first_symbol(self) -> int:
        """The id of the first ordinary symbol; the others and then the triggers follow it."""
        return first_symbol_id(self.vocab, self.params.states, "s")

    def is_trigger(self, tokens: Tensor) -> Tensor:
        """Where a token is a trigger, so the next symbol is a back-copy."""
        low = self.vocab["T0"]
        return (tokens >= low) & (tokens < low + self.params.triggers)

    def copies(self, sequence: Tensor) -> Tensor:
        """(B, T) where a symbol of `^ x1 .. xL $` follows a trigger: a back-copy of the symbol two before
        (a trigger that ends the row is followed by EOS, no copy)."""
        first = self.first_symbol()
        ordinary = (sequence >= first) & (sequence < first + self.params.states)
        after = torch.zeros_like(sequence, dtype=torch.bool)
        after[:, 1:] = self.is_trigger(sequence[:, :-1]) & ordinary[:, 1:]
        return after

    def score(self, predictions: Tensor, batch: Batch) -> Tensor:
        """Exact match on the back-copies: every symbol that follows a trigger predicted right. Masked:
        every chosen back-copy whose trigger and source are shown as they are."""
        if self.params.objective == "masked":
            shown = batch.tokens == batch.targets
            decided = torch.zeros_like(shown)
            decided[:, 2:] = shown[:, 1:-1] & shown[:, :-2]
            copies = self.copies(batch.targets) & batch.loss_mask & decided
        else:
            copies = self.is_trigger(batch.tokens) & batch.loss_mask
        wrong = (predictions != batch.targets) & copies
        return ~wrong.any(dim=1)
