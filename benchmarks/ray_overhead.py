"""What Ray costs: the same 8-run sweep, trained by the local process pool and by Ray, on this machine.

Each contestant is the whole command a user types, timed from start to exit in a fresh run store:

    workbench sweep ... --vary train.seed=0,...,7 --workers 2 [--backend ray]

so Ray's share includes starting a local Ray instance, shipping the tasks and shutting it down. The
runs are identical (same ids and metrics); only the wall time differs. Contestants alternate
(local, ray, local, ray, ...); the overhead is (ray - local) / local in each round, reported as the
median with its range. Target: <= 10% of the local wall time.

    .venv/bin/python benchmarks/ray_overhead.py [--rounds 2] [--steps 1200] [--runs 8]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import ROOT, table

SWEEP = ["task.name=copy", "model.d_model=64", "model.n_layers=2"]
TARGET = 0.10


def timed_sweep(backend: str, steps: int, runs: int, workers: int) -> float:
    store = tempfile.mkdtemp(prefix=f"wb-bench-{backend}-")
    command = [sys.executable, "-m", "workbench", "sweep", *SWEEP, f"train.steps={steps}",
               "--vary", "train.seed=" + ",".join(map(str, range(runs))), "--workers", str(workers),
               "--backend", backend, "--quiet"]
    env = {**os.environ, "WORKBENCH_DATA": store, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    shutil.rmtree(store, ignore_errors=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=1200, help="training steps per run")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="cores used by both (Ray: the local instance's CPUs)")
    args = parser.parse_args()
    samples: dict[str, list[float]] = {"local": [], "ray": []}
    for _ in range(args.rounds):
        for backend in samples:
            samples[backend].append(timed_sweep(backend, args.steps, args.runs, args.workers))
    overheads = [ray / local - 1 for local, ray in zip(samples["local"], samples["ray"])]
    median = statistics.median(overheads)
    rows = [[backend, f"{statistics.median(times):.1f} s", ", ".join(f"{t:.1f}" for t in times)]
            for backend, times in samples.items()]
    print(f"## Ray overhead\n\n{args.runs} runs of {args.steps} steps ({' '.join(SWEEP)}), {args.workers} at a time, "
          f"{args.rounds} alternating rounds; wall time of the whole `workbench sweep` command, "
          "Ray's start and stop included.\n")
    print(table(["backend", "median wall", "per round (s)"], rows))
    verdict = "met" if median <= TARGET else "missed"
    print(f"\nRay's overhead: {median:+.1%} of the local wall time (rounds: "
          f"{', '.join(f'{o:+.1%}' for o in overheads)}); target <= {TARGET:.0%}: {verdict}")


if __name__ == "__main__":
    main()
