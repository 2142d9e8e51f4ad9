"""Relative positional encodings that add a learned bias to the attention logits of each layer.

`t5_bias` and `fire` are functions of the query-key distance i - j (>= 0 under the causal mask),
so they apply unchanged at any length: `t5_bias` buckets distances (exact for short ones,
logarithmic up to a largest bucket), `fire` maps a log-transformed, progressively interpolated
distance through a small MLP; future keys (j > i) get the value of distance 0 and are masked by
the attention anyway. `coupling_relative` reads the task's coupled ids instead of sequence
positions, with a signed difference. Each returns a (1 or B, H, T, T) bias.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..coupled_ids import MAX_LEVELS, SHIFT_STRIDE, unpack
from .embedding import Embedding
from .positions import POSITIONS, PositionalEncoding


def _shared_rows(positions: Tensor) -> Tensor:
    """(B', T): one row when every sequence has the same positions (the usual 0..T-1), so the
    (B, H, T, T) bias is computed once and broadcast over the batch."""
    if positions.shape[0] > 1 and bool((positions == positions[:1]).all()):
        return positions[:1]
    return positions


def _distance(positions: Tensor) -> Tensor:
    """(B', T, T) query-minus-key distance, clamped at 0 (causal)."""
    positions = _shared_rows(positions)
    return (positions[:, :, None] - positions[:, None, :]).clamp(min=0)


def t5_buckets(distance: Tensor, n_buckets: int = 32, max_distance: int = 128) -> Tensor:
    """T5's unidirectional buckets (Raffel et al. 2020): half the buckets hold distances 0..n/2-1
    exactly, the other half grow logarithmically up to max_distance; farther shares the last."""
    exact = n_buckets // 2
    far = distance.float().clamp(min=1) / exact
    log_bucket = exact + (torch.log(far) / math.log(max_distance / exact) * (n_buckets - exact)).long()
    log_bucket = log_bucket.clamp(max=n_buckets - 1)
    return torch.where(distance < exact, distance, log_bucket)


@POSITIONS.register("t5_bias")
class T5Bias(PositionalEncoding):
    """Bucketed relative bias: a learned (bucket -> per-head bias) table per layer."""

    name = "t5_bias"
    N_BUCKETS, MAX_DISTANCE = 32, 128

    def __init__(self, config, n_layers):
        super().__init__(config, n_layers)
        self.tables = nn.ModuleList(Embedding(self.N_BUCKETS, self.n_heads) for _ in range(n_layers))

    def bias(self, layer, positions):
        buckets = t5_buckets(_distance(positions), self.N_BUCKETS, self.MAX_DISTANCE)
        return self.tables[layer](buckets).permute(0, 3, 1, 2)  # (B', H, T, T)


class FireBias(nn.Module):
    """One layer of FIRE (Li et al. 2023, arXiv 2310.04418):
    b(i, j) = f(psi(i - j) / (psi(max(L, i)) + eps)), psi(x) = log(|c x| + 1),
    f = Linear(1 -> 32) ReLU Linear(32 -> H), c learnable (init 0.1), L = |L_mult * 512| with
    L_mult learnable (init 1) and 512 frozen. Dividing by psi(max(L, i)) is the progressive
    interpolation: beyond L the normalized distance stays in [0, 1]."""

    WIDTH, C_INIT, L_INIT, EPS = 32, 0.1, 512.0, 1e-6

    def __init__(self, n_heads: int):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(1, self.WIDTH), nn.ReLU(), nn.Linear(self.WIDTH, n_heads))
        self.c = nn.Parameter(torch.tensor(self.C_INIT))
        self.L_multiplier = nn.Parameter(torch.tensor(1.0))
        self.register_buffer("L_init", torch.tensor(self.L_INIT), persistent=False)

    def psi(self, x: Tensor) -> Tensor:
        return torch.log(torch.abs(self.c * x) + 1.0)

    def forward(self, positions: Tensor) -> Tensor:
        query = _shared_rows(positions).float()[:, :, None]  # (B', T, 1)
        distance = _distance(positions).float()  # (B', T, T)
        threshold = torch.abs(self.L_multiplier * self.L_init)
        normalized = self.psi(distance) / (self.psi(torch.maximum(query, threshold)) + self.EPS)
        return self.mlp(normalized[..., None]).permute(0, 3, 1, 2)  # (B', H, T, T)


@POSITIONS.register("fire")
class Fire(PositionalEncoding):
    """FIRE: one small MLP per attention layer over the normalized log distance."""

    name = "fire"

    def __init__(self, config, n_layers):
        super().__init__(config, n_layers)
        self.layers = nn.ModuleList(FireBias(self.n_heads) for _ in range(n_layers))

    def bias(self, layer, positions):
        return self.layers[layer](positions)


@POSITIONS.register("coupling_relative")
class CouplingRelative(PositionalEncoding):
    """Coupled ids read as relative positions (our variant of position coupling, not the paper's).

    The paper feeds coupled ids to a learned absolute table. At d = 64 that table fails beyond
    ~12 digits: two ids further apart than the training length never share a training sequence,
    so nothing pushes their attention score down, and at 30 digits a query drifts to far digits
    (see lengthgen-addition's notes). Here the ids enter only through a per-head bias on the
    signed id difference key - query: learned for each difference in -CLIP..CLIP, and beyond
    that the bias at the clip minus a learned per-head slope per extra id (ALiBi's rule; slope
    through softplus, 1 at init). Every difference a long test produces thus gets a trained value
    or a penalty that only grows, whatever the length. Signed, not causal-clamped as in t5_bias:
    an answer digit reads the operand digits one significance above it, whose ids are larger.

    Two-level ids (multi-operand addition, multiplication) add a learned table per level, as
    `coupling` does; the distance is taken over significance only. Three-field ids (multiplication's
    partial-products scratchpad, coupled_ids) give a bias per significance field, the same learned
    function of the difference for both, each between two tokens that both carry that field (0 means
    none: a sum's digit has no place in a, a's digit none in the sums)."""

    name = "coupling_relative"
    uses_task_ids = True
    task_ids = "coupling"
    CLIP = 4
    SLOPE_AT_INIT = 1.0

    def __init__(self, config, n_layers):
        super().__init__(config, n_layers)
        self.tables = nn.ModuleList(Embedding(2 * self.CLIP + 1, self.n_heads) for _ in range(n_layers))
        raw_slope = math.log(math.expm1(self.SLOPE_AT_INIT))  # softplus(raw_slope) = SLOPE_AT_INIT
        self.slopes = nn.Parameter(torch.full((n_layers, self.n_heads), raw_slope))
        self.levels = Embedding(MAX_LEVELS, config.d_model)

    def embed(self, positions: Tensor) -> Tensor | None:
        _, level, _ = unpack(positions)
        if int(level.max()) == 0:
            return None  # single-level ids: the ids act through the bias alone
        return self.levels(level)

    def bias(self, layer, positions):
        rows = _shared_rows(positions)
        significance, _, shifted = unpack(rows)
        if int(rows.max()) < SHIFT_STRIDE:  # no third id: significance alone, between every pair
            return self.distance_bias(layer, significance)
        return self.distance_bias(layer, significance, both_carry=True) + \
            self.distance_bias(layer, shifted, both_carry=True)

    def distance_bias(self, layer: int, ids: Tensor, both_carry: bool = False) -> Tensor:
        """(B', H, T, T) bias of the signed id difference key - query; with both_carry, zero unless the
        query and the key both carry an id (> 0)."""
        difference = ids[:, None, :] - ids[:, :, None]  # (B', query, key): key - query
        near = self.tables[layer](difference.clamp(-self.CLIP, self.CLIP) + self.CLIP).permute(0, 3, 1, 2)
        beyond = (difference.abs() - self.CLIP).clamp(min=0).float()[:, None]  # (B', 1, T, T)
        bias = near - nn.functional.softplus(self.slopes[layer])[None, :, None, None] * beyond
        if both_carry:
            bias = bias * ((ids[:, :, None] > 0) & (ids[:, None, :] > 0))[:, None]
        return bias
