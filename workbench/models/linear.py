"""Linear layers, plain or with sigmaReparam (Zhai et al. 2023, seed 002 #108).

sigmaReparam: W_hat = gamma / sigma(W) * W, sigma estimated by one power-iteration step per
training forward (apple/ml-sigma-reparam, vision/layers.py: u, v updated under no_grad, sigma =
v^T W u computed with gradients). gamma starts at sigma(W_0) as in that code, so the function is
unchanged at initialization (the JAX code and the paper start gamma at 1; we log our choice here).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class SigmaReparamLinear(nn.Linear):
    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__(in_features, out_features, bias)
        with torch.no_grad():
            _, singular, vh = torch.linalg.svd(self.weight, full_matrices=False)
        self.register_buffer("u", vh[0].clone())
        self.gamma = nn.Parameter(singular[0].clone().reshape(()))

    def spectral_norm(self) -> Tensor:
        """sigma(W) = v^T W u with u, v from one power-iteration step (u updated in training)."""
        with torch.no_grad():
            v = F.normalize(self.weight @ self.u, dim=0)
            if self.training:
                self.u.copy_(F.normalize(self.weight.t() @ v, dim=0))
        return v @ self.weight @ self.u

    def effective_weight(self) -> Tensor:
        return self.weight * (self.gamma / self.spectral_norm())

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.effective_weight(), self.bias)


def make_linear(in_features: int, out_features: int, bias: bool = True, sigma_reparam: bool = False) -> nn.Linear:
    cls = SigmaReparamLinear if sigma_reparam else nn.Linear
    return cls(in_features, out_features, bias)


def effective_weight(layer: nn.Linear) -> Tensor:
    return layer.effective_weight() if isinstance(layer, SigmaReparamLinear) else layer.weight


def weight_of(linear: nn.Linear) -> Tensor:
    """The weight the layer multiplies by: sigmaReparam's rescaled one, or the plain parameter."""
    return linear.effective_weight() if isinstance(linear, SigmaReparamLinear) else linear.weight


def linear_backward(grad_out: Tensor, inputs: Tensor, weight: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(grad of inputs, of weight, of bias) for rows = inputs @ weight.t() + bias, both 2-D (rows,
    features), with the matmul layouts autograd's addmm backward uses: hand-written backwards
    (relu_mlp.py, attention_fused.py) built on it give autograd's numbers bit for bit."""
    return grad_out.mm(weight), grad_out.t().mm(inputs), grad_out.sum(0)
