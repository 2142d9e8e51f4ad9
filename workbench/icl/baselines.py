"""Closed-form in-context baselines for regression on a context (x_0, y_0), ..., (x_{k-1}, y_{k-1}), as in
Garg et al. 2022, "What can Transformers learn in-context?" (arXiv 2208.01066), plus (preconditioned)
gradient descent, the algorithm a linear looped transformer can run one step per loop.

Every estimator takes xs (B, k, d) and ys (B, k) and returns (B, k) predictions: entry i predicts y_i from
x_i and the examples before it only (x_0..x_{i-1}, y_0..y_{i-1}), so a curve over i is comparable with a
causal model's prediction at the same position. Position 0 has no examples and predicts 0 (the mean of
y under a symmetric prior on the function). Arithmetic is in float64: least squares and solves on
prefixes near d examples are badly conditioned, and float32 would show rounding as a baseline's error.
Predictions come back in the inputs' floating dtype (float32 for integer inputs).

Estimators that solve a system per prefix loop over i in Python (k is at most a few hundred here),
batched over B; nearest neighbours and averaging are vectorized over prefixes too.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor

from ..errors import check
from .checks import context as _context, count as _count, positive as _positive
from .fitted import GREEDY_TREE_DEPTH, greedy_tree, two_layer_network

# Defaults of the BASELINES entries. With w ~ N(0, I) and label noise N(0, sigma^2), ridge with
# alpha = sigma^2 is the Bayes posterior mean; 0.1 suits mild noise (std ~0.3) and, on noiseless data,
# costs little once i >> d, since alpha is not divided by i and its pull fades as X^T X grows.
RIDGE_ALPHA = 0.1
# Ten steps: few enough that GD stays visibly short of least squares near i = d (where the empirical
# covariance is ill-conditioned), as a model that loops a handful of times would.
GD_STEPS = 10
NEIGHBOURS = 3
# Lasso for sparse w: with noiseless labels a small penalty is close to basis pursuit (the least-l1 w that
# fits the examples), which recovers an s-sparse w from about s log(d / s) examples; FISTA converges on
# these small problems (d <= 20) well within the steps.
LASSO_ALPHA = 0.01
LASSO_STEPS = 500


def least_squares(xs: Tensor, ys: Tensor) -> Tensor:
    """Minimum-norm least squares on each prefix: w = pinv(X) y. With i < d examples this is the
    min-norm interpolant, Garg's least-squares baseline (the Bayes predictor for w ~ N(0, I), no noise)."""
    xs, ys, dtype = _context(xs, ys)
    preds = ys.new_zeros(ys.shape)
    for i in range(1, xs.shape[1]):
        X, y = xs[:, :i], ys[:, :i, None]
        # LAPACK's gelsd is the SVD min-norm solver numpy uses (same cutoff, eps * max(i, d)); torch's
        # batched pinv of tall matrices is orders of magnitude slower on CPU. Other devices lack gelsd.
        w = torch.linalg.lstsq(X, y, driver="gelsd").solution if X.is_cpu else torch.linalg.pinv(X) @ y
        preds[:, i] = (xs[:, i, None, :] @ w)[:, 0, 0]
    return preds.to(dtype)


def ridge(xs: Tensor, ys: Tensor, alpha: float) -> Tensor:
    """Ridge regression on each prefix: w = (X^T X + alpha I)^-1 X^T y (alpha not scaled by i)."""
    xs, ys, dtype = _context(xs, ys)
    alpha = _positive(alpha, "alpha")
    d = xs.shape[2]
    preds = ys.new_zeros(ys.shape)
    for i in range(1, xs.shape[1]):
        X, y = xs[:, :i], ys[:, :i, None]
        if i < d:  # the same w from the i x i system X^T (X X^T + alpha I)^-1 y: smaller and better conditioned
            w = X.mT @ torch.linalg.solve(X @ X.mT + alpha * torch.eye(i, dtype=X.dtype, device=X.device), y)
        else:
            w = torch.linalg.solve(X.mT @ X + alpha * torch.eye(d, dtype=X.dtype, device=X.device), X.mT @ y)
        preds[:, i] = (xs[:, i, None, :] @ w)[:, 0, 0]
    return preds.to(dtype)


