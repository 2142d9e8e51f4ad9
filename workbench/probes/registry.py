"""The probe contract: listen at hook points on a fixed probe batch, return tidy rows.

A probe gets the cache of one no-grad forward on the probe batch (hook name -> tensor) and returns
rows `{probe, layer, head, length, value}`; the trainer adds `step`. It may also return arrays
(name -> tensor) saved as a snapshot. Probes never change the model's output: they run on a
separate forward in eval mode.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

from ..registry import Registry

PROBES: Registry[type["Probe"]] = Registry("probe", "probes.extra")


@dataclass
class ProbeResult:
    rows: list[dict] = field(default_factory=list)
    arrays: dict[str, Tensor] = field(default_factory=dict)


@dataclass
class ProbeContext:
    """What the trainer knows beyond the probe batch, for probes that build their own data (the
    memorization probe replays the first training batch): the task and the run's config."""

    task: object
    config: object


class Probe:
    name = "probe"
    hooks: tuple[str, ...] = ()  # hook-name suffixes this probe needs, e.g. ("mixer.hook_pattern",)
    context: ProbeContext | None = None  # set by run_probes when the caller has one
    # True where the probe builds token sequences of its own (detectors, memorization replays): it
    # cannot run on a task whose inputs are real-valued vectors
    tokens_only: bool = False

    def __call__(self, model, batch, cache: dict[str, Tensor]) -> ProbeResult:
        raise NotImplementedError


register_probe = PROBES.register_class


def row(probe: str, value: float, layer: int = -1, head: int = -1, length: int = -1) -> dict:
    return {"probe": probe, "layer": layer, "head": head, "length": length, "value": float(value)}
