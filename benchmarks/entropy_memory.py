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
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.probes.peak_memory import measure_peak  # noqa: E402  (one home for the measurement)

MiB = 2 ** 20


def measure(backend: str, length: int, heads: int, head_dim: int, threads: int) -> dict:
    return measure_peak(backend, length, heads, head_dim, seed=0, threads=threads)


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
    args = parser.parse_args()

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
