"""Figures of stored runs: each reads a Run (or several) and calls a builder."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..events import training_events
from ..reports import entropy_layer_means, length_table, neuron_activity, neuron_activity_steps
from .builders import (attention_grid, attention_map, entropy_by_length, length_curve, metric_over_steps,
                       neuron_activity_curves, share_axis)

PROBE_TITLES = {"entropy": "attention entropy (nats)", "entropy_normalized": "normalized attention entropy",
                "mlp_nonzero_fraction": "fraction of nonzero MLP activations", "loss": "training loss",
                "eval_loss": "evaluation loss", "exact_match": "exact match", "max_logit": "largest attention logit",
                "dead_neuron_fraction": "fraction of dead MLP neurons", "grad_norm": "gradient norm",
                "lr": "learning rate", "memorization_train_exact_match": "exact match on training samples",
                "memorization_fresh_exact_match": "exact match on fresh samples"}
# The order of views on the Dynamics page; probes not named here follow alphabetically.
PROBE_ORDER = ["loss", "eval_loss", "exact_match", "entropy", "entropy_normalized", "max_logit", "spectral_norm",
               "mlp_nonzero_fraction", "dead_neuron_fraction", "residual_max_abs", "residual_kurtosis",
               "memorization_train_exact_match", "memorization_fresh_exact_match", "grad_norm", "lr"]
LOG_PROBES = ("loss", "eval_loss", "grad_norm")
# Probes that are shares of something, always between 0 and 1
SHARE_PROBES = ("exact_match", "mlp_nonzero_fraction", "dead_neuron_fraction", "entropy_normalized",
                "noop_head_fraction", "attention_first_token", "attention_delimiters", "memorization_extraction",
                "memorization_train_exact_match", "memorization_fresh_exact_match", "memorization_table_exact_match")
MEMORIZATION_PROBES = {"memorization_train_exact_match": "training samples",
                       "memorization_fresh_exact_match": "fresh samples"}
LABEL_KEYS = ("run", "pos", "mixer", "task", "label")


# --- attention maps -------------------------------------------------------------------------------
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


def attention_patterns(run, step: int | None = None, example: int = 0, length: int | None = None,
                       offset: int | None = None) -> tuple[dict[int, object], list[str]]:
    """({layer: (H, T, T) array}, tokens): from the snapshot at `step` (its `example`-th probe example),
    or, when `length` is given, the final model on the `example`-th fresh sample of that length (its
    coupled ids starting at `offset` when one is given)."""
    if length is None:
        if offset is not None:
            raise ConfigError("--offset", offset, "moves the ids of a fresh sample; give --length too")
        patterns, tokens, _ = snapshot_patterns(run, step, example)
        return patterns, tokens
    if step is not None:
        raise ConfigError("--step", step, "a fresh sample (--length) is read by the final model; leave out --step")
    from ..analysis import run_sample_attention

    sample = run_sample_attention(run, length, example, offset)
    return sample.patterns, sample.tokens


def run_attention(run, layer: int = 0, head: int = 0, step: int | None = None, example: int = 0,
                  length: int | None = None, offset: int | None = None):
    patterns, tokens = attention_patterns(run, step, example, length, offset)
    if layer not in patterns:
        raise ConfigError("--layer", layer, f"choose one of: {', '.join(map(str, sorted(patterns)))}")
    heads = patterns[layer].shape[0]
    if not 0 <= head < heads:
        raise ConfigError("--head", head, f"choose one of: {', '.join(map(str, range(heads)))}")
    return attention_map(patterns[layer][head], tokens)


def run_attention_grid(run, step: int | None = None, example: int = 0, length: int | None = None,
                       offset: int | None = None):
    return attention_grid(*attention_patterns(run, step, example, length, offset))


# --- length generalization ------------------------------------------------------------------------
def train_length(config) -> int | None:
    from ..tasks import build_task

    return build_task(config.task.name, config.task.params).train_lengths()[1]


def run_names(runs: list) -> list[str]:
    """What a legend calls each run: its label, else its task, mixer, encoding and seed (a 12-character
    id says nothing to a reader); runs that would share a name get the start of their id added."""
    names = []
    for run in runs:
        config = run.config()
        names.append(run.status().get("label") or f"{config.task.name} · {config.model.layers or config.model.mixer}"
                     f" · {config.model.pos} · seed {config.train.seed}")
    shared = {name for name in names if names.count(name) > 1}
    return [f"{name} ({run.run_id[:6]})" if name in shared else name for name, run in zip(names, runs)]


def run_labels(runs: list, by: str = "run") -> list[str]:
    """A legend label per run; runs sharing a label (e.g. seeds of one encoding) form one band."""
    if by not in LABEL_KEYS:
        raise ConfigError("label", by, choices=LABEL_KEYS)
    if by == "run":
        return run_names(runs)
    labels = []
    for run in runs:
        config = run.config()
        labels.append({"pos": config.model.pos, "task": config.task.name,
                       "mixer": config.model.layers or config.model.mixer,
                       "label": run.status().get("label") or run.run_id}[by])
    return labels


def has_length_curve(run) -> bool:
    return bool(length_table(run.metrics()))


def runs_length_curve(runs: list, labels: list[str] | None = None):
    frames = []
    labels = labels or run_names(runs)
    for i, run in enumerate(runs):
        table = length_table(run.metrics())
        label = labels[i]
        frames.append(pd.DataFrame({"label": label, "length": list(table), "value": list(table.values())}))
    curves = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["label", "length", "value"])
    if curves.empty:
        raise ConfigError("run", ", ".join(r.run_id for r in runs),
                          "has no length curve (train with task.eval_lengths=... or run `workbench eval-length`)")
    return length_curve(curves, train_length(runs[0].config()) if runs else None)


def has_entropy_by_length(run) -> bool:
    return bool(entropy_layer_means(run.metrics()))


def run_entropy_by_length(run, normalized: bool = False):
    """Mean attention entropy per layer against test length, as evaluated after training (`workbench
    eval-length RUN --entropy`, or the Length generalization page), the longest trained length marked.
    Normalized divides by log(number of keys), so lengths compare on one 0-1 scale."""
    probe = "entropy_normalized" if normalized else "entropy"
    table = entropy_layer_means(run.metrics(), probe)
    if not table:
        raise ConfigError("run", run.run_id, "has no attention entropy by test length (evaluate it with "
                                             "`workbench eval-length RUN --lengths 5,10,20 --entropy`)")
    rows = [{"probe": probe, "layer": layer, "head": -1, "length": length, "value": value}
            for length, layers in table.items() for layer, value in layers.items()]
    fig = entropy_by_length(rows, probe, train_length(run.config()))
    return share_axis(fig, [r["value"] for r in rows]) if normalized else fig  # normalized entropy is a share


# --- probes over training -------------------------------------------------------------------------
def _over_steps(metrics: pd.DataFrame) -> pd.DataFrame:
    return metrics[metrics.length == -1]


def recorded_probes(run) -> list[str]:
    """Every probe the run recorded over steps, in the order the Dynamics page shows them."""
    names = set(_over_steps(run.metrics()).probe.unique())
    known = [name for name in PROBE_ORDER if name in names]
    return known + sorted(names - set(known))


def probe_series(metrics: pd.DataFrame, probe: str) -> pd.DataFrame:
    """The rows of one probe with a `series` column: per head if recorded per head, else per layer,
    else one line."""
    rows = _over_steps(metrics)
    rows = rows[rows.probe == probe]
    if (rows["head"] >= 0).any():
        rows = rows[rows["head"] >= 0]
        return rows.assign(series="L" + rows.layer.astype(str) + " H" + rows["head"].astype(str))
    if (rows.layer >= 0).any():
        rows = rows[rows.layer >= 0]
        return rows.assign(series="layer " + rows.layer.astype(str))
    return rows.assign(series=probe)


def run_metric(run, probe: str, by: str | None = None, events: dict[str, int] | None = None):
    """A probe over training steps, one line per head, layer or none (chosen from what was recorded);
    `events` (default: divergence and entropy collapse of the run) are marked."""
    metrics = run.metrics()
    if metrics[metrics.probe == probe].empty:
        raise ConfigError("probe", probe, f"not recorded in run {run.run_id}")
    rows = probe_series(metrics, probe)
    if by == "layer" and (rows["head"] >= 0).any():  # heads averaged per layer
        rows = (rows.groupby(["layer", "step"], as_index=False)["value"].mean()
                .assign(series=lambda r: "layer " + r.layer.astype(str)))
    events = training_events(run) if events is None else events
    return _probe_figure(rows, probe, markers=events)


def runs_metric(runs: list, probe: str, labels: list[str] | None = None):
    """One probe of several runs over steps, one line per run (layers and heads averaged)."""
    frames = []
    labels = labels or run_names(runs)
    for i, run in enumerate(runs):
        rows = probe_series(run.metrics(), probe)
        if rows.empty:
            continue
        mean = rows.groupby("step", as_index=False)["value"].mean()
        frames.append(mean.assign(series=labels[i]))
    if not frames:
        raise ConfigError("probe", probe, "not recorded in any of the chosen runs")
    return _probe_figure(pd.concat(frames, ignore_index=True), probe)


def _probe_figure(rows: pd.DataFrame, probe: str, markers: dict[str, int] | None = None):
    title = PROBE_TITLES.get(probe, probe)
    if "exact_match" in probe:  # exact match reads in percent everywhere, as on the length curves
        fig = metric_over_steps(rows.assign(value=rows.value * 100), title + " (%)", markers=markers)
        return fig.update_yaxes(range=[-3, 103])
    fig = metric_over_steps(rows, title, markers=markers, log_y=probe in LOG_PROBES)
    return share_axis(fig, rows.value) if probe in SHARE_PROBES else fig


def has_memorization(run) -> bool:
    return bool(set(run.metrics().probe.unique()) & set(MEMORIZATION_PROBES))


def run_memorization(run):
    """Exact match on training samples vs fresh samples over steps (falls back to exact match when
    the run recorded no memorization probe)."""
    metrics = _over_steps(run.metrics())
    rows = metrics[metrics.probe.isin(list(MEMORIZATION_PROBES)) & (metrics.layer == -1)]
    if rows.empty:
        return run_metric(run, "exact_match", events={})
    rows = rows.assign(series=rows.probe.map(MEMORIZATION_PROBES), value=rows.value * 100)
    fig = metric_over_steps(rows, "exact match (%)", markers=training_events(run))
    return fig.update_yaxes(range=[-3, 103])


# --- per-neuron activity --------------------------------------------------------------------------
ACTIVITY_LINES = 6  # steps drawn by default: more lines than this blur into one band


def spread_steps(steps: list[int], count: int = ACTIVITY_LINES) -> list[int]:
    """At most `count` of the steps, evenly spaced, always the first and the last."""
    if len(steps) <= count:
        return list(steps)
    picks = np.linspace(0, len(steps) - 1, count).round().astype(int)
    return [steps[i] for i in sorted(set(picks))]


def run_neuron_activity(run, steps: list[int] | None = None):
    """Each MLP neuron's firing share, most active first, per layer, at a few snapshot steps (default:
    up to ACTIVITY_LINES spread over training): the distribution behind the mean density."""
    available = neuron_activity_steps(run)
    if not available:
        raise ConfigError("run", run.run_id, "has no per-neuron activity snapshots "
                                             "(train with probes.sparsity=true and probes.snapshots=true)")
    steps = spread_steps(available) if steps is None else steps
    for step in steps:
        if step not in available:
            raise ConfigError("step", step, choices=available)
    curves: dict[int, dict[int, np.ndarray]] = {}
    for step in steps:
        for layer, shares in neuron_activity(run, step).items():
            curves.setdefault(layer, {})[step] = shares
    return neuron_activity_curves(curves)


def exact_match_over_steps(rows: pd.DataFrame):
    """Exact match (rows: step, value as a share, series) in percent over steps: the live view's figure."""
    return _probe_figure(rows, "exact_match")
