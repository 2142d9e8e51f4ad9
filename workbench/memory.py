"""Will a model fit in memory? Asked before training allocates anything, so that a typo such as
`model.d_model=100000` ends in one line instead of an allocation traceback from deep in torch.

The parameter count is exact: the model is built on PyTorch's meta device, which records shapes and
allocates nothing. Training in float32 with AdamW holds four numbers per parameter (the weight, its
gradient and Adam's two moments); activations come on top, so the estimate is a lower bound.
"""
from __future__ import annotations

import os

from .errors import ConfigError

BYTES_PER_PARAMETER = 4 * 4  # float32 x (weight, gradient, Adam's first and second moments)


def parameter_count(config) -> int:
    """The number of parameters the config's model has, without allocating them."""
    import torch

    from .models import model_for_task
    from .tasks import build_task

    task = build_task(config.task.name, config.task.params)
    with torch.device("meta"):
        model = model_for_task(config.model, task)  # no seed: meta tensors draw no random numbers
    return sum(p.numel() for p in model.parameters())


def available_bytes() -> int | None:
    """Memory this machine can give a new process now (MemAvailable), or None where unknown."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_fits_in_memory(config) -> int:
    """The parameter count, or a ConfigError when training the model needs more memory than is available.
    WORKBENCH_MEMORY_BYTES overrides what is available (tests; a share of a machine)."""
    n_parameters = parameter_count(config)
    needed = n_parameters * BYTES_PER_PARAMETER
    override = os.environ.get("WORKBENCH_MEMORY_BYTES")
    available = int(override) if override else available_bytes()
    if available is not None and needed > available:
        m = config.model
        raise ConfigError("model", f"d_model={m.d_model} n_layers={len(m.layer_mixers())}",
                          f"{n_parameters:,} parameters need at least {_size(needed)} to train (weights, gradients "
                          f"and Adam's two moments in float32), but only {_size(available)} of memory is available")
    return n_parameters


def _size(n_bytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n_bytes < 1024:
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.1f} TiB"
