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
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from .evaluate import answer_rows
from .tasks.base import Batch


@dataclass
class TrainingBatch:
    batch: Batch
    loss_rows: Tensor  # flat (B * T) indices of the positions in the loss, in row-major order
    loss_targets: Tensor  # their targets: batch.targets[batch.loss_mask] (batch.values for regression)


def prepare(batch: Batch) -> TrainingBatch:
    return TrainingBatch(batch, *answer_rows(batch))


class BatchStream:
    """`next()` returns the batch for the next step; `resume_state()` the generator state that
    draws it again (for a checkpoint); `close()` stops the worker."""

    def __init__(self, draw: Callable[[torch.Generator], Batch], generator: torch.Generator):
        self.draw, self.generator = draw, generator
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-batches")
        self.pending = self._submit()

    def _submit(self) -> Future:
        def job() -> tuple[Tensor, TrainingBatch | BaseException]:
            state = self.generator.get_state()
            try:
                return state, prepare(self.draw(self.generator))
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
