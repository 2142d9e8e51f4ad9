"""In-context linear regression (Garg et al. 2022, "What can Transformers learn in-context? A case
study of simple function classes", arXiv 2208.01066): every sequence draws its own weight vector
w ~ N(0, I_d) and shows (x_1, w.x_1, x_2, w.x_2, ..., x_k); the model predicts w.x_i at every x_i
from the examples before it, so the only way to do well is to fit w in context.

The model reads each slot as a vector through a linear read-in: an x slot carries x_i, a y slot
carries (y_i, 0, ..., 0), as in Garg et al.; the tokens `x` and `y` mark which is which. The
"length" of a sample is its number of examples k (2k - 1 input slots).

Options beyond the paper's isotropic setting: `noise` (std of Gaussian noise added to y), `kappa`
(each sequence's inputs get a covariance with a random rotation and a condition number drawn
uniformly from [1, kappa], eigenvalues spaced evenly in log and with mean 1), and, in
`icl_sparse_regression`, w with only `sparsity` nonzero coordinates.

Two options for the theory papers' setting (Ahn et al. 2023; Gatmiry et al. 2024, arXiv 2410.08292):
`pairs` shows each example as one token carrying (x_j, y_j) in d + 1 coordinates, and the final token
(x_k, 0) is the one query (the only position scored); a linear self-attention layer can then take a
gradient step on the examples in one pass, which the interleaved slots cannot (x_j and y_j sit in
different tokens). `fixed_covariance` gives every sequence the same input covariance: eigenvalues spaced
evenly in log from 1 to 1/kappa (mean 1) under one fixed rotation (`fixed_covariance_matrix`).

Exact match makes no sense for real numbers; a sample counts as solved when its final query's
squared error, divided by d, is below `tolerance` (predicting 0 scores about 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..errors import check
from .base import Batch, Vocab, register_task
from .common import check_range
from .in_context import InContextTask, query_mask, slot_vectors


@dataclass
class RegressionParams:
    dim: int = field(default=8, metadata={"help": "input dimension d"})
    min_examples: int = field(default=17, metadata={"help": "fewest in-context examples in training"})
    max_examples: int = field(default=17, metadata={"help": "most in-context examples in training"})
    noise: float = field(default=0.0, metadata={"help": "std of Gaussian noise added to each y"})
    kappa: float = field(default=1.0, metadata={"help": "largest condition number of the input covariance (1: isotropic)"})
    sparsity: int = field(default=0, metadata={"help": "nonzero coordinates of w (0: all d)"})
    pairs: bool = field(default=False, metadata={"help": "one token per example, (x, y) in d + 1 coordinates; the "
                                                          "final token (x, 0) is the only query"})
    fixed_covariance: bool = field(default=False, metadata={"help": "one input covariance for every sequence: "
                                                                    "condition number kappa, a fixed rotation"})
    tolerance: float = field(default=0.1, metadata={"help": "final-query squared error / d (the error scale) below "
                                                            "which a sample counts as solved"})


@register_task
class ICLLinearRegression(InContextTask):
    name = "icl_linear_regression"
    Params = RegressionParams
    description = "predict y = w.x for a fresh w per sequence from the (x, y) examples before it"
    output = "regression"
    exact_match_reachable = False  # "solved" is a tolerance on a real number; compare errors instead

    def validate(self) -> None:
        p = self.params
        check(1 <= p.dim <= 256, "task.dim", p.dim, "expected 1..256")
        check_range("task", "min_examples", p.min_examples, "max_examples", p.max_examples)
        check(p.noise >= 0, "task.noise", p.noise, "expected >= 0")
        check(p.kappa >= 1, "task.kappa", p.kappa, "expected a condition number >= 1")
        check(0 <= p.sparsity <= p.dim, "task.sparsity", p.sparsity, f"expected 0..task.dim ({p.dim})")
        check(not p.pairs or p.min_examples == p.max_examples >= 2, "task.pairs", p.pairs,
              "expected task.min_examples == task.max_examples >= 2 with pairs (the query is the final token)")
        check(p.tolerance > 0, "task.tolerance", p.tolerance, "expected > 0")
        self.input_dim = p.dim + 1 if p.pairs else p.dim

    def build_vocab(self) -> Vocab:
        return Vocab(["x", "y"])

    def sequence_length(self, length: int) -> int:
        return length if self.params.pairs else 2 * length - 1

    # --- the data -----------------------------------------------------------------------------
    def draw_weights(self, m: int, generator) -> Tensor:
        p = self.params
        w = torch.randn(m, p.dim, generator=generator)
        if p.sparsity:  # keep a random subset of `sparsity` coordinates per sequence
            keep = torch.rand(m, p.dim, generator=generator).argsort(-1)[:, :p.sparsity]
            w = w * torch.zeros_like(w).scatter_(1, keep, 1.0)
        return w

    def draw_inputs(self, m: int, k: int, generator) -> tuple[Tensor, Tensor]:
        """(xs (m, k, d), covariance (m, d, d)): isotropic for kappa = 1, else a random rotation of
        eigenvalues spaced evenly in log from 1 to 1/c (c ~ U[1, kappa]), rescaled to mean 1."""
        d, kappa = self.params.dim, self.params.kappa
        z = torch.randn(m, k, d, generator=generator)
        if self.params.fixed_covariance:
            root = self.fixed_covariance_root()
            return z @ root.T, (root @ root.T).expand(m, d, d).clone()
        if kappa == 1:
            return z, torch.eye(d).expand(m, d, d).clone()
        condition = 1 + (kappa - 1) * torch.rand(m, 1, generator=generator)
        spread = torch.linspace(0, 1, d).unsqueeze(0)
        eigenvalues = condition ** -spread
        eigenvalues = eigenvalues / eigenvalues.mean(-1, keepdim=True)
        rotation, _ = torch.linalg.qr(torch.randn(m, d, d, generator=generator))
        root = rotation * eigenvalues.sqrt().unsqueeze(1)  # Q diag(sqrt(lambda))
        return z @ root.transpose(1, 2), root @ root.transpose(1, 2)

    FIXED_ROTATION_SEED = 0

    def fixed_covariance_root(self) -> Tensor:
        """Q diag(sqrt(lambda)) of the fixed covariance: lambda spaced evenly in log from 1 to 1/kappa,
        rescaled to mean 1, Q a rotation drawn from its own seed (the same for every run)."""
        d, kappa = self.params.dim, self.params.kappa
        eigenvalues = torch.tensor(float(kappa)) ** -torch.linspace(0, 1, d)
        eigenvalues = eigenvalues / eigenvalues.mean()
        rotation, _ = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(self.FIXED_ROTATION_SEED)))
        return rotation * eigenvalues.sqrt()

    def fixed_covariance_matrix(self) -> Tensor:
        """(d, d) the input covariance every sequence shares under `fixed_covariance`."""
        root = self.fixed_covariance_root()
        return root @ root.T

    # --- the function class: subclasses (icl_functions) draw and evaluate other functions ------
    error_label = "squared error / d"  # what squared_errors returns, as a curve's axis names it

    @property
    def error_scale(self) -> float:
        """E[y^2] under the prior (without noise): squared errors are divided by it, so predicting 0
        scores about 1. For y = w.x with w, x ~ N(0, I_d) it is d, Garg's normalization."""
        return float(self.params.dim)

    def draw_function(self, m: int, generator) -> dict[str, Tensor]:
        """Each sequence's function, as the tensors that define it (kept in the batch's meta)."""
        return {"weights": self.draw_weights(m, generator)}

    def evaluate(self, function: dict[str, Tensor], xs: Tensor) -> Tensor:
        """(m, k) the noiseless y of each x (m, k, d) under each sequence's function."""
        return (xs @ function["weights"].unsqueeze(-1)).squeeze(-1)

    def _fixed_length(self, k: int, m: int, generator) -> Batch:
        function = self.draw_function(m, generator)
        xs, covariance = self.draw_inputs(m, k, generator)
        return self.labelled(function, xs, covariance, generator)

    def labelled(self, function: dict[str, Tensor], xs: Tensor, covariance: Tensor, generator) -> Batch:
        """The batch of sequences with inputs xs (m, k, d) labelled by each sequence's function (plus the
        label noise): how the task draws its samples, and how icl.shifts builds shifted ones."""
        m, k, _ = xs.shape
        ys = self.evaluate(function, xs) + self.params.noise * torch.randn(m, k, generator=generator)
        meta = {"length": torch.full((m,), k), **function, "covariance": covariance}
        if self.params.pairs:
            return self._pairs(xs, ys, meta)
        T = 2 * k - 1
        tokens = torch.full((m, 2 * k), self.vocab["y"])
        tokens[:, 0::2] = self.vocab["x"]
        values = torch.zeros(m, T)
        values[:, 0::2] = ys
        return Batch(tokens[:, :T], tokens[:, 1:], query_mask(m, k), None, meta, slot_vectors(xs, ys), values)

    def _pairs(self, xs: Tensor, ys: Tensor, meta: dict[str, Tensor]) -> Batch:
        """k tokens: (x_j, y_j) for the k - 1 examples (token `y`), then the query (x_k, 0) (token `x`)."""
        m, k, d = xs.shape
        vectors = torch.cat([xs, ys.unsqueeze(-1)], dim=-1)
        vectors[:, -1, d] = 0.0
        tokens = torch.full((m, k + 1), self.vocab["y"])
        tokens[:, k - 1] = self.vocab["x"]
        loss_mask = torch.zeros(m, k, dtype=torch.bool)
        loss_mask[:, -1] = True
        values = torch.zeros(m, k)
        values[:, -1] = ys[:, -1]
        return Batch(tokens[:, :k], tokens[:, 1:], loss_mask, None, meta, vectors, values)

    # --- reading a batch back -----------------------------------------------------------------
    def examples(self, batch: Batch) -> tuple[Tensor, Tensor]:
        """(xs (B, k, d), ys (B, k)) of a batch: the inputs and targets at its query slots (under
        `pairs`: every token's x and y, the final y being the query's target)."""
        if self.params.pairs:
            d = self.params.dim
            ys = batch.vectors[:, :, d].clone()
            ys[:, -1] = batch.values[:, -1]
            return batch.vectors[:, :, :d], ys
        return batch.vectors[:, 0::2], batch.values[:, 0::2]

    def predictions(self, logits: Tensor) -> Tensor:
        return logits[..., 0]

    def squared_errors(self, predictions: Tensor, batch: Batch) -> Tensor:
        """(B, k) squared error / error_scale (d for linear functions) at each query: position i has seen
        i examples. Under `pairs`, (B, 1): the one query's, which has seen k - 1 examples."""
        if self.params.pairs:
            return (predictions[:, -1:] - batch.values[:, -1:]) ** 2 / self.error_scale
        return (predictions[:, 0::2] - batch.values[:, 0::2]) ** 2 / self.error_scale

    def score(self, predictions: Tensor, batch: Batch) -> Tensor:
        errors = self.squared_errors(predictions, batch)
        if self.params.pairs:
            return errors[:, 0] < self.params.tolerance
        last = batch.meta["length"] - 1  # each sample's final query (samples may differ in length)
        return errors.gather(1, last.unsqueeze(1)).squeeze(1) < self.params.tolerance


@register_task
class ICLSparseRegression(ICLLinearRegression):
    """Sparse linear regression in context (Garg et al. 2022 sec. 4): w has `sparsity` nonzeros."""

    name = "icl_sparse_regression"
    description = "in-context linear regression where each w has only `sparsity` nonzero coordinates"

    @dataclass
    class Params(RegressionParams):
        sparsity: int = field(default=2, metadata={"help": "nonzero coordinates of w"})

    def validate(self) -> None:
        super().validate()
        check(self.params.sparsity >= 1, "task.sparsity", self.params.sparsity, "expected >= 1 for sparse regression")
