"""Retrieval from context: passkey, associative recall, multi-query associative recall (MQAR) and
the induction-head task. The answer is always something the prompt already contains."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..errors import ConfigError, check
from .base import BOS, EOS, Batch, Task, Vocab, assemble, concat_padded, register_task, split_by_length
from .common import DIGITS, check_range, column, draw_lengths, first_symbol_id, symbol_names


class RetrievalTask(Task):
    """Lengths from min_length..max_length (or pairs), one vectorized group per length."""

    low_name, high_name = "min_length", "max_length"

    def train_lengths(self) -> tuple[int, int]:
        return getattr(self.params, self.low_name), getattr(self.params, self.high_name)

    def _sample(self, n, generator, length, train) -> Batch:
        if length is not None:
            self.check_length(length)
        lengths = draw_lengths(n, *self.train_lengths(), generator, length)
        return concat_padded([self._fixed_length(L, idx.numel(), generator)
                              for L, idx in split_by_length(lengths)])

    def check_length(self, length: int) -> None:
        """Raise ConfigError for a test length this task cannot build."""


# --- passkey ------------------------------------------------------------------------------------
@dataclass
class PasskeyParams:
    min_length: int = field(default=8, metadata={"help": "fewest filler tokens in training"})
    max_length: int = field(default=32, metadata={"help": "most filler tokens in training"})
    digits: int = field(default=5, metadata={"help": "digits in the passkey"})


@register_task
class Passkey(RetrievalTask):
    """`^ ~ ~ K 3 4 1 ~ ~ ~ ? 3 4 1 $`: a passkey after 'K' hidden at a random depth in filler '~';
    after '?' repeat it. Length = filler tokens."""

    name = "passkey"
    Params = PasskeyParams
    description = "find the passkey hidden in filler and repeat it"
    length_name = "filler tokens"

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_length", p.min_length, "max_length", p.max_length)
        check(p.digits >= 1, "task.digits", p.digits, "expected >= 1")

    def build_vocab(self) -> Vocab:
        return Vocab(DIGITS + ["~", "K", "?"])

    def sequence_length(self, length: int) -> int:
        return length + 2 * self.params.digits + 3

    def _fixed_length(self, L, m, generator) -> Batch:
        D = self.params.digits
        key = torch.randint(0, 10, (m, D), generator=generator) + self.vocab["0"]
        depth = torch.randint(0, L + 1, (m, 1), generator=generator)  # filler tokens before 'K'
        offset = torch.arange(L + 1 + D) - depth  # 0 at 'K', 1..D on the passkey
        on_key = (offset >= 1) & (offset <= D)
        body = torch.where(on_key, key.gather(1, (offset - 1).clamp(0, D - 1)), self.vocab["~"])
        body = torch.where(offset == 0, self.vocab["K"], body)
        prompt = torch.cat([column(m, self.vocab[BOS]), body, column(m, self.vocab["?"])], 1)
        answer = torch.cat([key, column(m, self.vocab[EOS])], 1)
        return assemble(prompt, answer, meta={"length": torch.full((m,), L), "depth": depth[:, 0]})


# --- associative recall -------------------------------------------------------------------------
@dataclass
class RecallParams:
    min_pairs: int = field(default=2, metadata={"help": "fewest key-value pairs in training"})
    max_pairs: int = field(default=8, metadata={"help": "most key-value pairs in training"})
    n_keys: int = field(default=16, metadata={"help": "distinct key symbols (keys in a sample are distinct)"})
    n_values: int = field(default=10, metadata={"help": "distinct value symbols"})


class KeyValueTask(RetrievalTask):
    low_name, high_name = "min_pairs", "max_pairs"
    length_name = "key-value pairs"
    markers: tuple[str, ...] = ()

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_pairs", p.min_pairs, "max_pairs", p.max_pairs)
        check(p.n_keys >= 1, "task.n_keys", p.n_keys, "expected >= 1")
        check(p.n_values >= 2, "task.n_values", p.n_values, "expected >= 2")
        check(p.max_pairs <= p.n_keys, "task.max_pairs", p.max_pairs,
              f"expected <= task.n_keys ({p.n_keys}): keys in a sample are distinct")

    def check_length(self, length: int) -> None:
        if length > self.params.n_keys:
            raise ConfigError(f"{self.name}.key-value pairs", length,
                              f"expected <= task.n_keys ({self.params.n_keys}): keys in a sample are distinct")

    def build_vocab(self) -> Vocab:
        return Vocab(symbol_names(self.params.n_keys, "k") + symbol_names(self.params.n_values, "v", letters=False)
                     + list(self.markers))

    def key_value_pairs(self, L: int, m: int, generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(m, L) distinct keys and (m, L) values, as token ids."""
        first_key = first_symbol_id(self.vocab, self.params.n_keys, "k")
        first_value = first_symbol_id(self.vocab, self.params.n_values, "v", letters=False)
        keys = torch.rand(m, self.params.n_keys, generator=generator).argsort(1)[:, :L] + first_key
        values = torch.randint(0, self.params.n_values, (m, L), generator=generator) + first_value
        return keys, values


