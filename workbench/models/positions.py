"""Positional encodings, chosen by name from POSITIONS.

One module per model. Each encoding may (a) add an embedding to the token embeddings, (b) rotate
queries and keys, and/or (c) add a bias to the attention logits of a given layer. `positions()`
decides which integer positions a batch gets: 0..T-1 by default, the task's own ids for
`coupling`-style encodings.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..errors import ConfigError
from ..registry import Registry

POSITIONS: Registry[type["PositionalEncoding"]] = Registry("positional encoding", "model.pos")


class PositionalEncoding(nn.Module):
    uses_task_ids = False  # True: positions come from the task's position_ids

    def __init__(self, config, n_layers: int):
        super().__init__()
        self.config, self.n_layers = config, n_layers
        self.n_heads = config.n_heads
        self.head_dim = config.d_model // config.n_heads

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
        self.table = nn.Embedding(config.max_positions, config.d_model)
        nn.init.normal_(self.table.weight, std=0.02)

    def embed(self, positions: Tensor) -> Tensor:
        _check_table(positions, self.table.num_embeddings)
        return self.table(positions)


@POSITIONS.register("learned")
class Learned(TableEncoding):
    name = "learned"


@POSITIONS.register("coupling")
class Coupling(TableEncoding):
    """Position coupling (Cho et al. 2024): a learned table indexed by the task's coupled ids."""

    name = "coupling"
    uses_task_ids = True


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
        slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / self.n_heads) for h in range(self.n_heads)])
        self.register_buffer("slopes", slopes, persistent=False)

    def bias(self, layer, positions):
        distance = (positions[:, :, None] - positions[:, None, :]).clamp(min=0).float()  # (B, T, T)
        return -self.slopes[None, :, None, None] * distance[:, None]
