"""Summaries of stored runs for the command line, the dashboard and notebooks."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .probes.sparsity import NEURON_ACTIVITY
from .store import METRIC_COLUMNS, Run


def _model_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """The model-level rows: layer, head and length not set."""
    return metrics[(metrics.layer == -1) & (metrics["head"] == -1) & (metrics.length == -1)]


def final_values(metrics: pd.DataFrame) -> dict[str, float]:
    """The last value of every model-level metric (layer, head and length not set)."""
    scalar = _model_rows(metrics)
    if scalar.empty:
        return {}
    return {k: float(v) for k, v in scalar.sort_values("step").groupby("probe")["value"].last().items()}


def model_series(metrics: pd.DataFrame, probe: str) -> pd.Series:
    """step -> a model-level metric (loss, exact match, ...) as it was recorded over training."""
    rows = _model_rows(metrics)
    return rows[rows.probe == probe].set_index("step")["value"].sort_index()


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


def exact_match_by_length_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """Every exact-match reading taken at one test length (length -1 marks readings over the training mix)."""
    return metrics[(metrics.probe == "exact_match") & (metrics.length >= 1)]


def length_table(metrics: pd.DataFrame) -> dict[int, float]:
    rows = exact_match_by_length_rows(metrics)
    if rows.empty:
        return {}
    latest = rows.sort_values("step", kind="stable").groupby("length")["value"].last()  # the last evaluated wins
    return {int(k): float(v) for k, v in latest.items()}


def recipe_length_table(run: Run) -> dict[int, float]:
    """Exact match per test length as the run's own training measured it: the lengths its config asks
    for (task.eval_lengths; every length evaluated if it names none), the first reading of each at the
    last step. `workbench eval-length` appends later readings to the run's metrics, and length_table
    lets the last one win; an experiment that reuses a run must not mix a later reading into its result."""
    rows = exact_match_by_length_rows(run.metrics())
    if rows.empty:
        return {}
    rows = rows[rows.step == rows.step.max()]
    asked = run.config().task.eval_lengths
    if asked:
        rows = rows[rows.length.isin(asked)]
    first = rows.groupby("length", sort=True)["value"].first()  # in the order written: training's own first
    return {int(k): float(v) for k, v in first.items()}


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
        "entropy_by_length": entropy_by_length_summary(metrics),
        "probes": probe_summaries(metrics), "snapshots": run.snapshot_steps(),
        "neuron_activity": neuron_activity_summary(run),
    }


def entropy_by_length_summary(metrics: pd.DataFrame) -> dict:
    """{"entropy": {length: {layer: nats}}, "entropy_normalized": ...} with string keys (JSON's), for the
    lengths a run was evaluated at with entropy ({} when none); answer_entropy(_normalized) where it was
    evaluated at the answer (`eval-length --entropy-at answer`)."""
    tables = {probe: entropy_layer_means(metrics, probe)
              for probe in ("entropy", "entropy_normalized", "answer_entropy", "answer_entropy_normalized")}
    return {probe: json_keys(table) for probe, table in tables.items() if table}


def json_keys(table: dict) -> dict:
    """The same nested dict with every key a string, as JSON writes it."""
    return {str(key): json_keys(value) if isinstance(value, dict) else value for key, value in table.items()}


def entropy_layer_means(rows, probe: str = "entropy") -> dict[int, dict[int, float]]:
    """{length: {layer: value}} from entropy-by-length rows (the layer means, not the heads); where a
    length was evaluated more than once, the latest step counts."""
    frame = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    frame = frame[(frame.probe == probe) & (frame.length >= 1) & (frame.layer >= 0) & (frame["head"] == -1)]
    latest = frame.sort_values("step", kind="stable").groupby(["length", "layer"])["value"].last()
    table: dict[int, dict[int, float]] = {}
    for (length, layer), value in latest.items():
        table.setdefault(int(length), {})[int(layer)] = float(value)
    return table

