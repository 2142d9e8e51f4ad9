"""Positional encodings, chosen by name from POSITIONS.

One module per model. Each encoding may (a) add an embedding to the token embeddings, (b) rotate
queries and keys, and/or (c) add a bias to the attention logits of a given layer. `positions()`
decides which integer positions a batch gets: 0..T-1 by default, the task's own ids for
`coupling` and `abacus`, a sorted random subset of a larger range for `randomized` in training.

Task ids. A task with structured positions may offer several id schemes through its `ids`
parameter (addition: "coupling" or "abacus"). An encoding that reads task ids names the scheme it
needs (`task_ids`); config.ids_for_encoding makes the task's `ids` follow the model's encoding, so
`model.pos=abacus` alone is enough. Two-level ids (multi-operand addition, multiplication) pack
`significance + LEVEL_STRIDE * level` into one id; `coupling` unpacks them into two learned
tables, one per level, summed (multi-level position coupling, Cho et al. 2024b, arXiv 2410.15787).
`coupling_relative` (positions_relative.py) reads the same ids as a relative bias.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..errors import ConfigError
from ..registry import Registry
from ..coupled_ids import MAX_LEVELS, SHIFTED_ROW, unpack  # packed ids: see coupled_ids
from .embedding import Embedding
from .heads import attention_head_dim

POSITIONS: Registry[type["PositionalEncoding"]] = Registry("positional encoding", "model.pos")


class PositionalEncoding(nn.Module):
    uses_task_ids = False  # True: positions come from the task's position_ids
    task_ids: str | None = None  # the task id scheme this encoding reads ("coupling", "abacus")

    def __init__(self, config, n_layers: int):
        super().__init__()
        self.config, self.n_layers = config, n_layers
        self.n_heads = config.n_heads
        self.head_dim = attention_head_dim(config)

    def positions(self, tokens: Tensor, position_ids: Tensor | None) -> Tensor:
        if self.uses_task_ids:
            if position_ids is None:
                raise ConfigError("model.pos", type(self).name,
                                  "this encoding needs a task that defines position ids (e.g. addition, copy)")
            return position_ids
        return torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)

    def embed(self, positions: Tensor) -> Tensor | None:
        return None

    def rotate(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        return q, k

    def bias(self, layer: int, positions: Tensor) -> Tensor | None:
        return None


def _check_table(positions: Tensor, size: int) -> None:
    largest = int(positions.max())
    if largest >= size:
        raise ConfigError("model.max_positions", size,
                          f"position {largest} does not fit; expected model.max_positions > {largest}")


class TableEncoding(PositionalEncoding):
    """A learned embedding table indexed by position."""

    def __init__(self, config, n_layers):
        super().__init__(config, n_layers)
        self.table = Embedding(config.max_positions, config.d_model)
        nn.init.normal_(self.table.weight, std=0.02)

    def embed(self, positions: Tensor) -> Tensor:
        _check_table(positions, self.table.num_embeddings)
        # One lookup per row even when every row shares 0..T-1: looking up one row and broadcasting
        # is ~5% faster on small models, but it changes the summation order of the table's gradient
        # and with it which seeds of entropy-collapse collapse (see that experiment's notes).
        return self.table(positions)


@POSITIONS.register("learned")
class Learned(TableEncoding):
    name = "learned"


@POSITIONS.register("coupling")
class Coupling(TableEncoding):
    """Position coupling (Cho et al. 2024): a learned table indexed by the task's coupled ids.

    Multi-level coupling (Cho et al. 2024b, arXiv 2410.15787): ids >= LEVEL_STRIDE carry a second
    level (operand or partial-sum index); its own learned table is added, so significance is shared
    across levels. The paper's multiplication scratchpad adds a third id, the shifted significance
    (coupled_ids), read from the table's rows above SHIFTED_ROW and added too."""

    name = "coupling"
    uses_task_ids = True
    task_ids = "coupling"

    def __init__(self, config, n_layers):
        super().__init__(config, n_layers)
        self.levels = Embedding(MAX_LEVELS, config.d_model)
        nn.init.normal_(self.levels.weight, std=0.02)

    def embed(self, positions: Tensor) -> Tensor:
        significance, level, shifted = unpack(positions)
        embedded = super().embed(significance) + self.levels(level)
        if not bool(shifted.any()):
            return embedded
        # The paper's third id (multiplication's partial products): rows above SHIFTED_ROW of the
        # same table, a table of its own in all but storage; a token without one (0) adds nothing.
        if int(significance.max()) >= SHIFTED_ROW:
            raise ConfigError("task.max_position", int(significance.max()),
                              f"expected position ids below {SHIFTED_ROW} with shifted ids (rows above are theirs)")
        return embedded + super().embed(SHIFTED_ROW + shifted) * (shifted > 0).unsqueeze(-1)