def _descend(xs: Tensor, ys: Tensor, steps: int, step_matrix: Callable[[Tensor], Tensor]) -> Tensor:
    """w <- w - P grad, from w = 0, on the loss (1/2i) sum_j (w.x_j - y_j)^2 of each prefix, whose
    gradient is C w - b with C = X^T X / i, b = X^T y / i. step_matrix(C) gives P, (d, d) or (B, d, d).
    C and b are updated one example at a time rather than recomputed per prefix."""
    B, k, d = xs.shape
    second, cross = xs.new_zeros(B, d, d), xs.new_zeros(B, d, 1)
    preds = ys.new_zeros(ys.shape)
    for i in range(1, k):
        x, y = xs[:, i - 1, :, None], ys[:, i - 1, None, None]
        second, cross = second + x @ x.mT, cross + x * y
        C, b = second / i, cross / i
        P = step_matrix(C)
        w = xs.new_zeros(B, d, 1)
        for _ in range(steps):
            w = w - P @ (C @ w - b)
        preds[:, i] = (xs[:, i, None, :] @ w)[:, 0, 0]
    return preds


def gradient_descent(xs: Tensor, ys: Tensor, steps: int, lr: float | None = None) -> Tensor:
    """`steps` steps of full-batch gradient descent on (1/2i) sum (w.x - y)^2 from w = 0, per prefix.
    lr None: 1/L with L the largest eigenvalue of X^T X / i for that sample and prefix, the largest step
    that decreases the loss monotonically. From w = 0, GD stays in the row space of X, so with enough
    steps it reaches the min-norm least-squares solution (for i < d as well)."""
    xs, ys, dtype = _context(xs, ys)
    steps = _count(steps, "steps", 0)
    if lr is not None:
        lr = _positive(lr, "lr")
    eye = torch.eye(xs.shape[2], dtype=xs.dtype, device=xs.device)

    def step_matrix(C: Tensor) -> Tensor:
        if lr is not None:
            return lr * eye
        top = torch.linalg.eigvalsh(C)[:, -1]
        safe = torch.where(top > 0, 1 / top.clamp_min(1e-300), 0.0)  # all-zero x's: nothing to fit, no step
        return safe[:, None, None] * eye

    return _descend(xs, ys, steps, step_matrix).to(dtype)


def preconditioned_gradient_descent(xs: Tensor, ys: Tensor, steps: int, preconditioner: Tensor) -> Tensor:
    """`steps` steps of w <- w - P grad from w = 0, with a fixed P (d, d) or per-sample (B, d, d), the
    same for every prefix: the algorithm a linear looped transformer runs, one step per loop. With
    P = (X^T X / i)^-1 one step is Newton's method and lands on least squares (i >= d)."""
    xs, ys, dtype = _context(xs, ys)
    steps = _count(steps, "steps", 0)
    B, _, d = xs.shape
    shape = tuple(preconditioner.shape) if isinstance(preconditioner, Tensor) else type(preconditioner).__name__
    check(shape in ((d, d), (B, d, d)), "preconditioner", shape, f"a ({d}, {d}) or ({B}, {d}, {d}) tensor")
    check(bool(torch.isfinite(preconditioner).all()), "preconditioner", "non-finite entries", "finite numbers")
    P = preconditioner.to(xs)
    return _descend(xs, ys, steps, lambda C: P).to(dtype)


