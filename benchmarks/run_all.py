"""`make bench`: every CPU benchmark in turn, each in its own process, printing its tables.

Each benchmark runs as a subprocess (its own thread setting and imports; one crash does not hide
the others' tables) with a time limit, so the whole set stays well inside 15 minutes on a
2-core laptop. A benchmark file another engineer has not written yet is reported as missing.
GPU benchmarks (gpu_kernels.py) are not run here: they need a CUDA device.

    .venv/bin/python benchmarks/run_all.py [--quick]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (file, arguments, arguments with --quick, time limit in seconds)
BENCHMARKS = [
    ("throughput.py", [], ["--rounds", "1", "--loop-steps", "100", "--model-steps", "5"], 660),
    ("hooked_forward.py", [], ["--rounds", "2", "--calls", "3"], 120),
    ("patching_sweep.py", [], ["--rounds", "1"], 120),
    ("gemm_backends.py", [], ["--rounds", "1", "--calls", "3"], 120),
    ("relative_training.py", [], ["--rounds", "1", "--steps", "3"], 300),
    ("length_buckets.py", [], ["--rounds", "1", "--steps", "3", "--buckets", "4"], 240),
    ("mixer_forms.py", [], ["--rounds", "1", "--steps", "3"], 240),
    ("probe_overhead.py", [], ["--steps", "100", "--repeats", "1"], 240),
    ("live_view_cost.py", [], ["--steps", "100", "--rounds", "1"], 420),
    ("entropy_memory.py", ["--lengths", "1024,4096,8192"], ["--lengths", "1024,2048"], 180),
    ("time_to_phenomenon.py", [], [], 60),
    ("ray_overhead.py", [], ["--rounds", "1", "--steps", "200", "--runs", "4"], 900),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round each: a smoke run, not a measurement")
    args = parser.parse_args()
    started = time.time()
    for name, arguments, quick, limit in BENCHMARKS:
        path = HERE / name
        print(f"\n<!-- benchmarks/{name} -->", flush=True)
        if not path.exists():
            print(f"benchmarks/{name}: not written yet; skipped.")
            continue
        begun = time.time()
        try:
            done = subprocess.run([sys.executable, str(path), *(quick if args.quick else arguments)], cwd=HERE.parent,
                                  timeout=limit, capture_output=True, text=True)
        except subprocess.TimeoutExpired as timeout:
            output = timeout.stdout.decode() if isinstance(timeout.stdout, bytes) else (timeout.stdout or "")
            print(output + f"\nbenchmarks/{name}: stopped after its {limit} s limit (a busy machine?).", flush=True)
            continue
        print(done.stdout.rstrip(), flush=True)
        if done.returncode != 0:
            print(f"\nbenchmarks/{name} failed (exit {done.returncode}):\n" + "\n".join(done.stderr.splitlines()[-15:]))
        print(f"\n({name}: {time.time() - begun:.0f} s)", flush=True)
    print(f"\nAll benchmarks: {(time.time() - started) / 60:.1f} min.")


if __name__ == "__main__":
    main()
