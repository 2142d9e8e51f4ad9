"""Wall time of each named experiment: how long the workbench takes to show a phenomenon.

By default this reads the runtime in each experiment's shipped result (data/results/NAME.json, written by
`workbench experiment run NAME`) and its fast-mode result cached in the run store, and prints "not run"
for the others: `make bench` never launches full experiments.
`--run` trains the missing ones first, on `--threads` threads (2 = the laptop this targets);
`--fast` uses the small budgets the tests use.

    .venv/bin/python benchmarks/time_to_phenomenon.py [--run] [--fast] [--threads 2] [--only a,b]
"""
from __future__ import annotations

import argparse
import time

from common import set_threads, table



def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run experiments that have no cached result")
    parser.add_argument("--fast", action="store_true", help="the small budgets the tests use")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated experiment names (default: all)")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    from workbench.experiments import EXPERIMENTS, load_result, run_experiment
    from workbench.experiments.results import shipped_root

    names = [n for n in args.only.split(",") if n] or list(EXPERIMENTS)
    rows = []
    for name in names:
        if args.run and load_result(name, args.fast) is None:
            started = time.time()
            run_experiment(name, fast=args.fast, progress=False)
            print(f"ran {name} in {minutes(time.time() - started)}", flush=True)
        full, fast = load_result(name, False), load_result(name, True)
        cell = lambda r: "not run" if r is None else f"{minutes(r.runtime_s)} ({len(r.run_ids)} runs)"  # noqa: E731
        wall = "" if full is None or full.wall_s is None else f"{minutes(full.wall_s)} ({full.workers} at a time)"
        rows.append([name, cell(full), wall, cell(fast)])
    print(f"## Time to phenomenon\n\nFull-budget runtimes from the shipped results in {shipped_root()}, written by "
          f"`workbench experiment run NAME` (training time of all its runs); `--run` fills the gaps "
          f"({'fast' if args.fast else 'full'} budget, {threads} thread(s)); the wall column is the time the "
          f"call that trained the runs took with one run per core.\n")
    print(table(["experiment", "full budget (one core's work)", "full budget, wall", "fast budget (tests)"], rows),
          flush=True)


if __name__ == "__main__":
    main()
