"""Activation sparsity of the MLPs: the lazy-neuron metric (Li et al. 2023, arXiv 2210.06313).

The percentage of nonzero entries of the MLP activation per token, averaged over real tokens,
reported per layer; beside it the share of neurons that never fire on the probe batch (a block
without an MLP, model.mlp_ratio=0, has no rows). The distribution of per-neuron activity (the
share of tokens on which each neuron fires) goes into the snapshot arrays as
`neuron_activity.{layer}`, sorted from most to least active so steps compare.
"""
from __future__ import annotations

from .registry import Probe, ProbeResult, register_probe, row

NEURON_ACTIVITY = "neuron_activity."  # + the layer: the snapshot array of its neurons' firing shares


@register_probe("sparsity")
class ActivationSparsity(Probe):
    hooks = ("mlp.hook_post",)

    def __call__(self, model, batch, cache) -> ProbeResult:
        valid = (batch.tokens != 0).reshape(-1)
        rows, arrays = [], {}
        for layer, block in enumerate(model.blocks):
            if block.mlp is None:
                continue
            post = cache[f"blocks.{layer}.mlp.hook_post"]
            active = (post.reshape(-1, post.shape[-1])[valid] != 0).float()  # (tokens, neurons)
            rows.append(row("mlp_nonzero_fraction", active.mean(), layer))
            rows.append(row("dead_neuron_fraction", (active.sum(0) == 0).float().mean(), layer))
            arrays[f"{NEURON_ACTIVITY}{layer}"] = active.mean(0).sort(descending=True).values.contiguous()
        return ProbeResult(rows, arrays)
