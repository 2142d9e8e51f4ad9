"""Exact match of a model on a task: in distribution and per test length (length generalization).

Exact match uses the teacher-forced argmax over every answer token, which for a whole-answer
match equals greedy decoding (the reference code of position coupling does the same).
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

EVAL_SEED = 1_000_003  # evaluation data never shares a stream with training data


@contextlib.contextmanager
def eval_mode(model):
    """The model in eval mode for the block, then back in the mode it was in (training may go on)."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def eval_generator(seed: int, length: int | None = None) -> torch.Generator:
    return torch.Generator().manual_seed(EVAL_SEED + 7919 * seed + (length or 0))


def answer_loss(logits, rows, targets, reduction: str = "mean"):
    """The loss on the answer positions (rows: flat indices into B * T, in row-major order, so the
    loss and gradients equal those of logits[loss_mask]): cross-entropy over the vocabulary, or
    the squared error where the targets are real numbers (a regression read-out, one output)."""
    flat = logits.flatten(0, 1).index_select(0, rows)
    if targets.is_floating_point():
        return F.mse_loss(flat.squeeze(-1), targets, reduction=reduction)
    return F.cross_entropy(flat, targets, reduction=reduction)


def answer_rows(batch):
    rows = batch.loss_mask.flatten().nonzero().squeeze(1)
    targets = batch.targets if batch.values is None else batch.values
    return rows, targets.flatten().index_select(0, rows)


@torch.no_grad()
def exact_match(model, task, n: int, generator: torch.Generator, length: int | None = None,
                chunk: int = 256, forward_batch: int | None = None) -> tuple[float, float]:
    """(exact-match rate, mean answer loss) on n fresh evaluation samples.

    The samples are drawn `chunk` at a time, which fixes the samples a stream gives; `forward_batch`
    only splits each draw's forward passes (for long inputs whose attention maps would not fit at
    once): the same samples, the same numbers."""
    hits, loss_sum, tokens = 0, 0.0, 0
    with eval_mode(model):
        for start in range(0, n, chunk):
            drawn = task.sample(min(chunk, n - start), generator, length=length, train=False)
            step = forward_batch or len(drawn)
            for first in range(0, len(drawn), step):
                batch = drawn.select(slice(first, first + step))
                logits = model(*batch.inputs())
                hits += int(task.score(task.predictions(logits), batch).sum())
                rows, targets = answer_rows(batch)
                loss_sum += float(answer_loss(logits, rows, targets, reduction="sum"))
                tokens += len(rows)
    return hits / n, loss_sum / max(tokens, 1)


def length_curve(model, task, lengths: list[int], n: int, seed: int) -> dict[int, float]:
    """Exact match per test length; each length has its own fixed evaluation stream."""
    return {int(L): exact_match(model, task, n, eval_generator(seed, int(L)), length=int(L))[0] for L in lengths}


def length_rows(curve: dict[int, float], step: int) -> list[dict]:
    return [{"step": step, "probe": "exact_match", "layer": -1, "head": -1, "length": L, "value": v}
            for L, v in curve.items()]


@torch.no_grad()
def token_accuracy(model, task, n: int, generator: torch.Generator, length: int | None = None,
                   chunk: int = 256) -> float:
    """Fraction of answer tokens (loss-mask positions) predicted right, teacher-forced: for MQAR,
    the per-query accuracy Zoology reports, where exact match would need every query right."""
    hits, tokens = 0, 0
    with eval_mode(model):
        for start in range(0, n, chunk):
            batch = task.sample(min(chunk, n - start), generator, length=length, train=False)
            predictions = task.predictions(model(*batch.inputs()))
            mask = batch.loss_mask
            hits += int((predictions[mask] == batch.targets[mask]).sum())
            tokens += int(mask.sum())
    return hits / max(tokens, 1)
