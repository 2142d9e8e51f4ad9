"""Probes: what we measure inside a model (entropy, sparsity, spectral norms, outliers,
memorization), as tidy rows and snapshot maps; entropy vs evaluation length through the kernels."""
from .registry import PROBES, Probe, ProbeContext, ProbeResult, register_probe, row  # noqa: F401
from . import attention, memorization, outliers, sparsity, spectral  # noqa: F401  (registration)
from .entropy_length import entropy_vs_length  # noqa: F401
from .runner import probe_names, run_probes  # noqa: F401
