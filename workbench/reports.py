"""Summaries of stored runs for the command line, the dashboard and notebooks."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .evaluate import length_curve, length_rows
from .probes.sparsity import NEURON_ACTIVITY
from .store import Run, open_run


def final_values(metrics: pd.DataFrame) -> dict[str, float]:
    """The last value of every model-level metric (layer, head and length not set)."""
    scalar = metrics[(metrics.layer == -1) & (metrics["head"] == -1) & (metrics.length == -1)]
    if scalar.empty:
        return {}
    return {k: float(v) for k, v in scalar.sort_values("step").groupby("probe")["value"].last().items()}


def layer_rows(metrics: pd.DataFrame, probe: str | None = None) -> pd.DataFrame:
    """The per-layer rows (layer set; head and length not), of one probe or of all."""
    rows = metrics[(metrics.layer >= 0) & (metrics["head"] == -1) & (metrics.length == -1)]
    return rows if probe is None else rows[rows.probe == probe]


def layer_mean(metrics: pd.DataFrame, probe: str) -> pd.Series:
    """step -> the probe's value averaged over layers."""
    return layer_rows(metrics, probe).groupby("step")["value"].mean().sort_index()


def probe_summaries(metrics: pd.DataFrame) -> dict[str, dict]:
    """Per probe: the first and last value averaged over layers (and heads), and the last per layer."""
    summaries = {}
    for probe, rows in layer_rows(metrics).groupby("probe"):
        by_step = rows.groupby("step")["value"].mean().sort_index()
        last_step = rows[rows.step == rows.step.max()]
        summaries[probe] = {"first": float(by_step.iloc[0]), "last": float(by_step.iloc[-1]),
                            "min": float(by_step.min()), "max": float(by_step.max()),
                            "last_per_layer": {int(r.layer): float(r.value) for r in last_step.itertuples()}}
    return summaries


# --- per-neuron activity (the sparsity probe's snapshot arrays) -----------------------------------
# Each array is one layer's neurons, each the share of the probe batch's tokens it fires on, most
# active first; its mean is the layer's mlp_nonzero_fraction.
ACTIVITY_QUANTILES = {"q10": 0.1, "median": 0.5, "q90": 0.9}


def neuron_activity_steps(run: Run) -> list[int]:
    """The snapshot steps that hold per-neuron activity: those where the sparsity probe ran too."""
    metrics = run.metrics()
    probed = set(metrics.loc[metrics.probe == "mlp_nonzero_fraction", "step"].tolist())
    return [step for step in run.snapshot_steps() if step in probed]


def neuron_activity(run: Run, step: int) -> dict[int, np.ndarray]:
    """{layer: each neuron's firing share, most active first} at one snapshot step."""
    arrays, _ = run.snapshot(step)
    return {int(name.removeprefix(NEURON_ACTIVITY)): array.numpy() for name, array in arrays.items()
            if name.startswith(NEURON_ACTIVITY)}


def neuron_activity_summary(run: Run) -> dict:
    """Quantiles of the per-neuron firing share per layer at the first and the last snapshot step
    ({} when the run stored none): how the distribution behind the mean density moved."""
    steps = neuron_activity_steps(run)
    if not steps:
        return {}
    ends = {"first": steps[0], "last": steps[-1]}
    per_layer: dict[str, dict] = {}
    for end, step in ends.items():
        for layer, shares in neuron_activity(run, step).items():
            per_layer.setdefault(str(layer), {})[end] = {
                name: float(np.quantile(shares, q)) for name, q in ACTIVITY_QUANTILES.items()}
    return {"steps": ends, "per_layer": per_layer}


def length_table(metrics: pd.DataFrame) -> dict[int, float]:
    rows = metrics[(metrics.probe == "exact_match") & (metrics.length >= 1)]
    if rows.empty:
        return {}
    latest = rows.sort_values("step").groupby("length")["value"].last()
    return {int(k): float(v) for k, v in latest.items()}


def run_summary(run: Run) -> dict:
    config = run.config()
    metrics = run.metrics()
    status = run.status()
    return {
        "run_id": run.run_id, "status": status.get("status"), "step": status.get("step"),
        "elapsed_s": status.get("elapsed_s"), "diverged_step": status.get("diverged_step"),
        "n_parameters": status.get("n_parameters"), "demo": run.read_only,
        "config": config.to_dict(), "final": final_values(metrics),
        "length_curve": {str(k): v for k, v in length_table(metrics).items()},
        "probes": probe_summaries(metrics), "snapshots": run.snapshot_steps(),
        "neuron_activity": neuron_activity_summary(run),
    }


@dataclass
class FinishedRun:
    """A stored run loaded for evaluation: the model in eval mode, its task and config, the step."""

    run: Run
    model: object
    task: object
    config: object
    step: int

    def store(self, rows: list[dict]) -> None:
        """Append metric rows, unless the run is a read-only demo run."""
        if not self.run.read_only:
            self.run.append_metrics(rows)


def load_for_evaluation(run_id: str, lengths: list[int], n: int) -> FinishedRun:
    """Check the evaluation request (named like the CLI flags), then load the run."""
    from .errors import check

    check(n >= 1, "--n", n, "expected at least 1 sample per length")
    for length in lengths:
        check(length >= 1, "--lengths", length, "expected lengths >= 1")
    run = open_run(run_id)
    model, task = run.load_model()
    config = run.config()
    return FinishedRun(run, model, task, config, int(run.status().get("step", config.train.steps)))


def eval_lengths(run_id: str, lengths: list[int], n: int = 512) -> dict[int, float]:
    """Exact match per test length for a finished run; stored as metrics unless the run is a demo."""
    finished = load_for_evaluation(run_id, lengths, n)
    curve = length_curve(finished.model, finished.task, lengths, n, finished.config.train.seed)
    finished.store(length_rows(curve, finished.step))
    return curve


def nan_to_none(value):
    return None if isinstance(value, float) and math.isnan(value) else value
