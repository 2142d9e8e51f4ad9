"""Run the configured probes on the fixed probe batch: one no-grad, eval-mode forward.

The training forward is never touched, so probes cannot change what the model learns. Probes that
need more than the probe batch (the memorization probe replays training data) get a ProbeContext.
"""
from __future__ import annotations

import torch

from . import attention, heads, memorization, outliers, sparsity, spectral  # noqa: F401  (registration)
from ..evaluate import eval_mode
from .registry import PROBES, ProbeContext, ProbeResult


def probe_names(probe_config) -> list[str]:
    names = []
    if probe_config.entropy:
        names.append("entropy")
    if probe_config.sparsity:
        names.append("sparsity")
    return names + [n for n in probe_config.extra if n not in names]


def run_probes(model, batch, names: list[str], snapshot_examples: int = 0, context: ProbeContext | None = None,
               arrays: bool = True) -> ProbeResult:
    """Rows from every named probe, plus attention-like maps of the first examples if asked.

    arrays=False drops the probes' own arrays (per-neuron activity, ...): the trainer keeps them
    only at snapshot steps. Attention maps come first in `arrays` (one row per example)."""
    probes = [PROBES.get(name)() for name in names]
    for probe in probes:
        probe.context = context
    suffixes = {s for p in probes for s in p.hooks}
    if snapshot_examples:
        suffixes.add("mixer.hook_pattern")
    with eval_mode(model), torch.no_grad():
        _, cache = model.run_with_cache(*batch.inputs(),
                                        names=lambda name: any(name.endswith(s) for s in suffixes))
        parts = [probe(model, batch, cache) for probe in probes]
    result = ProbeResult()
    if snapshot_examples:
        for name, value in cache.items():
            if name.endswith("mixer.hook_pattern"):
                layer = name.split(".")[1]
                result.arrays[f"pattern.{layer}"] = value[:snapshot_examples].float().contiguous()
    for part in parts:
        result.rows += part.rows
        if arrays:
            result.arrays.update(part.arrays)
    return result
