"""Error against the number of in-context examples: a trained model's curve and the closed-form
baselines' curves, on the very same sequences, as tidy rows a figure or a table reads.

A causal model predicts every query of a sequence in one forward pass, and its prediction at query
i has seen i examples; so one batch of sequences with k examples gives the whole curve 0..k-1.
"""
from __future__ import annotations

import pandas as pd
import torch

from ..evaluate import eval_mode
from .baselines import BASELINES, baselines_for, squared_error_curve

CHUNK = 512


@torch.no_grad()
def model_curve(model, task, batch) -> torch.Tensor:
    """(k,) the model's mean squared error / d at each query of `batch` (regression tasks), or its
    mean error rate (Boolean tasks: 1 - accuracy), so lower is better either way."""
    return _mean_errors(task, batch, lambda part: [model(*part.inputs())], model)[0]


@torch.no_grad()
def readout_curves(model, task, batch, last: int) -> torch.Tensor:
    """(last, k): model_curve after each of the model's last `last` blocks applied, in one forward pass
    (a looped model run at `loops` loops: its curve after loop loops - last + 1, ..., loops)."""
    return _mean_errors(task, batch, lambda part: model.readouts(*part.inputs(), last=last), model)


def _mean_errors(task, batch, readouts, model) -> torch.Tensor:
    """(readouts, k) the mean error per query of each read-out that `readouts(part)` returns, over the
    batch in chunks."""
    total = None
    with eval_mode(model):
        for start in range(0, len(batch), CHUNK):
            part = batch.select(slice(start, start + CHUNK))
            errors = torch.stack([_errors(task, task.predictions(logits), part).sum(0)
                                  for logits in readouts(part)])
            total = errors if total is None else total + errors
    return total / len(batch)


def _errors(task, predictions, part) -> torch.Tensor:
    if task.output == "regression":
        return task.squared_errors(predictions, part).double()
    return (~task.correct(predictions, part)).double()


def baseline_curves(task, batch, names: list[str] | None = None) -> dict[str, torch.Tensor]:
    """{name: (k,) mean squared error / the task's error scale (d for linear functions)} of the in-context
    estimators on `batch`'s examples (default: the task's own set, icl.baselines.baselines_for)."""
    xs, ys = task.examples(batch)
    chosen = names if names is not None else baselines_for(task.name)
    return {name: squared_error_curve(BASELINES[name](xs, ys), ys, task.error_scale) for name in chosen}


def curve_rows(curve: torch.Tensor, **labels) -> list[dict]:
    """Tidy rows: one per number of in-context examples (0 .. k-1)."""
    return [{**labels, "examples": i, "error": float(v)} for i, v in enumerate(curve)]


def baseline_frame(task, batch, names: list[str] | None = None) -> pd.DataFrame:
    rows = []
    for name, curve in baseline_curves(task, batch, names).items():
        rows += curve_rows(curve, model=name, kind="baseline")
    return pd.DataFrame(rows)


def accuracy_rows(accuracy: torch.Tensor, **labels) -> list[dict]:
    """curve_rows for an accuracy curve (Boolean tasks): the value's column is `accuracy`."""
    rows = curve_rows(accuracy, **labels)
    for row in rows:
        row["accuracy"] = row.pop("error")
    return rows


def learner_accuracy(task, batch, chosen: dict) -> dict[str, torch.Tensor]:
    """{name: (k,) accuracy per query} of Boolean learners ({name: learner(bits, labels)}) on `batch`."""
    bits, labels = (batch.vectors[:, 0::2] > 0).long(), task.labels(batch)
    return {name: (learn(bits, labels) == labels).double().mean(0) for name, learn in chosen.items()}