def lasso(xs: Tensor, ys: Tensor, alpha: float = LASSO_ALPHA, steps: int = LASSO_STEPS) -> Tensor:
    """Lasso on each prefix, w = argmin (1/2i) |X w - y|^2 + alpha |w|_1 (scikit-learn's scaling), by
    FISTA from w = 0 with the step 1/L, L the largest eigenvalue of X^T X / i of each sequence."""
    xs, ys, dtype = _context(xs, ys)
    alpha, steps = _positive(alpha, "alpha"), _count(steps, "steps", 1)
    B, k, d = xs.shape
    preds = ys.new_zeros(ys.shape)
    for i in range(1, k):
        X, y = xs[:, :i], ys[:, :i, None]
        C, b = X.mT @ X / i, X.mT @ y / i
        step = 1.0 / torch.linalg.eigvalsh(C)[:, -1].clamp_min(1e-12)[:, None, None]
        w = momentum = xs.new_zeros(B, d, 1)
        t = 1.0
        for _ in range(steps):
            moved = momentum - step * (C @ momentum - b)
            shrunk = moved.sign() * (moved.abs() - step * alpha).clamp_min(0.0)
            t_next = (1.0 + math.sqrt(1.0 + 4.0 * t * t)) / 2.0
            momentum = shrunk + ((t - 1.0) / t_next) * (shrunk - w)
            w, t = shrunk, t_next
        preds[:, i] = (xs[:, i, None, :] @ w)[:, 0, 0]
    return preds.to(dtype)


def nearest_neighbours(xs: Tensor, ys: Tensor, k_neighbours: int = NEIGHBOURS) -> Tensor:
    """Mean of y over the min(k_neighbours, i) previous x's nearest to x_i (Euclidean, uniform weights as
    in Garg's NN baseline; ties go to the earlier example)."""
    xs, ys, dtype = _context(xs, ys)
    k_neighbours = _count(k_neighbours, "k_neighbours", 1)
    B, k, _ = xs.shape
    # Exact differences, not the |a|^2 + |b|^2 - 2ab expansion: a repeated x must be at distance 0.
    dist = torch.cdist(xs, xs, compute_mode="donot_use_mm_for_euclid_dist")  # (B, query, example)
    later = torch.ones(k, k, dtype=torch.bool, device=xs.device).triu()  # example j >= query i is not seen
    dist = dist.masked_fill(later, math.inf)
    n = min(k_neighbours, k)
    nearest = dist.argsort(dim=-1, stable=True)[..., :n]  # (B, k, n); unseen examples sort last
    seen = torch.gather(dist, -1, nearest).isfinite()  # the first min(n, i) at query i
    picked = torch.gather(ys[:, None, :].expand(B, k, k), -1, nearest) * seen
    return (picked.sum(-1) / seen.sum(-1).clamp_min(1)).to(dtype)


def averaging(xs: Tensor, ys: Tensor) -> Tensor:
    """Garg's averaging estimator: w = mean_{j<i} y_j x_j, prediction w . x_i. Unbiased for w when
    E[x x^T] = I; it is also one step of gradient descent from 0 with step size 1."""
    xs, ys, dtype = _context(xs, ys)
    sums = torch.cumsum(xs * ys[..., None], dim=1)
    before = torch.cat([torch.zeros_like(sums[:, :1]), sums[:, :-1]], dim=1)  # sum over j < i
    counts = torch.arange(xs.shape[1], dtype=xs.dtype, device=xs.device).clamp_min(1)
    return ((before / counts[:, None]) * xs).sum(-1).to(dtype)


