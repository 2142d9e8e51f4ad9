"""Probes: what we measure inside a model (entropy, sparsity, ...), as tidy rows and snapshot maps."""
from .registry import PROBES, Probe, ProbeResult, register_probe, row  # noqa: F401
from . import attention, sparsity  # noqa: F401  (registration)
from .runner import probe_names, run_probes  # noqa: F401
