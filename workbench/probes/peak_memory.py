"""Peak resident memory of one no-grad attention_entropy call, and the bound the chunked path obeys.

`measure_peak(backend, length, ...)` runs the call in a fresh Python subprocess: inputs are made
and a small warm-up call runs first, then the kernel's peak-RSS counter (VmHWM) is reset through
/proc/self/clear_refs, so the number returned is what the computation itself adds. Linux only.

`chunked_bound(T, H, Dh, tile)` is derived from the algorithm (kernels/attention_reference.py,
attention_entropy_chunked), not from a run: per query block the path holds the running m, l, t
(H x tile each) and acc (H x tile x Dh), and per key tile a few (H x tile x tile) float32 tensors
(s, the mask, shifted, p, p * shifted); the outputs (out H x T x Dh, lse and entropy H x T) exist
twice at the end (the per-block pieces and torch.cat's result). The reference materializes at
least one H x T x T float32 matrix of probabilities: `reference_floor(T, H) = 4 H T^2`.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

FLOAT = 4  # bytes of float32
TILE_TENSORS = 8  # (tile x tile) tensors alive at once per head, counted generously (5 named above)
SLACK = 2.0  # factor on the algorithmic working set: temporaries we did not count, rounding
OVERHEAD = 32 * 2 ** 20  # allocator arenas and interpreter pages touched by the call itself
ROOT = Path(__file__).resolve().parents[2]


def chunked_bound(length: int, heads: int, head_dim: int, tile: int = 256) -> int:
    """Allowed extra bytes for the chunked path at batch 1: SLACK x working set + OVERHEAD."""
    outputs = 2 * FLOAT * heads * length * (head_dim + 2)  # block pieces + concatenated copy
    tiles = TILE_TENSORS * FLOAT * heads * tile * tile
    block_state = FLOAT * heads * tile * (2 * head_dim + 3)  # m, l, t, acc and the p @ v product
    return int(SLACK * (outputs + tiles + block_state)) + OVERHEAD


def reference_floor(length: int, heads: int) -> int:
    """The least the materialized reference can add: one H x T x T float32 matrix."""
    return FLOAT * heads * length * length


def _status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _require_linux() -> None:
    if not sys.platform.startswith("linux") or not Path("/proc/self/clear_refs").exists():
        raise RuntimeError("peak-memory measurement needs Linux (/proc/self/status and /proc/self/clear_refs); "
                           f"this is {sys.platform}")


def run_case(backend: str, length: int, heads: int, head_dim: int, seed: int = 0, threads: int = 1) -> dict:
    """Inside the subprocess: one measured call."""
    import torch

    from workbench.kernels import attention_entropy

    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, heads, length, head_dim, generator=g) for _ in range(3))
    with torch.no_grad():
        attention_entropy(q[..., :64, :], k[..., :64, :], v[..., :64, :], backend=backend)  # warm up
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        before = _status_bytes("VmRSS")
        start = time.perf_counter()
        _, _, entropy = attention_entropy(q, k, v, backend=backend)
        seconds = time.perf_counter() - start
    return {"peak_bytes": max(_status_bytes("VmHWM") - before, 0), "seconds": seconds,
            "mean_entropy": float(entropy.mean())}


def measure_peak(backend: str, length: int, heads: int = 2, head_dim: int = 32, seed: int = 0,
                 threads: int = 1) -> dict:
    """Run one call in a fresh subprocess; returns peak_bytes (added peak RSS), seconds, mean_entropy."""
    _require_linux()
    code = (f"import json; from workbench.probes.peak_memory import run_case; "
            f"print(json.dumps(run_case({backend!r}, {length}, {heads}, {head_dim}, {seed}, {threads})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {backend} at T={length} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
