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
- "inputs scaled by 3", "inputs scaled by 1/3": every x times that factor, so every label too (the
  extremes of the paper's scalings, 1/3 to 3).
- "query orthogonal to the examples": the query at position min(examples, d) - 1 is moved into the
  orthogonal complement of the examples before it (and keeps its length), as the paper's code does. Only
  a query with fewer than d examples before it has such a direction, so this shift is read there; the
  queries after it see it as one more example.

The first two and the scalings move every x, so the whole curve is shifted; "prompts in one orthant" and
"query repeats an example" concern the final query only, and the orthogonal query the one at d - 1 examples.
"""
from __future__ import annotations

import math

import torch

from ..errors import check
from ..tasks.base import Batch

# appended in order: a shift's evaluation sequences are seeded by its place in this list
SHIFTS = ("skewed covariance", "half subspace", "prompts in one orthant", "query repeats an example",
          "inputs scaled by 3", "inputs scaled by 1/3", "query orthogonal to the examples")
SKEW = 25.0  # the skewed covariance's condition number
SCALES = {"inputs scaled by 3": 3.0, "inputs scaled by 1/3": 1 / 3}


def _known(shift: str) -> None:
    check(shift in SHIFTS, "shift", shift, "one of: " + ", ".join(SHIFTS))


def where_it_acts(shift: str, dim: int, examples: int) -> str:
    """One line for a reader of a shifted curve of `examples` queries: which queries the shift moves, so
    which points to read."""
    _known(shift)
    if shift in ("prompts in one orthant", "query repeats an example"):
        return f"{shift}: only the final query is off the training distribution; read the curve's last point."
    if shift == "query orthogonal to the examples":
        at = orthogonal_query_position(examples, dim)
        which = "d - 1" if at == dim - 1 else "the last query"
        return (f"{shift}: only the query with {at} examples before it ({which}) is moved; read that point. The "
                "queries after it see it as one more example.")
    return f"{shift}: every input moves, so every point of the curve is read under the shift."


def orthogonal_query_position(examples: int, dim: int) -> int:
    """The query "query orthogonal to the examples" moves: the last with fewer than d examples before it."""
    return min(examples, dim) - 1


def shifted_batch(task, shift: str, n: int, examples: int, generator=None) -> Batch:
    """n sequences of `examples` examples of a regression task (icl.views.REGRESSION_TASKS) under `shift`.
    Without a generator: the evaluation sequences of that shift, the same for the same (n, examples, shift)
    wherever they are read (icl-regression-shifts, the In context page, `export --shift`)."""
    from ..evaluate import eval_generator

    _known(shift)
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
    elif shift == "query repeats an example":
        which = torch.randint(0, examples - 1, (n,), generator=generator)
        xs[:, -1] = xs[torch.arange(n), which]
    elif shift in SCALES:
        xs, covariance = xs * SCALES[shift], covariance * SCALES[shift] ** 2
    else:  # the query orthogonal to the examples before it
        at = orthogonal_query_position(examples, d)
        xs[:, at] = _orthogonal_to(xs[:, :at], xs[:, at])
    return task.labelled(function, xs, covariance, generator)


def _orthogonal_to(examples: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """(n, d) each query with its projection on its examples' span removed, rescaled to its own length.
    examples: (n, i, d) with i < d, so a direction orthogonal to them exists."""
    if examples.shape[1] == 0:
        return query
    # float64: a query nearly in the span leaves a short remainder, which the rescaling magnifies
    basis, _ = torch.linalg.qr(examples.double().transpose(1, 2))  # (n, d, i) orthonormal, spanning the examples
    wide = query.double()
    rest = wide - (basis @ (basis.transpose(1, 2) @ wide.unsqueeze(-1))).squeeze(-1)
    return (rest * (wide.norm(dim=-1, keepdim=True) / rest.norm(dim=-1, keepdim=True))).to(query.dtype)
