"""Closed-form in-context baselines (workbench.icl.baselines): each agrees with a reference computed
another way (numpy lstsq, the normal equations, a hand case), the limits that tie them together hold
(ridge -> least squares as alpha -> 0, GD -> least squares, one Newton step), every prediction uses only
the examples before it, and bad input names the field."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from workbench.errors import ConfigError
from workbench.icl.baselines import (BASELINES, averaging, gradient_descent, lasso, least_squares, nearest_neighbours,
                                     preconditioned_gradient_descent, ridge, squared_error_curve,
                                     whitened_gradient_descent)


def linear_data(B: int, k: int, d: int, noise: float = 0.0, seed: int = 0):
    """Garg's task: x ~ N(0, I_d), w ~ N(0, I_d) per sequence, y = w.x (+ noise); float64."""
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(B, k, d, generator=g, dtype=torch.float64)
    w = torch.randn(B, d, generator=g, dtype=torch.float64)
    return xs, (xs @ w[..., None])[..., 0] + noise * torch.randn(B, k, generator=g, dtype=torch.float64)


def well_conditioned_data(B: int, k: int, d: int, seed: int = 0):
    """Like linear_data, but the first d x's are sqrt(d) times orthonormal rows, so X^T X / i is
    well conditioned from i = d on and gradient descent converges in a few hundred steps."""
    xs, _ = linear_data(B, k, d, seed=seed)
    xs[:, :d] = torch.linalg.qr(xs[:, :d])[0] * d ** 0.5
    w = torch.randn(B, d, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    return xs, (xs @ w[..., None])[..., 0] + 0.1 * torch.randn(B, k, dtype=torch.float64)


@pytest.mark.parametrize("B,k,d", [(1, 5, 8), (3, 12, 4), (4, 9, 9), (2, 30, 6)])
def test_least_squares_matches_numpy_min_norm_lstsq_at_every_prefix(B, k, d):
    xs, ys = linear_data(B, k, d, noise=0.5)
    preds = least_squares(xs, ys).numpy()
    for b in range(B):
        assert preds[b, 0] == 0
        for i in range(1, k):
            w = np.linalg.lstsq(xs[b, :i].numpy(), ys[b, :i].numpy(), rcond=None)[0]
            assert preds[b, i] == pytest.approx(xs[b, i].numpy() @ w, rel=1e-8, abs=1e-10)


def test_noiseless_least_squares_is_exact_from_d_examples_on():
    d = 6
    xs, ys = linear_data(16, 3 * d, d)
    error = squared_error_curve(least_squares(xs, ys), ys, d)
    assert error[d:].max() < 1e-12
    assert error[d - 1] > 1e-3  # one example short of d, w is not yet determined


def test_normalized_error_of_predicting_zero_is_one():
    # Position 0 predicts 0; y = w.x with w, x ~ N(0, I_d) has E[y^2] = d, so Garg's curve starts at 1.
    xs, ys = linear_data(4000, 2, 5, seed=1)
    assert squared_error_curve(least_squares(xs, ys), ys, 5)[0].item() == pytest.approx(1.0, abs=0.1)


def test_ridge_spans_least_squares_to_zero():
    xs, ys = linear_data(3, 14, 5, noise=0.3)  # prefixes below and above d
    exact = least_squares(xs, ys)
    gap = {alpha: (ridge(xs, ys, alpha) - exact).abs().max().item() for alpha in (1e-6, 1e-9, 1e-12)}
    # The bias shrinks in proportion to alpha (at i = d, X is ill-conditioned and it is largest).
    assert gap[1e-12] < 1e-5 and gap[1e-12] < gap[1e-9] / 100 < gap[1e-6] / 1e4
    assert ridge(xs, ys, 1e12).abs().max() < 1e-8
    middle = ridge(xs, ys, 1.0)
    assert not torch.allclose(middle, least_squares(xs, ys), atol=1e-3)


def test_ridge_matches_the_normal_equations_on_a_prefix():
    xs, ys = linear_data(2, 10, 4, noise=0.3)
    X, y, i, alpha = xs[1, :7], ys[1, :7], 7, 0.5
    w = torch.linalg.solve(X.T @ X + alpha * torch.eye(4, dtype=X.dtype), X.T @ y)
    assert ridge(xs, ys, alpha)[1, i].item() == pytest.approx((xs[1, i] @ w).item(), rel=1e-10)


def test_gradient_descent_converges_to_least_squares_once_determined():
    d = 4
    xs, ys = well_conditioned_data(3, 3 * d, d)
    converged, exact = gradient_descent(xs, ys, steps=500), least_squares(xs, ys)
    assert torch.allclose(converged[:, d:], exact[:, d:], atol=1e-8)
    few = gradient_descent(xs, ys, steps=2)
    assert not torch.allclose(few[:, d:], exact[:, d:], atol=1e-3)  # so the check above has teeth


def test_gradient_descent_steps_are_counted_from_zero():
    xs, ys = linear_data(2, 8, 3)
    assert gradient_descent(xs, ys, steps=0).abs().max() == 0
    # One step of size 1 from w = 0 is w = X^T y / i = mean_j y_j x_j: the averaging estimator.
    assert torch.allclose(gradient_descent(xs, ys, steps=1, lr=1.0), averaging(xs, ys), atol=1e-12)


def test_preconditioned_gd_with_the_inverse_covariance_is_one_newton_step():
    d, k = 3, 10
    xs, ys = linear_data(4, k, d, noise=0.2)
    exact = least_squares(xs, ys)
    for i in range(d, k):
        X = xs[:, :i]
        newton = torch.linalg.inv(X.mT @ X / i)  # (B, d, d): a different P for each sequence
        assert torch.allclose(preconditioned_gradient_descent(xs, ys, 1, newton)[:, i], exact[:, i], atol=1e-9)


def test_preconditioned_gd_with_a_scaled_identity_is_gradient_descent():
    xs, ys = linear_data(3, 9, 4)
    P = 0.05 * torch.eye(4)  # one (d, d) matrix for the whole batch
    assert torch.allclose(preconditioned_gradient_descent(xs, ys, 7, P), gradient_descent(xs, ys, 7, lr=0.05),
                          atol=1e-12)


def test_whitened_gd_ignores_a_linear_change_of_inputs_and_plain_gd_does_not():
    xs, ys = linear_data(8, 12, 3)
    A = torch.tensor([[3.0, 0.5, 0.0], [0.0, 0.2, 0.1], [1.0, 0.0, 1.0]], dtype=torch.float64)
    assert torch.allclose(whitened_gradient_descent(xs @ A, ys, 5), whitened_gradient_descent(xs, ys, 5),
                          atol=1e-9)
    assert not torch.allclose(gradient_descent(xs @ A, ys, 5), gradient_descent(xs, ys, 5), atol=1e-3)


def test_nearest_neighbour_returns_the_y_of_a_repeated_x():
    xs, ys = linear_data(2, 8, 5, noise=1.0)
    xs[:, 6] = xs[:, 2]
    assert torch.equal(nearest_neighbours(xs, ys, k_neighbours=1)[:, 6], ys[:, 2])


def test_nearest_neighbours_average_the_closest_previous_examples():
    xs = torch.tensor([[[0.0], [10.0], [1.0], [9.0], [0.4]]])
    ys = torch.tensor([[1.0, 2.0, 4.0, 8.0, 16.0]])
    # i = 1, 2: fewer than 3 examples seen, so all of them; i = 3: x = 9 -> 10, 1, 0;
    # i = 4: x = 0.4 -> 0, 1, 9 (x = 16's own y is never used).
    expected = torch.tensor([[0.0, 1.0, 1.5, (2 + 4 + 1) / 3, (1 + 4 + 8) / 3]])
    assert torch.allclose(nearest_neighbours(xs, ys, 3), expected)
    assert torch.allclose(nearest_neighbours(xs, ys, 1), torch.tensor([[0.0, 1.0, 1.0, 2.0, 1.0]]))


def test_averaging_on_a_hand_case():
    xs = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]])
    ys = torch.tensor([[3.0, 4.0, 0.0]])
    # i = 1: w = 3 * (1, 0), w . (0, 2) = 0;  i = 2: w = ((3, 0) + (0, 8)) / 2 = (1.5, 4), w . (1, 1) = 5.5
    assert torch.allclose(averaging(xs, ys), torch.tensor([[0.0, 0.0, 5.5]]))


