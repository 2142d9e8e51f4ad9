"""Memorization: training data vs fresh data, extraction from a prefix, capacity of the `memorize` task
(Niu et al. 2024, arXiv 2405.08707; Mahdavi et al. 2024, arXiv 2306.02010; Kajitsuka & Sato 2024,
arXiv 2307.14023).

The memorization probe needs data the trainer does not hand to probes, so it takes the task and the
config from its ProbeContext and replays the *first training batch* (the trainer draws it from
torch.Generator().manual_seed(train.seed), so these are samples the model has trained on, with
random labels if the run uses them). Fresh samples come from a stream training never touches.
Rows (model-level, layer -1):
- `memorization_train_exact_match`, `memorization_fresh_exact_match` and their gap;
- `memorization_extraction`: the share of training samples whose whole answer comes back from
  greedy decoding of their prompt alone;
- `memorization_table_exact_match` (memorize task): the share of the whole table recalled exactly.
"""
from __future__ import annotations

import math

import torch

from ..tasks.labels import randomize_labels
from .registry import Probe, ProbeResult, register_probe, row

FRESH_SEED = 3_000_017  # the fresh-sample stream: shared with neither training nor evaluation
TABLE_CHUNK = 1024


def training_sample(task, config, n: int):
    """The first n samples of the first training batch, exactly as the trainer drew them."""
    batch = task.sample(config.train.batch_size, torch.Generator().manual_seed(config.train.seed))
    if config.task.random_labels:
        batch = randomize_labels(batch, len(task.vocab), config.train.seed)
    return batch.select(torch.arange(min(n, len(batch))))


def fresh_sample(task, config, n: int):
    batch = task.sample(n, torch.Generator().manual_seed(FRESH_SEED + config.train.seed))
    if config.task.random_labels:
        batch = randomize_labels(batch, len(task.vocab), config.train.seed)
    return batch


@torch.no_grad()
def teacher_forced_match(model, batch) -> torch.Tensor:
    """(B,) bool: every answer token is the argmax given the true prefix."""
    predictions = model(*batch.inputs()).argmax(-1)
    return ~((predictions != batch.targets) & batch.loss_mask).any(1)


@torch.no_grad()
def greedy_extraction(model, batch) -> torch.Tensor:
    """(B,) bool: greedy decoding from each prompt writes the whole answer exactly.

    Answer tokens of the input are replaced by the model's own predictions, one position at a time,
    so nothing past the prompt is given away (causal attention: later tokens never matter)."""
    tokens = batch.tokens.clone()
    answer_starts = batch.loss_mask.float().argmax(1)
    start = int(answer_starts[batch.loss_mask.any(1)].min()) if batch.loss_mask.any() else tokens.shape[1]
    predictions = torch.zeros_like(batch.targets)
    for t in range(start, tokens.shape[1]):
        step = model(tokens[:, :t + 1], None if batch.position_ids is None else batch.position_ids[:, :t + 1])
        predictions[:, t] = step[:, t].argmax(-1)
        if t + 1 < tokens.shape[1]:
            fed = batch.loss_mask[:, t]  # the next input token is an answer token: feed the guess
            tokens[:, t + 1] = torch.where(fed, predictions[:, t], tokens[:, t + 1])
    return ~((predictions != batch.targets) & batch.loss_mask).any(1)


def table_exact_match(model, task) -> float:
    """The share of a memorize task's table recalled exactly."""
    table = task.table()
    hits = 0
    for start in range(0, len(table), TABLE_CHUNK):
        part = table.select(torch.arange(start, min(start + TABLE_CHUNK, len(table))))
        hits += int(teacher_forced_match(model, part).sum())
    return hits / len(table)


def table_bits(params) -> float:
    """Information in a memorize table: every value symbol is uniform over n_values."""
    return params.table_size * params.value_length * math.log2(params.n_values)


def memorization_capacity(results: list[dict]) -> dict:
    """Largest table memorized perfectly and bits per parameter, for one model shape.

    results: dicts with table_size, accuracy (share of the table recalled), bits, n_parameters."""
    perfect = [r for r in results if r["accuracy"] >= 1.0]
    if not perfect:
        return {"largest_perfect_table": 0, "bits": 0.0, "bits_per_parameter": 0.0}
    best = max(perfect, key=lambda r: r["table_size"])
    return {"largest_perfect_table": int(best["table_size"]), "bits": float(best["bits"]),
            "bits_per_parameter": float(best["bits"]) / best["n_parameters"]}


@register_probe("memorization")
class Memorization(Probe):
    tokens_only = True

    def __call__(self, model, batch, cache) -> ProbeResult:
        if self.context is None:
            raise ValueError("the memorization probe needs the task and config: run it from the trainer "
                             "or pass context=ProbeContext(task, config) to run_probes")
        task, config = self.context.task, self.context.config
        n = max(len(batch), 1)
        seen, fresh = training_sample(task, config, n), fresh_sample(task, config, n)
        train_match = float(teacher_forced_match(model, seen).float().mean())
        fresh_match = float(teacher_forced_match(model, fresh).float().mean())
        rows = [row("memorization_train_exact_match", train_match),
                row("memorization_fresh_exact_match", fresh_match),
                row("memorization_gap", train_match - fresh_match),
                row("memorization_extraction", greedy_extraction(model, seen).float().mean())]
        if hasattr(task, "table"):
            rows.append(row("memorization_table_exact_match", table_exact_match(model, task)))
        return ProbeResult(rows)