def squared_error_curve(predictions: Tensor, ys: Tensor, scale: float) -> Tensor:
    """(k,): mean over the batch of (prediction - y)^2 / scale at each position. Garg divides by E[y^2]: d
    for y = w.x with w, x ~ N(0, I_d), so predicting 0 scores 1 at every dimension; 1 for trees."""
    check(isinstance(predictions, Tensor) and predictions.dim() == 2, "predictions",
          tuple(predictions.shape) if isinstance(predictions, Tensor) else type(predictions).__name__,
          "a (B, k) tensor")
    check(isinstance(ys, Tensor) and ys.shape == predictions.shape, "ys",
          tuple(ys.shape) if isinstance(ys, Tensor) else type(ys).__name__,
          f"a tensor shaped like predictions: {tuple(predictions.shape)}")
    scale = _positive(scale, "scale")
    dtype = predictions.dtype if predictions.is_floating_point() else torch.float32
    return ((predictions.to(torch.float64) - ys.to(torch.float64)) ** 2).mean(0).div(scale).to(dtype)


def whitening(xs: Tensor) -> Tensor:
    """(d, d): S^-1/2 for S = E[x x^T] pooled over the batch and positions (an estimate of the population
    covariance), pseudo-inverted on directions where the batch has no spread."""
    xs = xs.to(torch.float64).reshape(-1, xs.shape[-1])
    values, vectors = torch.linalg.eigh(xs.mT @ xs / len(xs))
    kept = values > values[-1].clamp_min(0) * values.shape[0] * torch.finfo(values.dtype).eps
    scale = torch.where(kept, values.clamp_min(1e-300).rsqrt(), 0.0)
    return vectors @ torch.diag(scale) @ vectors.mT


def whitened_gradient_descent(xs: Tensor, ys: Tensor, steps: int = GD_STEPS) -> Tensor:
    """Gradient descent preconditioned by the inverse data covariance S^-1 (from `whitening`: the
    preconditioner a linear looped transformer can learn), with the safe step 1/L per sample and prefix:
    w <- w - eta_i S^-1 grad, which is gradient_descent on whitened inputs x S^-1/2. Unlike
    gradient_descent, its predictions do not change under x -> x A for an invertible A (skewed covariance).
    A single fixed P cannot serve every prefix: at i = 1, x x^T has eigenvalue |x|^2 ~ d, so a P that is
    stable there (eta < 2/d) barely moves at i >> d; hence the per-prefix step."""
    xs, ys, dtype = _context(xs, ys)
    return gradient_descent(xs @ whitening(xs), ys, steps).to(dtype)


# Every baseline as callable(xs, ys) -> (B, k) predictions with the defaults above, for drawing beside a
# model's curve (squared_error_curve of each).
LINEAR_BASELINES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "least squares": least_squares,
    "ridge": lambda xs, ys: ridge(xs, ys, RIDGE_ALPHA),
    "gradient descent": lambda xs, ys: gradient_descent(xs, ys, GD_STEPS),
    "preconditioned GD": lambda xs, ys: whitened_gradient_descent(xs, ys, GD_STEPS),
    f"{NEIGHBOURS}-nearest neighbours": lambda xs, ys: nearest_neighbours(xs, ys, NEIGHBOURS),
    "averaging": averaging,
    "lasso": lambda xs, ys: lasso(xs, ys, LASSO_ALPHA, LASSO_STEPS),
}
BASELINES = {**LINEAR_BASELINES, "2-layer network (Adam)": two_layer_network,
             f"greedy tree (depth {GREEDY_TREE_DEPTH})": greedy_tree}
# Garg et al.'s baselines for each richer class: least squares, nearest neighbours, averaging and the
# class's own learner (their XGBoost for trees is not here: it would be a dependency for one baseline).
TASK_BASELINES = {
    "icl_relu_network": ["least squares", f"{NEIGHBOURS}-nearest neighbours", "averaging", "2-layer network (Adam)"],
    "icl_decision_tree": ["least squares", f"{NEIGHBOURS}-nearest neighbours", "averaging",
                          f"greedy tree (depth {GREEDY_TREE_DEPTH})"],
}


def baselines_for(task_name: str) -> list[str]:
    """The baselines a task's curve is drawn beside by default: the linear estimators, or the paper's set
    for a richer function class."""
    return TASK_BASELINES.get(task_name, list(LINEAR_BASELINES))
