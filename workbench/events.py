"""Training events worth marking on a plot over steps: divergence and attention-entropy collapse.

Divergence is what the trainer records (status "diverged" and the step of the first non-finite
loss). Collapse is the rule of the `entropy-collapse` experiment, reused here so the dashboard
and the experiment mark the same step: the mean attention entropy (over layers) falls below 10%
of its first recorded value (Zhai et al. 2023, arXiv 2303.06296).
"""
from __future__ import annotations

import pandas as pd

from .reports import layer_mean

COLLAPSE_FRACTION = 0.1  # as in experiments/inside/entropy_collapse.py; a test checks the two agree


def mean_entropy(metrics: pd.DataFrame) -> pd.Series:
    """step -> attention entropy averaged over layers."""
    return layer_mean(metrics, "entropy")


def collapse_step(metrics: pd.DataFrame, fraction: float = COLLAPSE_FRACTION) -> int | None:
    """The first step at which mean attention entropy < fraction x its first value (None: never)."""
    from .experiments.inside.entropy_collapse import collapse_step as first_collapse  # late: experiments import figures

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
