"""The argument checks every in-context estimator shares: a context (xs, ys), counts, and positive numbers."""
from __future__ import annotations

import math

import torch
from torch import Tensor

from ..errors import check


def context(xs: Tensor, ys: Tensor) -> tuple[Tensor, Tensor, torch.dtype]:
    """Check xs (B, k, d) and ys (B, k); return both in float64 and the dtype to answer in."""
    check(isinstance(xs, Tensor) and xs.dim() == 3 and min(xs.shape) >= 1, "xs",
          tuple(xs.shape) if isinstance(xs, Tensor) else type(xs).__name__, "a non-empty (B, k, d) tensor")
    check(isinstance(ys, Tensor) and tuple(ys.shape) == tuple(xs.shape[:2]), "ys",
          tuple(ys.shape) if isinstance(ys, Tensor) else type(ys).__name__,
          f"a (B, k) tensor matching xs: {tuple(xs.shape[:2])}")
    check(bool(torch.isfinite(xs).all()), "xs", "non-finite entries", "finite numbers")
    check(bool(torch.isfinite(ys).all()), "ys", "non-finite entries", "finite numbers")
    floating = [t.dtype for t in (xs, ys) if t.is_floating_point()]
    dtype = torch.promote_types(*floating) if len(floating) == 2 else (floating or [torch.float32])[0]
    return xs.to(torch.float64), ys.to(torch.float64), dtype


def count(value, field: str, minimum: int = 1) -> int:
    check(isinstance(value, int) and not isinstance(value, bool) and value >= minimum, field, value,
          f"expected an integer >= {minimum}")
    return value


def positive(value, field: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    check(ok, field, value, "a finite number > 0")
    return float(value)
