"""What the two looped-linear-transformer recipes share (icl-depth-and-looping, icl-preconditioned-gd):
the theory papers' model and task format, and the final-query error of a model read at a chosen depth.

The model is the linear transformer the theory analyses (Ahn et al. 2023; Gatmiry et al. 2024, arXiv
2410.08292): linear attention with the identity feature map (no normalization by the key sum, rows
divided by their number of keys) in its gradient-descent form (model.gd_form: it writes along one
direction its queries and keys cannot see, as the theory's value/output matrix writes only the label;
without it a looped model explodes on rare large inputs), no norms, no MLP, one head; each example is one token (x, y) and the
query (x, 0) is the final token (task.pairs=true). Our model differs from theirs in being causal: an
example token attends only to the examples before it (theirs attend to all n), and the query attends to
itself too (its y slot is 0 at the input).
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import torch
from torch import nn

from ...evaluate import eval_mode
from ...tasks import build_task

MODEL = ["model.mixer=linear_attention", "model.feature_map=identity", "model.pos=nope", "model.norm=none",
         "model.mlp_ratio=0", "model.n_heads=1", "model.d_model=8", "model.init=fan_in", "model.gd_form=true"]


def task_overrides(dim: int, examples: int) -> list[str]:
    return ["task.name=icl_linear_regression", f"task.dim={dim}", f"task.min_examples={examples}",
            f"task.max_examples={examples}", "task.pairs=true"]


def with_params(task, **changes):
    """The same task with some params changed (e.g. another kappa for a covariance shift)."""
    return build_task(task.name, {**dataclasses.asdict(task.params), **changes})


@contextmanager
def depth(model, loops: int | None = None, blocks: int | None = None):
    """Read `model` with `loops` applications of its block (a looped model) or with only its first
    `blocks` blocks (a stacked one, truncated); restored afterwards."""
    saved_loops, saved_blocks = model.loops, model.blocks
    try:
        if loops is not None:
            model.loops = loops
        if blocks is not None:
            model.blocks = nn.ModuleList(list(saved_blocks)[:blocks])
        yield model
    finally:
        model.loops, model.blocks = saved_loops, saved_blocks


@torch.no_grad()
def final_error(model, task, batch) -> float:
    """Mean squared error / d at the query (the final token) of every sequence in `batch`."""
    with eval_mode(model):
        predictions = task.predictions(model(*batch.inputs()))
        return float(task.squared_errors(predictions, batch).double().mean())
