"""Shared helpers for the benchmarks: thread control, interleaved timing, the machine's matmul peak,
model-FLOPs utilization and a markdown table printer.

Timing on a shared CPU is noisy, so every comparison is measured in one process, with the
contestants interleaved (A B A B ...) after a warm-up, and each reported time is the median over
rounds. Ratios come from the same run: the median of the ratios measured within each round, with
their range over rounds (paired_speedup). They are printed, never asserted.

Model-FLOPs utilization (MFU), as in Kaplan et al. 2020 (Table 1) and the PaLM paper (App. B):

    training FLOPs per token = 6 * N + 6 * n_layers * T * d_model
    MFU = tokens/s * FLOPs per token / measured fp32 matmul peak (FLOP/s)

N counts the parameters of the matrix multiplies (attention q/k/v/out, MLP, unembedding, with
their biases), not embeddings or position tables (lookups, no multiply) nor LayerNorms. The
second term is the attention scores and the weighted sum of values (2 * T * d multiply-adds per
token and layer forward, times 3 for forward + backward), counted over the full T x T square as
those papers do, though a causal kernel may skip half of it. The peak is a large fp32
torch.matmul on this machine with the same thread count, so MFU says how close a model's step
comes to what the hardware does on the easiest possible workload.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
# Last, not first: the repo's top-level folder `kernels/` (imported as workbench.kernels) must not
# shadow the PyPI package `kernels`, which recent transformers (under transformer-lens) imports.
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

DEFAULT_THREADS = 1  # one thread per process: steadier on a CPU that other jobs share


def timing_parser(doc: str, rounds: int, count: str, count_default: int, count_help: str) -> argparse.ArgumentParser:
    """The options every paired timing takes: --threads, --rounds, and how much work one timing does."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument(f"--{count}", type=int, default=count_default, help=count_help)
    return parser


def set_threads(threads: int) -> int:
    """Pin torch's intra-op threads (0 keeps torch's default); returns the count in use."""
    if threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def interleaved_samples(contestants: dict[str, Callable[[], float | dict[str, float] | None]], rounds: int,
                        warmup: int = 1) -> dict[str, list[float]]:
    """Each contestant's callable (seconds per unit of work), once per round, for `rounds` rounds.

    Contestants run in turn within a round (A B C, A B C, ...), so a burst of load from another
    job hits all of them alike. A contestant returning None is skipped (not available)."""
    for _ in range(warmup):
        for fn in contestants.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds):
        for name, fn in contestants.items():
            value = fn()
            if value is None:
                continue
            # a dict holds timings measured together, e.g. a contestant and the reference run beside it
            for key, seconds in (value.items() if isinstance(value, dict) else [(name, value)]):
                samples.setdefault(key, []).append(seconds)
    return {name: values for name, values in samples.items() if values}


def beside(name: str, reference: str = "plain") -> str:
    """The sample name of `reference`'s timing taken in alternation with `name` (alternating())."""
    return f"{reference} beside {name}"


def alternating(name: str, contestant: Callable[[], object], reference: Callable[[], object], calls: int,
                chunk: int, reference_name: str = "plain") -> dict[str, float]:
    """Seconds per call of `contestant` and of `reference` (keyed `name` and beside(name)), run in
    alternating chunks of `chunk` calls until each has made `calls`.

    The speed of a shared CPU drifts in phases of several seconds (here the same training step
    took 165-250 ms, phase by phase, with no steal time recorded), longer than a contestant's
    whole timing. Chunks of a second or two put both sides of a ratio in the same phases."""
    spent, done = [0.0, 0.0], 0
    while done < calls:
        n = min(chunk, calls - done)
        for side, fn in enumerate((contestant, reference)):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            spent[side] += time.perf_counter() - start
        done += n
    return {name: spent[0] / calls, beside(name, reference_name): spent[1] / calls}


