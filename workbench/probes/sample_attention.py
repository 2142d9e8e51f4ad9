"""Attention-like maps of a finished model on one fresh evaluation sample of any test length.

Snapshots show the fixed probe examples at training steps; this shows the final model on a sample
it never saw, at the training length or beyond it, beside its answer: where a length-generalization
curve falls, these maps show what the heads read instead. The sample is drawn from the evaluation
stream of that length, not the training one, and the same index always gives the same sample.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import check
from ..evaluate import eval_generator, eval_mode

MAX_SAMPLE_INDEX = 10_000  # the samples before the chosen one are drawn too; this keeps that cheap


@dataclass
class SampleAttention:
    patterns: dict[int, np.ndarray]  # layer -> (heads, T, T), padding removed
    tokens: list[str]  # the input tokens, one symbol each
    prompt: str  # the input up to where the answer starts
    length: int  # the task length of the sample (digits, items, ...)
    answer: str  # the model's prediction at every answer position (teacher-forced argmax)
    target: str  # the right answer
    correct: bool  # exact match, as the length curve scores it
    ids: list[int] | None = None  # the position ids the task gave each token (None: the task gives none)


@torch.no_grad()
def sample_attention(model, task, length: int, index: int = 0, seed: int = 0, maps: bool = True,
                     offset: int | None = None) -> SampleAttention:
    """The model on the `index`-th evaluation sample of `length`; maps=False skips the T x T maps. With
    `offset`, the same sample with its coupled position ids starting there (`Task.at_offset`)."""
    check(length >= 1, "--length", length, "expected a test length >= 1")
    check(0 <= index < MAX_SAMPLE_INDEX, "--example", index, f"expected 0 to {MAX_SAMPLE_INDEX - 1}")
    if offset is not None:
        task = task.at_offset(offset, "--offset")
    batch = task.sample(index + 1, eval_generator(seed, length), length=length, train=False).select(slice(index, index + 1))
    with eval_mode(model):
        logits, cache = model.run_with_cache(*batch.inputs(),
                                             names=lambda name: maps and name.endswith("mixer.hook_pattern"))
    predictions = logits.argmax(-1)
    keep = batch.tokens[0] != 0  # padding is id 0, on the right
    size = int(keep.sum())
    patterns = {int(name.split(".")[1]): value[0, :, :size, :size].float().numpy() for name, value in cache.items()}
    mask = batch.loss_mask[0]
    first_answer = int(mask.nonzero()[0])  # the position whose next token is the answer's first
    return SampleAttention(patterns=dict(sorted(patterns.items())),
                           tokens=[task.vocab.symbols[int(t)] for t in batch.tokens[0][keep]],
                           prompt=task.decode(batch.tokens[0][:first_answer + 1]), length=int(length),
                           answer=task.decode(predictions[0][mask]), target=task.decode(batch.targets[0][mask]),
                           correct=bool(task.score(predictions, batch)[0]),
                           ids=None if batch.position_ids is None else batch.position_ids[0][keep].tolist())


def top_keys(sample: SampleAttention, query: int, layer: int = 0, k: int = 3) -> dict[int, list[tuple[str, float]]]:
    """{head: [("token@position", weight), ...]}: the k keys the `query`-th token attends to most in `layer`."""
    check(layer in sample.patterns, "layer", layer, f"choose one of: {', '.join(map(str, sorted(sample.patterns)))}")
    check(0 <= query < len(sample.tokens), "query", query, f"expected 0 to {len(sample.tokens) - 1}")
    rows = sample.patterns[layer][:, query, :query + 1]  # causal: keys up to the query
    return {head: [(f"{sample.tokens[key]}@{key}", round(float(row[key]), 3)) for key in np.argsort(row)[::-1][:k]]
            for head, row in enumerate(rows)}
