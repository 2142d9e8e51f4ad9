"""Spectral norms beside entropy (Zhai et al. 2023, arXiv 2303.06296): the entropy of a head is bounded
below by a quantity that falls exponentially with the spectral norm of its attention logits.

- `qk_spectral_norm` per attention layer and head: ||W_Q,h^T W_K,h||_2, the bilinear form
  x_i^T (W_Q,h^T W_K,h) x_j behind the logits, before the 1/sqrt(d_head) scale (we have not
  confirmed whether the theorem's sigma includes it); the layer row (head -1) is the largest head.
- `spectral_norm_<module>` per layer for every linear layer of the block (mixer and MLP), from the
  effective weight (gamma / sigma(W) * W under sigma_reparam), plus `spectral_norm_max` per layer.
Exact norms (torch.linalg.matrix_norm, ord=2): the matrices are small, and the probe must not
advance the power iteration of sigma_reparam layers (the runner calls probes in eval mode).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ..models.linear import effective_weight
from .attention import attention_layers
from .registry import Probe, ProbeResult, register_probe, row


def spectral_norm(matrix: Tensor) -> float:
    return float(torch.linalg.matrix_norm(matrix.detach().float(), ord=2))


def query_key_products(attention) -> Tensor:
    """(H, D, D): W_Q,h^T W_K,h of each head of an Attention mixer (effective weights)."""
    weight = effective_weight(attention.qkv).detach()  # (3 H head_dim, D): rows are q, k, v outputs
    D, H, inner = weight.shape[1], attention.n_heads, weight.shape[0] // 3
    q, k = weight[:inner].view(H, inner // H, D), weight[inner:2 * inner].view(H, inner // H, D)
    return q.transpose(1, 2) @ k


def block_linears(block) -> list[tuple[str, nn.Linear]]:
    return [(name, module) for name, module in block.named_modules() if isinstance(module, nn.Linear)]


@register_probe("spectral_norm")
class SpectralNorm(Probe):
    def __call__(self, model, batch, cache) -> ProbeResult:
        rows = []
        for layer in attention_layers(model):
            norms = torch.linalg.matrix_norm(query_key_products(model.blocks[layer].mixer).float(), ord=2)
            rows += [row("qk_spectral_norm", v, layer, h) for h, v in enumerate(norms.tolist())]
            rows.append(row("qk_spectral_norm", norms.max(), layer))
        for layer, block in enumerate(model.blocks):
            norms = {name: spectral_norm(effective_weight(module)) for name, module in block_linears(block)}
            rows += [row("spectral_norm_" + name.replace(".", "_"), v, layer) for name, v in norms.items()]
            if norms:
                rows.append(row("spectral_norm_max", max(norms.values()), layer))
        return ProbeResult(rows)
