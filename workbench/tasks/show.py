"""Decoded examples of a task for people: the back end of `workbench task show NAME`."""
from __future__ import annotations

import torch

from ..coupled_ids import LEVEL_STRIDE, SHIFT_STRIDE, unpack
from .base import Task


def show_examples(task: Task, n: int = 5, seed: int = 0, length: int | None = None,
                  train: bool = False) -> list[dict]:
    """n examples, each as plain Python values: the decoded input, the symbols it is trained to
    predict (under the loss mask), and per token: symbol, target, loss mask and position id.

    Padding after the example is cut off. train=False shows evaluation ids (no random offsets)."""
    batch = task.sample(n, torch.Generator().manual_seed(seed), length=length, train=train)
    examples = []
    for i in range(len(batch)):
        size = _unpadded(batch, i)
        tokens = batch.tokens[i, :size].tolist()
        targets = batch.targets[i, :size].tolist()
        mask = batch.loss_mask[i, :size].tolist()
        positions = None if batch.position_ids is None else batch.position_ids[i, :size].tolist()
        symbols = [task.vocab.symbols[t] for t in tokens]
        example = {
            "input": task.decode(tokens),
            "answer": task.decode([t for t, m in zip(targets, mask) if m]),
            "tokens": symbols,
            "targets": [task.vocab.symbols[t] for t in targets],
            "loss_mask": mask,
            "position_ids": positions,
            "meta": {k: _rounded(v[i]) for k, v in batch.meta.items()},
        }
        if batch.vectors is not None:  # real-valued tasks: what the read-in sees at every slot
            example["vectors"] = _rounded(batch.vectors[i, :size])
        if batch.values is not None:  # regression: the real targets under the loss mask
            example["values"] = _rounded(batch.values[i, :size])
            example["answer"] = " ".join(f"{v:.3f}" for v, m in zip(example["values"], mask) if m)
        examples.append(example)
    return examples


def unpacked_ids(positions: list[int]) -> dict[str, list[int]]:
    """Printed rows of a sample's position ids: one, or one per field of multi-level coupled ids."""
    if max(positions, default=0) < LEVEL_STRIDE:
        return {"position": positions}
    fields = list(zip(*(unpack(p) for p in positions)))
    rows = {"position": list(fields[0]), "level": list(fields[1])}
    if max(positions) >= SHIFT_STRIDE:
        rows["shifted"] = list(fields[2])
    return rows


def aligned_rows(rows: dict[str, list], width: int) -> str:
    """Named rows, one per line, every value right-aligned to `width`, so the columns line up token by token."""
    return "\n".join(f"  {name:9s}" + " ".join(f"{str(v):>{width}}" for v in values) for name, values in rows.items())


def ids_table(example: dict) -> str:
    """An example's tokens over its position ids, one row per id field (notebooks print this)."""
    return aligned_rows({"token": example["tokens"], **unpacked_ids(example["position_ids"])}, width=2)


def _rounded(t: torch.Tensor):
    """Plain Python values; floats to 4 decimals so a shown sample stays readable."""
    if t.is_floating_point():
        return torch.round(t.double(), decimals=4).tolist()
    return t.tolist()


def _unpadded(batch, i: int) -> int:
    """Tokens up to the last real one (PAD = 0 only pads on the right)."""
    real = (batch.tokens[i] != 0) | batch.loss_mask[i]
    return int(real.nonzero().max()) + 1 if bool(real.any()) else 0