@register_task
class AssociativeRecall(KeyValueTask):
    """`^ a 1 b 7 c 3 ? b 7 $`: key-value pairs, then one of the keys; answer its value."""

    name = "associative_recall"
    Params = RecallParams
    description = "recall the value paired with the queried key"
    markers = ("?",)

    def sequence_length(self, length: int) -> int:
        return 2 * length + 4

    def _fixed_length(self, L, m, generator) -> Batch:
        keys, values = self.key_value_pairs(L, m, generator)
        which = torch.randint(0, L, (m, 1), generator=generator)
        context = torch.stack([keys, values], 2).reshape(m, 2 * L)
        prompt = torch.cat([column(m, self.vocab[BOS]), context, column(m, self.vocab["?"]), keys.gather(1, which)], 1)
        answer = torch.cat([values.gather(1, which), column(m, self.vocab[EOS])], 1)
        return assemble(prompt, answer, meta={"length": torch.full((m,), L), "query": which[:, 0]})


# --- MQAR ---------------------------------------------------------------------------------------
MQAR_FILLERS = ("marker", "random")


@dataclass
class MqarParams:
    min_pairs: int = field(default=2, metadata={"help": "fewest key-value pairs in training"})
    max_pairs: int = field(default=8, metadata={"help": "most key-value pairs in training"})
    seq_len: int = field(default=64, metadata={"help": "tokens of context + query region (grows if too short)"})
    n_keys: int = field(default=32, metadata={"help": "distinct key symbols"})
    n_values: int = field(default=32, metadata={"help": "distinct value symbols"})
    power_a: float = field(default=0.01, metadata={"help": "power-law exponent of query distances (Zoology)"})
    show_answers: bool = field(default=True, metadata={
        "help": "write each answered value into the query region after its key (false: hidden, as Zoology does)"})
    filler: str = field(default="marker", metadata={
        "help": "what fills the query region's empty slots and hidden answers: the marker '_', or random key "
                "and value symbols (Zoology's default, so distractor keys appear)", "choices": MQAR_FILLERS})
    distinct_values: bool = field(default=False, metadata={
        "help": "draw a sample's values without replacement, as Zoology does (needs task.n_values >= pairs)"})


