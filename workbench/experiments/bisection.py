"""Geometric bisection for the largest size a model still gets right (e.g. the largest table it
memorizes perfectly), from the sizes tried so far. Pure functions: the experiment that uses them
decides what "right" means and trains the sizes they ask for.

Bisection assumes that success is monotone in size. Trained models are not quite: with a fixed step
budget a model can fail a table and memorize a larger one. The bracket is therefore read from the
*smallest failure*: `low` is the largest success below it, `high` the smallest failure, and the largest
success anywhere (`largest_success`) is reported beside it; `monotone` says whether any success lies
above the smallest failure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Bracket:
    low: int  # the largest success below `high`; 0 when every size tried failed
    high: int | None  # the smallest failure; None when every size tried succeeded
    largest_success: int  # 0 when none
    monotone: bool  # no success above the smallest failure

    @property
    def closed(self) -> bool:
        return self.low > 0 and self.high is not None

    @property
    def ratio(self) -> float:
        return self.high / self.low if self.closed else math.inf

    @property
    def estimate(self) -> float | None:
        """The bracket's geometric midpoint, the capacity a closed bracket points to."""
        return math.sqrt(self.low * self.high) if self.closed else None


def bracket(tried: dict[int, bool]) -> Bracket:
    """tried: size -> success."""
    failures = sorted(size for size, ok in tried.items() if not ok)
    successes = sorted(size for size, ok in tried.items() if ok)
    high = failures[0] if failures else None
    below = [size for size in successes if high is None or size < high]
    return Bracket(below[-1] if below else 0, high, successes[-1] if successes else 0,
                   not (high is not None and successes and successes[-1] > high))


def next_size(tried: dict[int, bool], precision: float, floor: int, ceiling: int, step: int = 4) -> int | None:
    """The size to try next, or None when the bracket is within `precision` (high / low) or cannot move.

    An open bracket widens by `step` (down to `floor` when everything failed, up to `ceiling` when
    everything succeeded); a closed one is split at its geometric midpoint."""
    b = bracket(tried)
    if b.high is None:
        size = min(max(b.low, 1) * step, ceiling)
    elif b.low == 0:
        size = max(b.high // step, floor)
    elif b.ratio <= precision:
        return None
    else:
        size = round(math.sqrt(b.low * b.high))
    return None if size in tried else size
