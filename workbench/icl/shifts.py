"""Prompts drawn off the training distribution, after Garg, Tsipras, Liang and Valiant 2022 ("What can
Transformers learn in-context?", arXiv 2208.01066, sec. 4): a model trained on x ~ N(0, I_d) is read on
sequences whose inputs come from elsewhere, or whose query differs from its examples. Each sequence keeps
its function (and label noise) as the task draws them; only the inputs move.

- "skewed covariance": x ~ N(0, S), S with eigenvalues spaced evenly in log from 1 to 1/SKEW (rescaled
  to mean 1, so E|x|^2 = d as in training) under a random rotation per sequence.
- "half subspace": x in a random subspace of ceil(d / 2) dimensions per sequence, scaled so E|x|^2 = d.
- "prompts in one orthant": every example's x lies in one orthant (signs drawn per sequence); the query
  is drawn as in training, so it is usually in another.
- "query repeats an example": the query's x is one of the examples' (drawn uniformly).

The first two move every x, so the whole curve is shifted; the last two concern the final query only.
"""
from __future__ import annotations

import math

import torch

from ..errors import check
from ..tasks.base import Batch

SHIFTS = ("skewed covariance", "half subspace", "prompts in one orthant", "query repeats an example")
SKEW = 25.0  # the skewed covariance's condition number


def shifted_batch(task, shift: str, n: int, examples: int, generator=None) -> Batch:
    """n sequences of `examples` examples of a regression task (icl.views.REGRESSION_TASKS) under `shift`.
    Without a generator: the evaluation sequences of that shift, the same for the same (n, examples, shift)
    wherever they are read (icl-regression-shifts, the In context page, `export --shift`)."""
    from ..evaluate import eval_generator

    check(shift in SHIFTS, "shift", shift, "one of: " + ", ".join(SHIFTS))
    check(isinstance(examples, int) and examples >= 2, "examples", examples, "an integer >= 2")
    if generator is None:
        generator = eval_generator(SHIFTS.index(shift), examples)
    d = task.params.dim
    function = task.draw_function(n, generator)
    xs = torch.randn(n, examples, d, generator=generator)
    covariance = torch.eye(d).expand(n, d, d).clone()
    if shift == "skewed covariance":
        eigenvalues = SKEW ** -torch.linspace(0, 1, d)
        eigenvalues = eigenvalues / eigenvalues.mean()
        rotation, _ = torch.linalg.qr(torch.randn(n, d, d, generator=generator))
        root = rotation * eigenvalues.sqrt()
        xs, covariance = xs @ root.transpose(1, 2), root @ root.transpose(1, 2)
    elif shift == "half subspace":
        rank = math.ceil(d / 2)
        basis, _ = torch.linalg.qr(torch.randn(n, d, rank, generator=generator))  # (n, d, rank) orthonormal
        xs = xs[..., :rank] @ basis.transpose(1, 2) * math.sqrt(d / rank)
        covariance = basis @ basis.transpose(1, 2) * (d / rank)
    elif shift == "prompts in one orthant":
        signs = torch.randint(0, 2, (n, 1, d), generator=generator) * 2 - 1
        xs[:, :-1] = xs[:, :-1].abs() * signs
    else:  # the query repeats one of the examples
        which = torch.randint(0, examples - 1, (n,), generator=generator)
        xs[:, -1] = xs[torch.arange(n), which]
    return task.labelled(function, xs, covariance, generator)
