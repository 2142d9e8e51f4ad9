"""Clean / corrupted prompt pairs for activation patching, one recipe per task.

A pair differs in as few tokens as the task allows, so that the answer at one position changes:
the clean prompt's answer there is `answer`, the corrupted prompt's is `wrong`. Both prompts have
the same length (every pair is drawn at one fixed length), so a clean activation can be patched
into the corrupted run position by position.

    induction            the symbol after the first trigger '@' becomes another symbol
    associative_recall   the queried key's value (in the key-value context) becomes another value
    mqar                 the value of the first queried key becomes another value
    addition             the units digit of the first operand changes, so the answer's units digit does
    copy                 the first symbol of the string changes, so the first copied symbol does

`answer_position` is the position whose logits predict the answer (the token before it). Tokens
after that position may differ too (a shown answer); causal models never read them there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from ..errors import ConfigError


@dataclass
class Pairs:
    clean: Tensor  # (B, T) long
    corrupted: Tensor  # (B, T) long, the same length
    position_ids: Tensor | None  # (B, T) long, shared by both prompts, or None
    answer_position: Tensor  # (B,) long: where the logits predict the answer
    answer: Tensor  # (B,) long: the clean answer's token id
    wrong: Tensor  # (B,) long: the corrupted answer's token id

    def __len__(self) -> int:
        return self.clean.shape[0]


def other_symbol(current: Tensor, first: int, count: int, generator: torch.Generator) -> Tensor:
    """A symbol id in first..first+count-1 different from `current`, uniformly among the others."""
    shift = torch.randint(1, count, current.shape, generator=generator)
    return (current - first + shift) % count + first


def rows(n: int) -> Tensor:
    return torch.arange(n)


# --- the recipes: (task, clean batch, generator) -> (corrupted tokens, answer position, wrong) ----
def induction_pair(task, batch, generator):
    first = _first_symbol_id(task, "s")
    tokens = batch.tokens
    answer_position = torch.full((len(batch),), tokens.shape[1] - 2)  # the final '@'
    follower = batch.meta["trigger"] + 2  # BOS, then the context: the symbol after the trigger
    wrong = other_symbol(tokens[rows(len(batch)), follower], first, task.params.alphabet, generator)
    corrupted = tokens.clone()
    corrupted[rows(len(batch)), follower] = wrong
    corrupted[:, -1] = wrong  # the answer as the last input token, as the clean prompt shows it
    return corrupted, answer_position, wrong


def associative_recall_pair(task, batch, generator):
    first = _first_symbol_id(task, "v", letters=False)
    tokens, n = batch.tokens, len(batch)
    answer_position = torch.full((n,), tokens.shape[1] - 2)  # the query key
    value = 2 + 2 * batch.meta["query"]  # BOS, then key-value pairs
    wrong = other_symbol(tokens[rows(n), value], first, task.params.n_values, generator)
    corrupted = tokens.clone()
    corrupted[rows(n), value] = wrong
    corrupted[:, -1] = wrong
    return corrupted, answer_position, wrong


def mqar_pair(task, batch, generator):
    first = _first_symbol_id(task, "v", letters=False)
    tokens, n = batch.tokens, len(batch)
    answer_position = batch.loss_mask.float().argmax(dim=1)  # the first queried key
    key = tokens[rows(n), answer_position]
    L = int(batch.meta["length"][0])
    context_keys = tokens[:, 1:1 + 2 * L:2]
    value = 2 + 2 * (context_keys == key[:, None]).float().argmax(dim=1)
    wrong = other_symbol(tokens[rows(n), value], first, task.params.n_values, generator)
    corrupted = tokens.clone()
    corrupted[rows(n), value] = wrong
    shown = answer_position + 1  # the answered value in the query region
    corrupted[rows(n), shown] = torch.where(tokens[rows(n), shown] == tokens[rows(n), value], wrong,
                                            tokens[rows(n), shown])
    return corrupted, answer_position, wrong


def addition_pair(task, batch, generator):
    from ..tasks.addition import add_digits

    tokens, n, zero = batch.tokens, len(batch), task.vocab["0"]
    w = int(batch.meta["length"][0])
    a = (tokens[:, 1:w + 1] - zero).flip(1)  # least significant first
    b = (tokens[:, w + 2:2 * w + 2] - zero).flip(1)
    changed = a.clone()
    changed[:, 0] = other_symbol(a[:, 0], 0, 10, generator)  # the units digit: the sum's units digit changes
    total = add_digits(changed, b)
    corrupted = tokens.clone()
    corrupted[:, w] = changed[:, 0] + zero
    answer = total if task.params.reverse_answer else total.flip(1)
    corrupted[:, 2 * w + 3:3 * w + 4] = answer + zero
    # the units digit of the answer: first when reversed, last otherwise; predicted one token earlier
    units = 2 * w + 3 if task.params.reverse_answer else 3 * w + 3
    answer_position = torch.full((n,), units - 1)
    wrong = total[:, 0] + zero
    return corrupted, answer_position, wrong


def copy_pair(task, batch, generator):
    tokens, n = batch.tokens, len(batch)
    L = int(batch.meta["length"][0])
    wrong = other_symbol(tokens[:, 1], task.vocab["a"], task.params.alphabet, generator)
    corrupted = tokens.clone()
    corrupted[:, 1] = wrong
    corrupted[:, L + 2] = wrong  # the copied symbol as input, after the answer position
    return corrupted, torch.full((n,), L + 1), wrong


PAIR_RECIPES: dict[str, Callable] = {
    "induction": induction_pair, "associative_recall": associative_recall_pair, "mqar": mqar_pair,
    "addition": addition_pair, "copy": copy_pair,
}


ALIGN_DRAWS = 64  # at most this many candidates per pair are drawn to find pairs that align


def patching_pairs(task, n: int, seed: int = 0, length: int | None = None, aligned: bool = True) -> Pairs:
    """n clean/corrupted pairs of `task` at one length (default: the longest trained), seeded.

    aligned=True keeps only pairs corrupted at the same first position (the most common one among
    up to ALIGN_DRAWS x n candidates): where the trigger or the queried pair sits differs from sample
    to sample, and a per-position patching map averaged over unaligned pairs smears each effect
    over every position it can take. Fewer than n pairs come back when too few align."""
    recipe = PAIR_RECIPES.get(task.name)
    if recipe is None:
        raise ConfigError("task.name", task.name, "has no patching pairs; choose one of: " + ", ".join(PAIR_RECIPES))
    if n < 1:
        raise ConfigError("n", n, "expected at least 1 pair")
    generator = torch.Generator().manual_seed(seed)
    length = task.train_lengths()[1] if length is None else length
    batch = task.sample(n * ALIGN_DRAWS if aligned else n, generator, length=length, train=False)
    corrupted, answer_position, wrong = recipe(task, batch, generator)
    answer = batch.targets[rows(len(batch)), answer_position]
    keep = _aligned(batch.tokens, corrupted, answer_position, n) if aligned else torch.arange(n)
    ids = None if batch.position_ids is None else batch.position_ids[keep]
    return Pairs(batch.tokens[keep], corrupted[keep], ids, answer_position[keep], answer[keep], wrong[keep])


def _aligned(clean: Tensor, corrupted: Tensor, answer_position: Tensor, n: int) -> Tensor:
    """Indices of up to n pairs whose first differing position (before the answer) and answer
    position are the most common such combination."""
    before = torch.arange(clean.shape[1])[None, :] < answer_position[:, None]
    differs = (clean != corrupted) & before
    first = torch.where(differs.any(dim=1), differs.float().argmax(dim=1), torch.full_like(answer_position, -1))
    key = first * clean.shape[1] + answer_position
    common = torch.mode(key).values
    return (key == common).nonzero()[:n, 0]


def _first_symbol_id(task, prefix: str, letters: bool = True) -> int:
    from ..tasks.common import first_symbol_id

    count = task.params.alphabet if prefix == "s" else task.params.n_values
    return first_symbol_id(task.vocab, count, prefix, letters)