def test_squared_error_curve_on_a_hand_case():
    predictions = torch.tensor([[0.0, 1.0], [2.0, 1.0]])
    ys = torch.tensor([[1.0, 1.0], [0.0, 4.0]])
    assert torch.allclose(squared_error_curve(predictions, ys, scale=2), torch.tensor([(1 + 4) / 4, 9 / 4]))


@pytest.mark.parametrize("name", list(BASELINES))
def test_every_baseline_is_causal_with_shapes_and_dtypes(name):
    assert set(BASELINES) == {"least squares", "ridge", "gradient descent", "preconditioned GD",
                              "3-nearest neighbours", "averaging", "lasso", "2-layer network (Adam)",
                              "greedy tree (depth 4)"}
    xs, ys = linear_data(3, 9, 4, noise=0.1)
    preds = BASELINES[name](xs.float(), ys.float())
    assert preds.shape == (3, 9) and preds.dtype == torch.float32
    assert BASELINES[name](xs, ys).dtype == torch.float64
    assert (preds[:, 0] == 0).all()
    assert preds.isfinite().all()
    # Position 5 sees x_5 and examples 0..4: changing y from 5 on and x from 6 on leaves positions 0..5
    # alone. The whitened baseline pools x over the whole batch, so it is causal given that shared
    # preconditioner only.
    later_xs, later_ys = xs.clone(), ys.clone()
    later_xs[:, 6:] += 3.0
    later_ys[:, 5:] -= 7.0
    if name != "preconditioned GD":
        assert torch.allclose(BASELINES[name](later_xs, later_ys)[:, :6], BASELINES[name](xs, ys)[:, :6])