@POSITIONS.register("abacus")
class Abacus(TableEncoding):
    """Abacus embeddings (McLeish et al. 2024): a learned table over the task's digit-run ids
    (each number's digits counted from its least significant one, from a random offset per batch
    in training). The task writes the ids; config.ids_for_encoding selects task.ids=abacus."""

    name = "abacus"
    uses_task_ids = True
    task_ids = "abacus"


@POSITIONS.register("randomized")
class Randomized(TableEncoding):
    """Randomized positions (Ruoss et al. 2023, arXiv 2305.16843): a learned table over
    0..max_positions-1; each sequence gets a sorted random subset of that range, so every row of the
    table is trained and long test sequences stay in distribution.

    Training draws from torch's global generator (seeded by the trainer). Evaluation draws too, as
    the reference implementation does, but from a fixed generator, so evaluation is reproducible;
    consecutive ids 0..T-1 would put a model trained on spread-out ids out of distribution."""

    name = "randomized"
    EVAL_SEED = 0

    def positions(self, tokens: Tensor, position_ids: Tensor | None) -> Tensor:
        B, T = tokens.shape
        size = self.table.num_embeddings
        if T > size:
            raise ConfigError("model.max_positions", size,
                              f"randomized positions need model.max_positions >= sequence length ({T})")
        generator = None if self.training else torch.Generator().manual_seed(self.EVAL_SEED)
        keys = torch.rand(B, size, generator=generator)
        chosen = keys.argsort(dim=1)[:, :T].sort(dim=1).values
        return chosen.to(tokens.device)


@POSITIONS.register("nope")
class NoPE(PositionalEncoding):
    name = "nope"


@POSITIONS.register("sinusoidal")
class Sinusoidal(PositionalEncoding):
    name = "sinusoidal"

    def embed(self, positions: Tensor) -> Tensor:
        d = self.config.d_model
        frequencies = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, device=positions.device) / d)
        angles = positions[..., None].float() * frequencies
        return torch.cat([angles.sin(), angles.cos()], dim=-1)[..., :d]


@POSITIONS.register("rope")
class Rope(PositionalEncoding):
    """Rotary embeddings (Su et al.): rotate pairs of q/k channels by position-dependent angles."""

    name = "rope"

    def __init__(self, config, n_layers, base: float = 10000.0):
        super().__init__(config, n_layers)
        half = self.head_dim // 2
        self.register_buffer("frequencies", base ** (-torch.arange(half).float() / max(half, 1)), persistent=False)

    def rotate(self, q, k, positions):
        angles = positions[:, None, :, None].float() * self.frequencies  # (B, 1, T, half)
        cos, sin = angles.cos(), angles.sin()
        return _rotate_half(q, cos, sin), _rotate_half(k, cos, sin)


def _rotate_half(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    half = cos.shape[-1]
    x1, x2, rest = x[..., :half], x[..., half:2 * half], x[..., 2 * half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest], dim=-1)


@POSITIONS.register("alibi")
class Alibi(PositionalEncoding):
    """ALiBi (Press et al.): a per-head linear penalty on the query-key distance."""

    name = "alibi"

    def __init__(self, config, n_layers):
        super().__init__(config, n_layers)
        self.register_buffer("slopes", torch.tensor(alibi_slopes(self.n_heads)), persistent=False)

    def bias(self, layer, positions):
        distance = (positions[:, :, None] - positions[:, None, :]).clamp(min=0).float()  # (B, T, T)
        return -self.slopes[None, :, None, None] * distance[:, None]


def alibi_slopes(n_heads: int) -> list[float]:
    """The paper's slopes (Press et al. 2022, arXiv 2108.12409, the authors' `get_slopes`): for 2^k heads
    the geometric sequence 2^(-8/n), 2^(-16/n), ..., 2^-8; for other counts, those of the largest power
    of two below, then every other slope of twice that power (for 3 heads: 1/16, 1/256, then 1/4)."""
    def power_of_two(n: int) -> list[float]:
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    if n_heads & (n_heads - 1) == 0:
        return power_of_two(n_heads)
    below = 2 ** (n_heads.bit_length() - 1)
    return power_of_two(below) + power_of_two(2 * below)[0::2][:n_heads - below]
