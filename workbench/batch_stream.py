"""Training batches drawn one step ahead on a worker thread, so data generation leaves the hot path.

While the model runs step k (PyTorch releases the GIL inside its kernels and the backward pass),
the worker draws batch k + 1 from the run's data generator. The batches and their order are
exactly those of drawing in the loop: one worker draws them one after another from the same
generator. A checkpoint must resume at the first batch not yet trained on, so `resume_state()`
gives the generator state from *before* the batch waiting in the queue was drawn.

The worker also prepares what the loss needs (the flat indices of the loss positions and their
targets), so the loop's step is the model, the loss and the optimizer only.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor

from .evaluate import answer_loss, answer_rows
from .tasks.base import Batch


@dataclass
class TrainingBatch:
    batch: Batch
    loss_rows: Tensor  # flat (B * T) indices of the positions in the loss, in row-major order
    loss_targets: Tensor  # their targets: batch.targets[batch.loss_mask] (batch.values for regression)
    # A batch mixing a few primed (long) rows into short ones trains the two groups as micro-batches of
    # their own width, so 2% of long rows do not pad the other 98% to their length; so does a batch cut
    # into length buckets (train.length_buckets); empty otherwise.
    parts: list["TrainingBatch"] = field(default_factory=list)


def prepare(batch: Batch, length_buckets: int = 1) -> TrainingBatch:
    """What the loss needs; with length_buckets > 1, the rows sorted by length (stably) and cut into that
    many micro-batches, each trimmed to its longest row, so short rows are not padded to the longest."""
    primed = batch.meta.get("primed")
    parts = []
    if primed is not None and bool(primed.any()) and not bool(primed.all()):
        parts = [prepare(batch.select(rows).trimmed()) for rows in (~primed, primed)]
    elif length_buckets > 1 and len(batch) > 1:
        lengths = (batch.tokens != 0).int().cumsum(1).argmax(1)  # the last real token of each row
        order = torch.sort(lengths, stable=True).indices
        parts = [prepare(batch.select(rows).trimmed()) for rows in order.chunk(length_buckets)]
    return TrainingBatch(batch, *answer_rows(batch), parts)


def training_loss(model, prepared: TrainingBatch) -> Tensor:
    """The mean loss over the batch's answer positions; with parts, their summed losses over the same
    count, which is the same loss and gradient up to the order of the sums."""
    if not prepared.parts:
        return _readouts_loss(model, prepared.batch, prepared.loss_rows, prepared.loss_targets)
    total = sum(_readouts_loss(model, part.batch, part.loss_rows, part.loss_targets, reduction="sum")
                for part in prepared.parts)
    return total / sum(len(part.loss_targets) for part in prepared.parts)


def _readouts_loss(model, batch, rows, targets, reduction: str = "mean") -> Tensor:
    """The answer loss of the model's training read-outs, averaged over them (one read-out, or a
    looped model's last few loops: model.loop_loss_window)."""
    readouts = model.training_readouts(*batch.inputs())
    return sum(answer_loss(logits, rows, targets, reduction) for logits in readouts) / len(readouts)


class BatchStream:
    """`next()` returns the batch for the next step; `resume_state()` the generator state that
    draws it again (for a checkpoint); `close()` stops the worker."""

    def __init__(self, draw: Callable[[torch.Generator], Batch], generator: torch.Generator,
                 length_buckets: int = 1):
        self.draw, self.generator, self.length_buckets = draw, generator, length_buckets
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-batches")
        self.pending = self._submit()

    def _submit(self) -> Future:
        def job() -> tuple[Tensor, TrainingBatch | BaseException]:
            state = self.generator.get_state()
            try:
                return state, prepare(self.draw(self.generator), self.length_buckets)
            except BaseException as error:  # raised in the loop by next(); the state stays resumable
                return state, error
        return self.worker.submit(job)

    def next(self) -> TrainingBatch:
        _, batch = self.pending.result()
        if isinstance(batch, BaseException):
            raise batch
        self.pending = self._submit()
        return batch

    def resume_state(self) -> Tensor:
        state, _ = self.pending.result()
        return state

    def close(self) -> None:
        self.worker.shutdown(wait=True, cancel_futures=True)