def test_lasso_recovers_a_sparse_w_from_fewer_examples_than_dimensions():
    """2-sparse w in d = 10: least squares (the min-norm fit) still errs at 6 examples, while the l1
    penalty finds w from about s log(d / s) examples; with many examples both are exact."""
    g = torch.Generator().manual_seed(0)
    xs = torch.randn(64, 20, 10, generator=g, dtype=torch.float64)
    w = torch.zeros(64, 10, dtype=torch.float64)
    w[:, :2] = torch.randn(64, 2, generator=g, dtype=torch.float64)
    ys = (xs @ w[..., None])[..., 0]
    sparse, dense = squared_error_curve(lasso(xs, ys), ys, 10), squared_error_curve(least_squares(xs, ys), ys, 10)
    assert sparse[6] < 0.2 * dense[6] and dense[6] > 0.05
    assert sparse[-1] < 1e-3 and dense[-1] < 1e-10
    # the penalty's own fixed point: with one example and a huge alpha, w stays 0
    assert (lasso(xs[:, :3], ys[:, :3], alpha=1e6) == 0).all()


def test_a_context_shorter_than_a_neighbourhood_or_one_example_long():
    xs, ys = linear_data(2, 1, 3)
    for baseline in BASELINES.values():
        assert baseline(xs, ys).abs().max() == 0


xs_ok, ys_ok = linear_data(2, 4, 3)


@pytest.mark.parametrize("call,field", [
    (lambda: least_squares(xs_ok[0], ys_ok), "xs"),
    (lambda: least_squares(xs_ok.tolist(), ys_ok), "xs"),
    (lambda: least_squares(xs_ok, ys_ok[:, :3]), "ys"),
    (lambda: averaging(xs_ok, ys_ok[..., None]), "ys"),
    (lambda: least_squares(xs_ok[:, :0], ys_ok[:, :0]), "xs"),
    (lambda: averaging(xs_ok, ys_ok.clone().fill_(float("nan"))), "ys"),
    (lambda: ridge(xs_ok, ys_ok, 0.0), "alpha"),
    (lambda: ridge(xs_ok, ys_ok, float("inf")), "alpha"),
    (lambda: gradient_descent(xs_ok, ys_ok, -1), "steps"),
    (lambda: gradient_descent(xs_ok, ys_ok, 2.5), "steps"),
    (lambda: gradient_descent(xs_ok, ys_ok, 3, lr=0), "lr"),
    (lambda: preconditioned_gradient_descent(xs_ok, ys_ok, 1, torch.eye(4)), "preconditioner"),
    (lambda: preconditioned_gradient_descent(xs_ok, ys_ok, 1, torch.eye(3).expand(5, 3, 3)), "preconditioner"),
    (lambda: nearest_neighbours(xs_ok, ys_ok, 0), "k_neighbours"),
    (lambda: squared_error_curve(ys_ok, ys_ok[:1], 3), "ys"),
    (lambda: squared_error_curve(ys_ok[0], ys_ok[0], 3), "predictions"),
    (lambda: squared_error_curve(ys_ok, ys_ok, 0), "scale"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ConfigError) as caught:
        call()
    assert caught.value.field == field and str(caught.value).startswith(field + ":")
