"""Training-time overhead of the probes at their cadence, as ratios measured in one run (target <= 10%).

Two measurements, both in this process on the same config:
1. whole runs: the trainer with probes off (probes.every=0) vs with the default probes at the
   default cadence (entropy + sparsity + attention snapshots every 100 steps), interleaved
   `--repeats` times; the ratio is (probed - plain) / plain of the median elapsed time;
2. per call: the median time of one run_probes call vs one training step, scaled by the cadence:
   probe_call / (every * step).
Extra probes (spectral_norm, outliers, memorization, ...) can be added with --extra to see theirs.

    .venv/bin/python benchmarks/probe_overhead.py [--steps 300] [--repeats 2] [--extra spectral_norm,outliers]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.config import RunConfig  # noqa: E402
from workbench.models import build_model  # noqa: E402
from workbench.probes import ProbeContext, probe_names, run_probes  # noqa: E402
from workbench.tasks import build_task  # noqa: E402
from workbench.train import train  # noqa: E402

BASE = ["train.eval_every=0", "train.checkpoint_every=0", "train.threads=1"]


def whole_runs(overrides: list[str], steps: int, repeats: int, extra: str) -> tuple[float, float]:
    """Median elapsed seconds (plain, probed) of full training runs."""
    plain, probed = [], []
    for repeat in range(repeats):
        with tempfile.TemporaryDirectory() as root:
            seed = f"train.seed={repeat}"
            a = RunConfig.load(None, [*BASE, *overrides, f"train.steps={steps}", "probes.every=0", seed])
            b = RunConfig.load(None, [*BASE, *overrides, f"train.steps={steps}", seed]
                               + ([f"probes.extra={extra}"] if extra else []))
            plain.append(train(a, progress=False, root=Path(root)).status()["elapsed_s"])
            probed.append(train(b, progress=False, root=Path(root)).status()["elapsed_s"])
    return statistics.median(plain), statistics.median(probed)


def per_call(overrides: list[str], extra: str, samples: int = 20) -> tuple[float, float, int, list[str]]:
    """(median training-step seconds, median probe-call seconds, cadence, probe names)."""
    config = RunConfig.load(None, [*BASE, *overrides] + ([f"probes.extra={extra}"] if extra else []))
    torch.set_num_threads(1)
    task = build_task(config.task.name, config.task.params)
    model = build_model(config.model, len(task.vocab), seed=0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.train.lr)
    generator = torch.Generator().manual_seed(0)
    probe_batch = task.sample(config.probes.batch, torch.Generator().manual_seed(1), train=False)
    names, context = probe_names(config.probes), ProbeContext(task, config)
    steps, calls = [], []
    for _ in range(samples):
        batch = task.sample(config.train.batch_size, generator)
        started = time.perf_counter()
        logits = model(batch.tokens, batch.position_ids)
        loss = F.cross_entropy(logits[batch.loss_mask], batch.targets[batch.loss_mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps.append(time.perf_counter() - started)
        started = time.perf_counter()
        run_probes(model, probe_batch, names, config.probes.snapshot_examples, context=context)
        calls.append(time.perf_counter() - started)
    return statistics.median(steps), statistics.median(calls), config.probes.every, names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--extra", default="", help="further probes, comma-separated")
    parser.add_argument("overrides", nargs="*", help="config overrides (default: the default config)")
    args = parser.parse_args()
    step, call, every, names = per_call(args.overrides, args.extra)
    plain, probed = whole_runs(args.overrides, args.steps, args.repeats, args.extra)
    print(f"probes: {', '.join(names)} every {every} steps (+ snapshots); config overrides: {args.overrides or 'none'}")
    print(f"{'measurement':<34}{'plain':>10}{'probed':>10}{'overhead':>10}")
    print(f"{'whole run, ' + str(args.steps) + ' steps (s)':<34}{plain:>10.2f}{probed:>10.2f}"
          f"{(probed - plain) / plain:>10.1%}")
    print(f"{'per step: step vs call/every (ms)':<34}{step * 1e3:>10.2f}{call * 1e3 / every:>10.3f}"
          f"{call / (every * step):>10.1%}")
    print(f"one probe call: {call * 1e3:.1f} ms = {call / step:.2f} training steps; target overhead <= 10%")


if __name__ == "__main__":
    main()
