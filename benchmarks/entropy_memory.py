"""CPU peak memory and time of attention entropy: the chunked path vs the materialized reference.

Each case runs in a fresh subprocess that resets the kernel's peak-RSS counter (VmHWM, via
/proc/self/clear_refs) after its inputs exist, runs one no-grad `attention_entropy` call and
reports the peak RSS above that point, so the numbers are what the computation itself adds.
The reference at the longest length runs only when an estimate scaled from the previous length
fits comfortably in the memory available now; otherwise the table says it was skipped.

    .venv/bin/python benchmarks/entropy_memory.py [--lengths 1024,4096,16384] [--heads 2]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MiB = 2 ** 20


def current_rss() -> int:
    return _status_kib("VmRSS") * 1024


def peak_rss() -> int:
    return _status_kib("VmHWM") * 1024


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status (this benchmark needs Linux)")


def run_case(backend: str, length: int, heads: int, head_dim: int, threads: int) -> dict:
    """Inside the subprocess: one measured call."""
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(threads)
    try:
        from workbench.kernels import attention_entropy
    except ImportError:
        from kernels import attention_entropy
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, heads, length, head_dim, generator=g) for _ in range(3))
    with torch.no_grad():
        attention_entropy(q[..., :64, :], k[..., :64, :], v[..., :64, :], backend=backend)  # warm up
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        before = current_rss()
        start = time.perf_counter()
        _, _, entropy = attention_entropy(q, k, v, backend=backend)
        seconds = time.perf_counter() - start
    return {"peak_bytes": max(peak_rss() - before, 0), "seconds": seconds,
            "mean_entropy": float(entropy.mean())}


def measure(backend: str, length: int, heads: int, head_dim: int, threads: int) -> dict:
    command = [sys.executable, __file__, "--case", backend, str(length), str(heads), str(head_dim), str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="1024,4096,16384")
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads per case (1: steadier timings on a shared machine)")
    parser.add_argument("--case", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        backend, length, heads, head_dim, threads = args.case[0], *map(int, args.case[1:])
        print(json.dumps(run_case(backend, length, heads, head_dim, threads)))
        return

    lengths = [int(x) for x in args.lengths.split(",")]
    print(f"Attention entropy on the CPU: B=1, H={args.heads}, Dh={args.head_dim}, causal, float32, no grad, "
          f"{args.threads} thread(s); chunked tiles of 256 x 256.")
    print("Peak = resident memory the call adds above its inputs; ratio = reference / chunked.\n")
    print("| T | reference peak (MiB) | chunked peak (MiB) | memory ratio | reference time (s) "
          "| chunked time (s) | time ratio | mean entropy ref / chunked |")
    print("|---|---|---|---|---|---|---|---|")
    previous = None  # (length, reference peak) to extrapolate the next reference's memory
    for length in lengths:
        chunked = measure("chunked", length, args.heads, args.head_dim, args.threads)
        estimate = previous[1] * (length / previous[0]) ** 2 if previous else 0
        if estimate < 0.5 * available_bytes():
            reference = measure("reference", length, args.heads, args.head_dim, args.threads)
            previous = (length, reference["peak_bytes"])
            print(f"| {length} | {reference['peak_bytes'] / MiB:.0f} | {chunked['peak_bytes'] / MiB:.1f} "
                  f"| {reference['peak_bytes'] / max(chunked['peak_bytes'], 1):.0f}x "
                  f"| {reference['seconds']:.2f} | {chunked['seconds']:.2f} "
                  f"| {reference['seconds'] / chunked['seconds']:.2f} "
                  f"| {reference['mean_entropy']:.5f} / {chunked['mean_entropy']:.5f} |")
        else:
            print(f"| {length} | skipped: needs ~{estimate / MiB:.0f} (scaled from T={previous[0]}), "
                  f"{available_bytes() / MiB:.0f} available | {chunked['peak_bytes'] / MiB:.1f} "
                  f"| ~{estimate / max(chunked['peak_bytes'], 1):.0f}x (estimated) | - "
                  f"| {chunked['seconds']:.2f} | - | - / {chunked['mean_entropy']:.5f} |")


if __name__ == "__main__":
    main()