def trainer(overrides: list[str], steps: int, batch_size: int, length_buckets: int = 1) -> Callable[[], float]:
    """A function that trains the config's model `steps` steps (AdamW, the trainer's own loss) on batches
    drawn once, off the clock as in training (cut into `length_buckets` as training does), and returns
    seconds per step."""
    from workbench.batch_stream import prepare, training_loss
    from workbench.config import RunConfig
    from workbench.models import model_for_task
    from workbench.tasks import task_for

    config = RunConfig.load(None, overrides)
    task = task_for(config.task)
    model = model_for_task(config.model, task, seed=0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    batches = [prepare(task.sample(batch_size, generator), length_buckets) for _ in range(steps)]

    def run() -> float:
        start = time.perf_counter()
        for batch in batches:
            loss = training_loss(model, batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        return (time.perf_counter() - start) / steps
    return run


def with_attributes(run: Callable[[], float], swaps: list[tuple[object, str, object]]) -> Callable[[], float]:
    """`run` with each (owner, attribute name, value) set for the call and restored after it: how a benchmark
    times the code path a shortcut replaced."""
    def swapped() -> float:
        saved = [(owner, name, getattr(owner, name)) for owner, name, _ in swaps]
        for owner, name, value in swaps:
            setattr(owner, name, value)
        try:
            return run()
        finally:
            for owner, name, value in saved:
                setattr(owner, name, value)
    return swapped


def paired_timing_row(ours: Callable[[], float], theirs: Callable[[], float], rounds: int) -> list[str]:
    """[ms per unit, ours; ms per unit, theirs; speed-up with its range], the two interleaved in each round."""
    samples = interleaved_samples({"ours": ours, "theirs": theirs}, rounds)
    seconds = medians(samples)
    return [f"{seconds['ours'] * 1e3:.1f}", f"{seconds['theirs'] * 1e3:.1f}", paired_speedup(samples, "ours", "theirs")]


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(values) for name, values in samples.items()}


def interleaved(contestants: dict[str, Callable[[], float]], rounds: int, warmup: int = 1) -> dict[str, float]:
    """Median over `rounds` of what each contestant's callable returns (see interleaved_samples)."""
    return medians(interleaved_samples(contestants, rounds, warmup))


def paired_speedup(samples: dict[str, list[float]], fast: str, slow: str) -> str:
    """How many times faster `fast` ran than `slow`: the median over rounds of the ratio measured
    within each round (slow's seconds / fast's), with the range over rounds in brackets.

    Pairing within a round cancels the load that drifts between rounds, which moves both
    contestants of a round alike; the range shows what is left of the machine's noise."""
    if fast not in samples or slow not in samples:
        return "n/a"
    ratios = round_ratios(samples, fast, slow)
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}x"
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def round_ratios(samples: dict[str, list[float]], fast: str, slow: str) -> list[float]:
    return [s / f for f, s in zip(samples[fast], samples[slow])]


def target_lines(samples: dict[str, list[float]], targets: list[tuple[str, str, float]]) -> str:
    """One line per (fast, slow, least speed-up) target of the issue: the paired median, met or missed,
    and whether the range over rounds stays on the same side (else the machine's noise decides)."""
    lines = []
    for fast, slow, least in targets:
        if fast not in samples or slow not in samples:
            continue
        ratios = round_ratios(samples, fast, slow)
        median = statistics.median(ratios)
        verdict = "met" if median >= least else "missed"
        if len(ratios) > 1 and min(ratios) < least <= max(ratios):
            verdict += ", within the range over rounds"
        lines.append(f"- {fast} vs {slow}: {median:.2f}x, target >= {least}x: {verdict}")
    return "Targets:\n" + "\n".join(lines) if lines else ""


def seconds_per_call(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def matmul_peak(threads: int, size: int = 1024, repeats: int = 5) -> float:
    """The machine's fp32 matmul rate in FLOP/s: the best of `repeats` timings of a size^3 matmul
    (best, not median: the peak is what the hardware can do when nothing else interferes)."""
    set_threads(threads)
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(size, size, generator=g), torch.randn(size, size, generator=g)
    torch.matmul(a, b)  # warm-up
    best = min(seconds_per_call(lambda: torch.matmul(a, b), 3) for _ in range(repeats))
    return 2 * size ** 3 / best


def matmul_parameters(model: torch.nn.Module) -> int:
    """N for the MFU formula: weights and biases of every nn.Linear (embeddings and norms excluded)."""
    return sum(p.numel() for m in model.modules() if isinstance(m, torch.nn.Linear) for p in m.parameters())


def training_flops_per_token(n_matmul_params: int, n_layers: int, T: int, d_model: int) -> float:
    return 6 * n_matmul_params + 6 * n_layers * T * d_model


def mfu(tokens_per_s: float, flops_per_token: float, peak: float) -> float:
    return tokens_per_s * flops_per_token / peak


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A markdown table; floats keep what the caller formatted."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def ratio(a: float | None, b: float | None) -> str:
    """a / b as '1.23x', or 'n/a' when either side is missing."""
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def transformer_lens():
    """The transformer_lens module, or None when the optional `bench` extra is not installed."""
    try:
        import transformer_lens  # noqa: F401
    except ImportError as error:
        if getattr(error, "name", None) != "transformer_lens":  # installed but broken: say why
            print(f"transformer-lens is installed but does not import: {error}", file=sys.stderr)
        return None
    return transformer_lens


TL_MISSING = "n/a (transformer-lens not installed: pip install -e '.[bench]')"
