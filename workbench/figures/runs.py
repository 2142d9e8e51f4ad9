"""Figures of stored runs: each reads a Run (or several) and calls a builder."""
from __future__ import annotations

import pandas as pd

from ..errors import ConfigError
from ..reports import length_table
from .builders import attention_grid, attention_map, length_curve, metric_over_steps

PROBE_TITLES = {"entropy": "attention entropy (nats)", "entropy_normalized": "normalized attention entropy",
                "mlp_nonzero_fraction": "fraction of nonzero MLP activations", "loss": "training loss",
                "exact_match": "exact match", "max_logit": "largest attention logit"}


def snapshot_patterns(run, step: int | None = None, example: int = 0) -> tuple[dict[int, object], list[str], int]:
    """({layer: (H, T, T) array}, tokens, step) from a run's snapshot (the last one by default)."""
    steps = run.snapshot_steps()
    if not steps:
        raise ConfigError("run", run.run_id, "has no attention snapshots (train with probes.snapshots=true)")
    step = steps[-1] if step is None else step
    arrays, metadata = run.snapshot(step)
    tokens = metadata.get("tokens", [[]])[example]
    patterns = {int(k.split(".")[1]): v[example].numpy() for k, v in arrays.items() if k.startswith("pattern.")}
    T = len(tokens)
    return {layer: p[:, :T, :T] for layer, p in patterns.items()}, tokens, step


def run_attention(run, layer: int = 0, head: int = 0, step: int | None = None, example: int = 0):
    patterns, tokens, step = snapshot_patterns(run, step, example)
    if layer not in patterns:
        raise ConfigError("--layer", layer, f"choose one of: {', '.join(map(str, sorted(patterns)))}")
    heads = patterns[layer].shape[0]
    if not 0 <= head < heads:
        raise ConfigError("--head", head, f"choose one of: {', '.join(map(str, range(heads)))}")
    return attention_map(patterns[layer][head], tokens)


def run_attention_grid(run, step: int | None = None, example: int = 0):
    patterns, tokens, _ = snapshot_patterns(run, step, example)
    return attention_grid(patterns, tokens)


def train_length(config) -> int | None:
    from ..tasks import build_task

    return build_task(config.task.name, config.task.params).train_lengths()[1]


def runs_length_curve(runs: list, labels: list[str] | None = None):
    frames = []
    for i, run in enumerate(runs):
        table = length_table(run.metrics())
        label = labels[i] if labels else run.run_id
        frames.append(pd.DataFrame({"label": label, "length": list(table), "value": list(table.values())}))
    curves = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["label", "length", "value"])
    return length_curve(curves, train_length(runs[0].config()) if runs else None)


def run_metric(run, probe: str, by: str = "layer"):
    """A probe over training steps, one line per layer (or head within layers)."""
    metrics = run.metrics()
    rows = metrics[metrics.probe == probe]
    if rows.empty:
        raise ConfigError("probe", probe, f"not recorded in run {run.run_id}")
    if by == "head":
        rows = rows[rows["head"] >= 0].assign(series=lambda r: "L" + r.layer.astype(str) + " H" + r["head"].astype(str))
    elif (rows.layer >= 0).any():
        rows = rows[(rows.layer >= 0) & (rows["head"] == -1)].assign(series=lambda r: "layer " + r.layer.astype(str))
    else:
        rows = rows.assign(series=probe)
    markers = {}
    status = run.status()
    if status.get("status") == "diverged":
        markers["diverged"] = status.get("diverged_step")
    return metric_over_steps(rows, PROBE_TITLES.get(probe, probe), markers=markers,
                             log_y=probe == "loss")
