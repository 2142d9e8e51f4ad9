"""Keep freed activation buffers in the process instead of handing them back to the OS.

On Linux, glibc serves every allocation above its mmap threshold (128 KiB to 32 MiB, adjusted at
run time) with a fresh mmap and returns it with munmap when freed. A small model on a CPU
allocates and frees buffers of a few MiB per layer per forward, so every forward page-faults its
activations in again; on a 2-core laptop that was ~30% of a hooked forward (benchmarks/
hooked_forward.py). Raising the thresholds once makes glibc reuse the freed memory instead. The
cost: the process keeps its peak memory until it exits, which for models this size is a few
hundred MiB at most.

Applied once, when `workbench.models` is imported; `WORKBENCH_MALLOC_TUNING=0` turns it off.
Other platforms and C libraries are left as they are.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameter numbers from glibc's malloc.h
KEEP_BYTES = 1 << 25  # 32 MiB: the largest mmap threshold glibc documents


def tune_allocator() -> bool:
    """True when glibc accepted the new thresholds."""
    if os.environ.get("WORKBENCH_MALLOC_TUNING", "1") in ("0", "false", "no") or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl or another C library: nothing to tune
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, KEEP_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


TUNED = tune_allocator()
