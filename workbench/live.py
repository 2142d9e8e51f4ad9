"""What the Train page's live view reads while a run trains in the background: the rows and the last
attention snapshot the trainer has written to the run store so far. Nothing is computed again here;
the trainer writes metrics at each evaluation and probe step (and about once a second), atomically,
so a read never sees half a file."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .store import Run, data_root


@dataclass
class LiveView:
    step: int  # the training step of the latest stored row (-1: none yet)
    exact_match: pd.DataFrame  # step, value, series: exact match on fresh samples at the training lengths
    snapshot_step: int | None  # the latest attention snapshot, None before the first


def live_view(run_id: str) -> LiveView:
    run = Run(data_root() / run_id)
    metrics = run.metrics()
    exact = metrics[(metrics.probe == "exact_match") & (metrics.length == -1)][["step", "value"]]
    steps = run.snapshot_steps()
    return LiveView(int(metrics.step.max()) if len(metrics) else -1,
                    exact.assign(series="exact match").sort_values("step"), steps[-1] if steps else None)
