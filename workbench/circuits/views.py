"""The circuits tools applied to a stored run, at its end or at a training snapshot: what the CLI
(`workbench patch`, `workbench heads`, `workbench lens`), the Circuits page, notebook 08 and figure
export all call, so the four faces show the same numbers.

A snapshot step needs the weights the run saved there (trained with probes.weights=true); `step=None`
is the final model.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..analysis import load_model as load_any_model
from ..errors import ConfigError
from ..evaluate import eval_generator
from .detectors import answer_induction_scores, model_head_scores, task_symbols
from .lens import direct_logit_attribution, logit_lens
from .pairs import Pairs, patching_pairs
from .patching import patching_sweep

# the metric names the `heads` probe records (each detector's name with "_score"), in the order the
# induction-heads table lists them
DETECTOR_PROBES = ("induction_score", "previous_token_score", "duplicate_token_score", "answer_induction_score")


@dataclass
class PatchingView:
    sweep: pd.DataFrame  # workbench.circuits.patching COLUMNS
    pairs: Pairs
    clean_tokens: list[str]  # the first pair, decoded, for axis labels
    corrupted_tokens: list[str]
    answer: str
    wrong: str


def run_patching(run, step: int | None = None, n: int = 32, seed: int = 0,
                 components=("resid_pre", "mixer_out", "mlp_out", "units"), unit_groups: int | None = 8) -> PatchingView:
    """Patch every (layer, position, component, unit) of the run's model on n clean/corrupted pairs of its task."""
    model, task = load_model(run, step=step)
    pairs = patching_pairs(task, n, seed)
    sweep = patching_sweep(model, pairs, components, unit_groups)
    return PatchingView(sweep, pairs, _symbols(task, pairs.clean[0]), _symbols(task, pairs.corrupted[0]),
                        task.vocab.symbols[int(pairs.answer[0])], task.vocab.symbols[int(pairs.wrong[0])])


def effect_at(sweep: pd.DataFrame, component: str, layer: int, position: int) -> float:
    """The fraction of the clean lead that patching `component` at (layer, position) recovers, summed
    over its units (heads or channel groups: patched one at a time, their effects add up when the
    units act independently)."""
    rows = sweep[(sweep.component == component) & (sweep.layer == layer) & (sweep.position == position)]
    return float(rows.effect.sum())


def run_heads(run, step: int | None = None, n: int = 64, seed: int = 0) -> pd.DataFrame:
    """Every detector's score for every (layer, unit): the three on repeated random sequences of the
    task's symbols and answer_induction on n of the task's own samples."""
    model, task = load_model(run, step=step)
    symbols = task_symbols(len(task.vocab))
    samples = task.sample(n, eval_generator(seed), train=False)
    return pd.concat([model_head_scores(model, symbols, seed=seed), answer_induction_scores(model, samples)],
                     ignore_index=True)


def heads_over_training(run) -> pd.DataFrame:
    """The `heads` probe's rows from the run's metrics: step, probe, layer, head, value (empty
    when the run was trained without probes.extra=heads)."""
    metrics = run.metrics()
    return metrics[metrics.probe.isin(DETECTOR_PROBES)].reset_index(drop=True)


def formation(run) -> dict[str, pd.Series]:
    """How the run learned, on one step axis: eval loss, exact match and the best score of each
    detector the `heads` probe recorded (over every layer and unit), each as step -> value."""
    from ..reports import model_series

    metrics = run.metrics()
    series = {"loss": model_series(metrics, "eval_loss"), "exact_match": model_series(metrics, "exact_match")}
    for probe in DETECTOR_PROBES:
        rows = metrics[metrics.probe == probe]
        series[probe.removesuffix("_score")] = rows.groupby("step")["value"].max().sort_index()
    return series


def jump_step(series: pd.Series) -> int | None:
    """The step that ends the largest rise between consecutive readings (None: fewer than two)."""
    if len(series) < 2:
        return None
    return int(series.diff().iloc[1:].idxmax())


def formation_rows(history: dict[str, pd.Series], **labels) -> list[dict]:
    """A formation() history as tidy rows {**labels, metric, step, value} (the table of the
    induction_over_training figure)."""
    return [{**labels, "metric": metric, "step": int(step), "value": float(value)}
            for metric, values in history.items() for step, value in values.items()]


def formation_table(run, **labels) -> pd.DataFrame:
    """formation(run) as a DataFrame, for figures.circuits.induction_over_training."""
    return pd.DataFrame(formation_rows(formation(run), **labels))


def run_lens(run, step: int | None = None, n: int = 32, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(logit lens, direct logit attribution) of the answer against the corrupted pairs' answer,
    on n clean prompts of the run's task."""
    model, task = load_model(run, step=step)
    pairs = patching_pairs(task, n, seed)
    args = (model, pairs.clean, pairs.answer_position, pairs.answer, pairs.wrong)
    return (logit_lens(*args, position_ids=pairs.position_ids),
            direct_logit_attribution(*args, position_ids=pairs.position_ids))


def load_model(run, step: int | None = None):
    """The run's model and task, refused clearly for a task whose tokens are real-valued vectors:
    patching pairs, detectors and the lens all work on token ids and the vocabulary's logits."""
    model, task = load_any_model(run, step=step)
    if task.input_dim:
        raise ConfigError("run", run.run_id, f"trains {task.name}, whose inputs are real-valued vectors; the "
                          "circuits tools (patch, heads, lens) need a token task")
    return model, task


def _symbols(task, ids) -> list[str]:
    return [task.vocab.symbols[int(i)] for i in ids]
