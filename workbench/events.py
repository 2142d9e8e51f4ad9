"""Training events worth marking on a plot over steps: divergence and attention-entropy collapse.

Divergence is what the trainer records (status "diverged" and the step of the first non-finite
loss). Collapse is defined here, once, and the `entropy-collapse` experiment uses this rule too, so
the dashboard and the experiment mark the same step: the mean attention entropy (over layers)
falls below 10% of its first recorded value (Zhai et al. 2023, arXiv 2303.06296).
"""
from __future__ import annotations

import pandas as pd

from .reports import layer_mean

COLLAPSE_FRACTION = 0.1  # collapse: mean entropy below this share of its first recorded value


def mean_entropy(metrics: pd.DataFrame) -> pd.Series:
    """step -> attention entropy averaged over layers."""
    return layer_mean(metrics, "entropy")


def first_collapse(entropy: pd.Series, fraction: float = COLLAPSE_FRACTION) -> int | None:
    """The first step of `entropy` (step -> mean entropy) below `fraction` of its first value (None: never)."""
    if entropy.empty:
        return None
    below = entropy[entropy < fraction * entropy.iloc[0]]
    return int(below.index[0]) if len(below) else None


def collapse_step(metrics: pd.DataFrame, fraction: float = COLLAPSE_FRACTION) -> int | None:
    """The first step at which mean attention entropy < fraction x its first value (None: never)."""
    entropy = mean_entropy(metrics)
    if entropy.empty or entropy.iloc[0] <= 0:
        return None
    return first_collapse(entropy, fraction)


def training_events(run) -> dict[str, int]:
    """{label: step} of the events to mark, e.g. {"diverged": 130, "entropy collapse": 100}."""
    events = {}
    status = run.status()
    if status.get("status") == "diverged" and status.get("diverged_step") is not None:
        events["diverged"] = int(status["diverged_step"])
    collapsed = collapse_step(run.metrics())
    if collapsed is not None:
        events["entropy collapse"] = collapsed
    return events
