"""Comparing runs: the config fields in which selected runs differ, as a table the Dynamics,
Attention and Length generalization pages show under their overlaid figures. Two runs that differ
in one field (the encoding, the mixer) are a controlled comparison; the table says whether they are."""
from __future__ import annotations

import json

import pandas as pd


def flat_config(config: dict, prefix: str = "") -> dict[str, object]:
    """{'model.d_model': 64, 'task.params.max_digits': 10, ...}: nested config sections as dotted
    names, the way `--set` overrides spell them."""
    flat = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flat_config(value, name + "."))
        else:
            flat[name] = value
    return flat


def _shown(value) -> str:
    if value is None:
        return "(not set)"  # a field one run's config lacks, e.g. a task parameter of another task
    return json.dumps(value) if isinstance(value, (list, dict, bool)) else str(value)


def config_differences(configs: list[dict], names: list[str]) -> pd.DataFrame:
    """One row per config field whose value is not the same in every config (`configs`: RunConfig.to_dict()
    of each run), one column per run named by `names`; empty (with those columns) when all agree."""
    flats = [flat_config(config) for config in configs]
    fields = list(dict.fromkeys(name for flat in flats for name in flat))  # first seen first: config order
    rows = [{"field": field, **{name: _shown(flat.get(field)) for name, flat in zip(names, flats)}}
            for field in fields if len({_shown(flat.get(field)) for flat in flats}) > 1]
    return pd.DataFrame(rows, columns=["field", *names])


def runs_differences(runs: list) -> pd.DataFrame:
    """config_differences of stored runs, each named as the figures' legends name it (label first)."""
    from .figures.runs import run_names

    return config_differences([run.config().to_dict() for run in runs], run_names(runs))


def shared_steps(step_lists: list[list[int]]) -> list[int]:
    """The steps a shared step slider offers: every step at which any of the runs kept a snapshot."""
    return sorted({step for steps in step_lists for step in steps})


def nearest_step(steps: list[int], wanted: int) -> int | None:
    """The run's snapshot step shown for a shared `wanted` step: the latest at or before it (the first
    when the run has none that early); None when the run kept no snapshots."""
    if not steps:
        return None
    earlier = [step for step in steps if step <= wanted]
    return max(earlier) if earlier else min(steps)
