"""Linear layers, plain or with sigmaReparam (Zhai et al. 2023, arXiv 2303.06296).

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
    """The weight the layer multiplies by: sigmaReparam's rescaled one, or the plain parameter."""
    return layer.effective_weight() if isinstance(layer, SigmaReparamLinear) else layer.weight


def linear_backward(grad_out: Tensor, inputs: Tensor, weight: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(grad of inputs, of weight, of bias) for rows = inputs @ weight.t() + bias, both 2-D (rows,
    features). Hand-written backwards (relu_mlp.py, attention_fused.py) built on it give autograd's
    numbers bit for bit (their tests compare with torch.equal).

    The weight gradient sums over rows either way; for a weight with more outputs than inputs
    (qkv, the MLP's fc_in) it is computed as (inputs^T grad_out)^T, which MKL runs 13-25% faster
    than autograd's grad_out^T inputs (a product with a wide output beats a tall one) with
    the same sums in the same order: equal bit for bit on 351 shapes, 1 to 40,000 rows, on 1
    and 2 threads (benchmarks/throughput.py has the step-level effect)."""
    if weight.shape[0] > weight.shape[1]:
        grad_weight = inputs.t().mm(grad_out).t().contiguous()
    else:
        grad_weight = grad_out.t().mm(inputs)
    return grad_out.mm(weight), grad_weight, grad_out.sum(0)
