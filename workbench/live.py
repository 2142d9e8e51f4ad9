"""What the Train page's live view reads while a run trains in the background: the rows and the last
attention snapshot the trainer has written to the run store so far. Nothing is computed again here;
the trainer writes metrics at each evaluation and probe step (and about once a second), atomically,
so a read never sees half a file."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import pandas as pd

from .store import Run, data_root

# How often the Train page redraws the live view. Every redraw reads the store and rebuilds the loss
# figure on the dashboard's side of the same CPU the run trains on: at 1 s that cost the run ~15% of
# its CPU on a 2-core machine (benchmarks/live_view_cost.py), at 2 s about half of it.
REFRESH_SECONDS = 2.0


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


# The page polls once a second, but exact match changes only at an evaluation and the snapshot only at
# a probe step: their figures are built once per new value, not once a second (the grid alone costs
# ~70 ms of CPU, taken from the training run on a small machine).
@functools.lru_cache(maxsize=8)
def _exact_match_figure(steps: tuple[int, ...], values: tuple[float, ...]):
    from .figures.runs import exact_match_over_steps

    return exact_match_over_steps(pd.DataFrame({"step": steps, "value": values, "series": "exact match"}))


def exact_match_figure(live: LiveView):
    return _exact_match_figure(tuple(live.exact_match.step), tuple(live.exact_match.value))


@functools.lru_cache(maxsize=8)
def snapshot_figure(run_id: str, step: int):
    """(attention grid figure or None when the snapshot holds no maps, its tokens) of the snapshot at `step`."""
    from .figures.builders import attention_grid
    from .figures.runs import snapshot_patterns

    patterns, tokens, _ = snapshot_patterns(Run(data_root() / run_id), step)
    return (attention_grid(patterns, tokens) if patterns else None), tokens