@register_task
class Mqar(KeyValueTask):
    """Multi-query associative recall as Zoology (Arora et al. 2023) builds it: L key-value pairs,
    then a query region of S two-token slots; every key is asked once, in a slot drawn without
    replacement with probability ~ a * g^(a-1) (g = slot index from 1, a = power_a), so most
    queries come soon after the context and a few far away. The slot holds `key value`; the loss
    is on each value, predicted from its key. Empty slots hold '_'. S = max(L, (seq_len - 2L) // 2).
    Zoology's own variant (its generator's defaults): show_answers=false, filler=random,
    distinct_values=true."""

    name = "mqar"
    Params = MqarParams
    description = "multi-query associative recall with power-law query distances (Zoology)"
    markers = ("_",)

    def validate(self) -> None:
        super().validate()
        p = self.params
        check(p.power_a > 0, "task.power_a", p.power_a, "expected > 0")
        if p.filler not in MQAR_FILLERS:
            raise ConfigError("task.filler", p.filler, choices=MQAR_FILLERS)
        check(not p.distinct_values or p.max_pairs <= p.n_values, "task.max_pairs", p.max_pairs,
              f"expected <= task.n_values ({p.n_values}) with task.distinct_values: a sample's values are distinct")

    def check_length(self, length: int) -> None:
        super().check_length(length)
        if self.params.distinct_values and length > self.params.n_values:
            raise ConfigError(f"{self.name}.key-value pairs", length,
                              f"expected <= task.n_values ({self.params.n_values}) with task.distinct_values")

    def key_value_pairs(self, L: int, m: int, generator) -> tuple[torch.Tensor, torch.Tensor]:
        keys, values = super().key_value_pairs(L, m, generator)
        if self.params.distinct_values:  # drawn after the keys, so the keys match the default's
            first_value = first_symbol_id(self.vocab, self.params.n_values, "v", letters=False)
            values = torch.rand(m, self.params.n_values, generator=generator).argsort(1)[:, :L] + first_value
        return keys, values

    def slots(self, L: int) -> int:
        return max(L, (self.params.seq_len - 2 * L) // 2)

    def sequence_length(self, length: int) -> int:
        return 2 * length + 2 * self.slots(length)

    def _fixed_length(self, L, m, generator) -> Batch:
        keys, values = self.key_value_pairs(L, m, generator)
        S, a = self.slots(L), self.params.power_a
        weights = a * torch.arange(1, S + 1, dtype=torch.float64) ** (a - 1)
        slot = torch.multinomial(weights.expand(m, S), L, replacement=False, generator=generator)  # slot of key i
        region = torch.full((m, S, 2), self.vocab["_"])
        rows = torch.arange(m)[:, None]
        region[rows, slot, 0], region[rows, slot, 1] = keys, values
        is_value = torch.zeros(m, S, 2, dtype=torch.bool)
        is_value[rows, slot, 1] = True
        context = torch.stack([keys, values], 2).reshape(m, 2 * L)
        sequence = torch.cat([column(m, self.vocab[BOS]), context, region.reshape(m, 2 * S)], 1)
        answer_mask = torch.cat([torch.zeros(m, 1 + 2 * L, dtype=torch.bool), is_value.reshape(m, 2 * S)], 1)
        # Hidden answers: the input holds '_' where a value is predicted, so a later query cannot
        # narrow its choice to the values not yet asked (Zoology's inputs carry no answers).
        shown = sequence if self.params.show_answers else sequence.masked_fill(answer_mask, self.vocab["_"])
        if self.params.filler == "random":  # Zoology: every '_' becomes a random key or value symbol
            first = first_symbol_id(self.vocab, self.params.n_keys, "k")
            noise = torch.randint(0, self.params.n_keys + self.params.n_values, shown.shape, generator=generator) + first
            shown = torch.where(shown == self.vocab["_"], noise, shown)
        return Batch(shown[:, :-1], sequence[:, 1:], answer_mask[:, 1:], None,
                     {"length": torch.full((m,), L)})


# --- induction ----------------------------------------------------------------------------------
@dataclass
class InductionParams:
    min_length: int = field(default=8, metadata={"help": "fewest context tokens in training"})
    max_length: int = field(default=32, metadata={"help": "most context tokens in training"})
    alphabet: int = field(default=16, metadata={"help": "distinct symbols"})


@register_task
class Induction(RetrievalTask):
    """The induction-head pattern `... @ x ... @ -> x`: L random symbols in which the trigger '@'
    appears once, followed by a random symbol x; the prompt ends with '@' again and the answer is
    x. Length = context tokens (the '@ x' pair included)."""

    name = "induction"
    Params = InductionParams
    description = "after a repeated trigger '@', predict the symbol that followed it before"
    length_name = "context tokens"

    def validate(self) -> None:
        p = self.params
        check_range("task", "min_length", p.min_length, "max_length", p.max_length, floor=2)
        check(2 <= p.alphabet <= 1000, "task.alphabet", p.alphabet, "expected 2..1000")

    def check_length(self, length: int) -> None:
        if length < 2:
            raise ConfigError("induction.context tokens", length, "expected >= 2 (the trigger and its follower)")

    def build_vocab(self) -> Vocab:
        return Vocab(symbol_names(self.params.alphabet, "s") + ["@"])

    def sequence_length(self, length: int) -> int:
        return length + 3

    def _fixed_length(self, L, m, generator) -> Batch:
        first = first_symbol_id(self.vocab, self.params.alphabet, "s")
        context = torch.randint(0, self.params.alphabet, (m, L), generator=generator) + first
        trigger = torch.randint(0, L - 1, (m, 1), generator=generator)
        context.scatter_(1, trigger, self.vocab["@"])
        follower = context.gather(1, trigger + 1)
        trig = column(m, self.vocab["@"])
        prompt = torch.cat([column(m, self.vocab[BOS]), context, trig], 1)
        answer = torch.cat([follower, column(m, self.vocab[EOS])], 1)
        return assemble(prompt, answer, meta={"length": torch.full((m,), L), "trigger": trigger[:, 0]})
