"""Training events worth marking on a plot over steps: divergence and attention-entropy collapse.

Divergence is what the trainer records (status "diverged" and the step of the first non-finite
loss). Collapse follows the entropy-collapse issue: the mean attention entropy (over layers and
heads) falls below a fraction (10%) of its starting value (Zhai et al. 2023, seed 002 #108).
"""
from __future__ import annotations

import pandas as pd

COLLAPSE_FRACTION = 0.1


def collapse_step(metrics: pd.DataFrame, fraction: float = COLLAPSE_FRACTION) -> int | None:
    """The first step at which mean attention entropy < fraction x its first recorded value."""
    rows = metrics[(metrics.probe == "entropy") & (metrics.layer >= 0) & (metrics["head"] >= 0)
                   & (metrics.length == -1)]
    if rows.empty:
        return None
    mean = rows.groupby("step")["value"].mean().sort_index()
    start = float(mean.iloc[0])
    if start <= 0:
        return None
    below = mean[mean < fraction * start]
    return int(below.index[0]) if len(below) else None


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
