"""Small helpers shared by the task modules: symbol names, length draws, coupled-id offsets."""
from __future__ import annotations

import string
import zlib

import torch
from torch import Tensor

from ..errors import check

DIGITS = [str(d) for d in range(10)]


def symbol_names(count: int, prefix: str, letters: bool = True) -> list[str]:
    """`count` distinct symbols: single letters (or digits) when they fit, else prefix0, prefix1, ..."""
    pool = list(string.ascii_lowercase) if letters else DIGITS
    if count <= len(pool):
        return pool[:count]
    return [f"{prefix}{i}" for i in range(count)]


def first_symbol_id(vocab, count: int, prefix: str, letters: bool = True) -> int:
    """The id of the first of symbol_names(count, prefix, letters): the symbols were added to the vocabulary
    in order, so symbol i has this id + i."""
    return vocab[symbol_names(count, prefix, letters)[0]]


def check_range(prefix: str, low_name: str, low: int, high_name: str, high: int, floor: int = 1) -> None:
    check(low >= floor, f"{prefix}.{low_name}", low, f"expected >= {floor}")
    check(high >= low, f"{prefix}.{high_name}", high, f"expected >= {prefix}.{low_name} ({low})")


def draw_lengths(n: int, low: int, high: int, generator: torch.Generator, length: int | None) -> Tensor:
    """Per-sample lengths: uniform over low..high in training (length=None), else all `length`."""
    if length is None:
        return torch.randint(low, high + 1, (n,), generator=generator)
    return torch.full((n,), length)


# An evaluation start (Task.at_offset) that draws each sample's start as training does: the ids a test
# sample carries are then as common in training as any others, where the papers' fixed first start
# gives the rarest ids (a model that missed one of them fails there alone).
RANDOM_START = "random"


def random_start(m: int, span: int, max_position: int, generator: torch.Generator, train: bool,
                 first: int = 1, offset: int | str | None = None) -> Tensor:
    """(m, 1) start offsets for coupled ids covering `span` ids above the start: uniform over
    first..max_position - span in training, so every id up to max_position is trained (a longer
    span than max_position allows falls back to `first`); in evaluation `first`, as the papers'
    code does, or `offset` when one is asked for (`Task.at_offset`; RANDOM_START: drawn as in training)."""
    if not train and offset != RANDOM_START:
        return torch.full((m, 1), first if offset is None else offset)
    if not train:  # random starts in evaluation: drawn beside the data stream, so the samples stay the same
        generator = side_stream(generator)
    high = max(first, max_position - span)
    return torch.randint(first, high + 1, (m, 1), generator=generator)


def side_stream(generator: torch.Generator) -> torch.Generator:
    """A generator seeded from `generator`'s current state, which it leaves as it is: draws that must not
    change what the main stream draws next, deterministic all the same."""
    return torch.Generator().manual_seed(zlib.crc32(generator.get_state().numpy().tobytes()))


def column(m: int, token_id: int) -> Tensor:
    """(m, 1) of one token id."""
    return torch.full((m, 1), token_id)


def sorted_random_positions(m: int, length: int, count: int, generator: torch.Generator) -> Tensor:
    """(m, count) distinct positions in 0..length-1 per row, increasing."""
    keys = torch.rand(m, length, generator=generator)
    return keys.argsort(dim=1)[:, :count].sort(dim=1).values


def dirichlet_rows(shape: tuple[int, ...], concentration: float, generator: torch.Generator,
                   total: float = 1.0) -> Tensor:
    """Rows drawn from a symmetric Dirichlet(concentration) over the last dimension and scaled to sum
    to `total`, in float64: independent Gamma(concentration) draws normalized (what torch's Dirichlet
    samples). `total` multiplies before the division, so the rows keep the arithmetic tasks shipped with."""
    gamma = torch._standard_gamma(torch.full(shape, float(concentration), dtype=torch.float64), generator=generator)
    return total * gamma / gamma.sum(-1, keepdim=True)
