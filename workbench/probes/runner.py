"""Run the configured probes on the fixed probe batch: one no-grad, eval-mode forward.

The training forward is never touched, so probes cannot change what the model learns.
"""
from __future__ import annotations

import torch

from . import attention, sparsity  # noqa: F401  (registration)
from .registry import PROBES, ProbeResult


def probe_names(probe_config) -> list[str]:
    names = []
    if probe_config.entropy:
        names.append("entropy")
    if probe_config.sparsity:
        names.append("sparsity")
    return names + [n for n in probe_config.extra if n not in names]


def run_probes(model, batch, names: list[str], snapshot_examples: int = 0) -> ProbeResult:
    """Rows from every named probe, plus attention-like maps of the first examples if asked."""
    probes = [PROBES.get(name)() for name in names]
    suffixes = {s for p in probes for s in p.hooks}
    if snapshot_examples:
        suffixes.add("mixer.hook_pattern")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            _, cache = model.run_with_cache(batch.tokens, batch.position_ids,
                                            names=lambda name: any(name.endswith(s) for s in suffixes))
    finally:
        model.train(was_training)
    result = ProbeResult()
    for probe in probes:
        part = probe(model, batch, cache)
        result.rows += part.rows
        result.arrays.update(part.arrays)
    if snapshot_examples:
        for name, value in cache.items():
            if name.endswith("mixer.hook_pattern"):
                layer = name.split(".")[1]
                result.arrays[f"pattern.{layer}"] = value[:snapshot_examples].float().contiguous()
    return result
