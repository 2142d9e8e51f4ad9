"""Garg et al.'s other function classes (Garg, Tsipras, Liang and Valiant 2022, "What can Transformers
learn in-context? A case study of simple function classes", arXiv 2208.01066, sec. 5): the layout,
read-in, noise and input options of in-context linear regression, with each sequence's function drawn
from a richer class, as in the paper's code:

- `icl_relu_network`: y = sqrt(2 / h) * relu(x W1) w2, W1 (d, h) and w2 (h,) ~ N(0, 1) entries, h =
  `hidden` (100 in the paper). The sqrt(2 / h) keeps E[y^2] = d, the linear task's scale.
- `icl_decision_tree`: a full binary tree of depth `depth` (4 in the paper); each inner node tests the
  sign of one coordinate drawn uniformly (x_c > 0 goes right), each leaf holds a value ~ N(0, 1), so
  E[y^2] = 1 and errors are divided by 1, not d.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..errors import check
from .base import register_task
from .icl_regression import ICLLinearRegression, RegressionParams


class _OtherFunctionClass(ICLLinearRegression):
    """Sparsity belongs to linear functions; the other options apply to every class."""

    def validate(self) -> None:
        super().validate()
        check(self.params.sparsity == 0, "task.sparsity", self.params.sparsity,
              f"expected 0: sparsity applies to linear functions, not {self.name}")


@register_task
class ICLReluNetwork(_OtherFunctionClass):
    name = "icl_relu_network"
    description = "predict y = f(x) for a fresh random 2-layer ReLU network f per sequence from the examples before it"

    @dataclass
    class Params(RegressionParams):
        hidden: int = field(default=100, metadata={"help": "hidden units of each sequence's network"})

    def validate(self) -> None:
        super().validate()
        check(1 <= self.params.hidden <= 4096, "task.hidden", self.params.hidden, "expected 1..4096")

    def draw_function(self, m: int, generator) -> dict[str, Tensor]:
        d, h = self.params.dim, self.params.hidden
        return {"first_layer": torch.randn(m, d, h, generator=generator),
                "second_layer": torch.randn(m, h, generator=generator)}

    def evaluate(self, function: dict[str, Tensor], xs: Tensor) -> Tensor:
        hidden = torch.relu(xs @ function["first_layer"])
        return (hidden @ function["second_layer"].unsqueeze(-1)).squeeze(-1) * math.sqrt(2 / self.params.hidden)


@register_task
class ICLDecisionTree(_OtherFunctionClass):
    name = "icl_decision_tree"
    description = "predict y = f(x) for a fresh random decision tree f per sequence from the examples before it"

    @dataclass
    class Params(RegressionParams):
        depth: int = field(default=4, metadata={"help": "depth of each sequence's tree (2^depth leaves)"})

    def validate(self) -> None:
        super().validate()
        check(1 <= self.params.depth <= 12, "task.depth", self.params.depth, "expected 1..12")

    error_label = "squared error"

    @property
    def error_scale(self) -> float:
        return 1.0  # leaf values ~ N(0, 1)

    def draw_function(self, m: int, generator) -> dict[str, Tensor]:
        inner, leaves = 2 ** self.params.depth - 1, 2 ** self.params.depth
        return {"split_coordinates": torch.randint(0, self.params.dim, (m, inner), generator=generator),
                "leaf_values": torch.randn(m, leaves, generator=generator)}

    def evaluate(self, function: dict[str, Tensor], xs: Tensor) -> Tensor:
        """Walk every x down its sequence's tree: nodes are numbered as in a heap (children of n are
        2n + 1 and 2n + 2), so after `depth` steps node - (2^depth - 1) is the leaf."""
        m, k, _ = xs.shape
        node = torch.zeros(m, k, dtype=torch.long)
        for _ in range(self.params.depth):
            coordinate = function["split_coordinates"].gather(1, node)
            right = xs.gather(2, coordinate.unsqueeze(-1)).squeeze(-1) > 0
            node = 2 * node + 1 + right.long()
        return function["leaf_values"].gather(1, node - (2 ** self.params.depth - 1))
