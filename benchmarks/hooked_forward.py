"""A forward that returns every attention pattern and MLP activation: workbench vs TransformerLens.

Both models have the shape of benchmarks/throughput.py (learned absolute positions, ReLU MLP,
pre-LN) and run in eval mode under torch.no_grad on the same random tokens. The workbench calls
`model.run_with_cache(tokens, names=...)` and TransformerLens `run_with_cache(tokens,
names_filter=...)`, both keeping only `hook_pattern` (the (B, H, T, T) softmax) and `hook_post`
(the MLP activation) of every layer. A plain forward of each is timed beside them, so the table
shows what listening costs in each library. The two run_with_cache calls alternate every 2
forwards within a round (common.alternating), so their ratio compares the same seconds of this
machine, whose speed drifts in phases of several seconds.

    .venv/bin/python benchmarks/hooked_forward.py [--threads 1] [--rounds 5]
"""
from __future__ import annotations

import torch

from common import (TL_MISSING, alternating, beside, interleaved_samples, medians, paired_speedup,
                    seconds_per_call, set_threads, table, target_lines, timing_parser, transformer_lens)
from throughput import SHAPES, Shape, random_batch, transformer_lens_model

WANTED = ("hook_pattern", "hook_post")
WB_CACHE, TL_CACHE = "workbench run_with_cache", "TransformerLens run_with_cache"


def listens(name: str) -> bool:
    return name.endswith(WANTED)


def workbench_model(shape: Shape):
    from workbench.config import RunConfig
    from workbench.models import build_model

    config = RunConfig.load(None, shape.overrides(0, 1))
    return build_model(config.model, 15, seed=0).eval()


def contestants(shape: Shape, calls: int) -> dict:
    tokens, _ = random_batch(shape)
    model = workbench_model(shape)
    def workbench_cache():
        return model.run_with_cache(tokens, names=listens)

    found = {"workbench forward": lambda: seconds_per_call(lambda: model(tokens), calls),
             WB_CACHE: lambda: seconds_per_call(workbench_cache, calls)}
    _, cache = workbench_cache()
    assert len(cache) == 2 * shape.n_layers, sorted(cache)
    if transformer_lens() is not None:
        lens = transformer_lens_model(shape).eval()

        def cache_pair() -> dict[str, float]:
            """The target's two calls in alternation, keyed by their own names."""
            timings = alternating(WB_CACHE, workbench_cache, lambda: lens.run_with_cache(tokens, names_filter=listens),
                                  calls, chunk=2, reference_name=TL_CACHE)
            return {WB_CACHE: timings[WB_CACHE], TL_CACHE: timings[beside(WB_CACHE, TL_CACHE)]}

        found["TransformerLens forward"] = lambda: seconds_per_call(lambda: lens(tokens), calls)
        found[WB_CACHE] = cache_pair
        _, cache = lens.run_with_cache(tokens, names_filter=listens)
        assert len(cache) == 2 * shape.n_layers, list(cache.keys())
    return found


def main() -> None:
    parser = timing_parser(__doc__, 5, "calls", 10, "forwards per timing")
    parser.add_argument("--shapes", default="a,b")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    import workbench.models  # noqa: F401  (the allocator tuning, before any contestant allocates)
    print(f"## Hooked forward\n\nEval mode, no grad, every layer's attention pattern and MLP activation cached; "
          f"{threads} thread(s), median of {args.rounds} interleaved rounds of {args.calls} forwards; ratios: median of the "
          f"per-round ratios (range over rounds). "
          f"Importing workbench tunes glibc's allocator (workbench/models/allocator.py); it applies to "
          f"every contestant in this process alike.")
    for name in args.shapes.split(","):
        shape = SHAPES[name]
        with torch.no_grad():
            samples = interleaved_samples(contestants(shape, args.calls), args.rounds)
        seconds = medians(samples)
        rows = []
        for contestant in ("workbench forward", WB_CACHE, "TransformerLens forward", TL_CACHE):
            if contestant not in seconds:
                rows.append([contestant, TL_MISSING, "", ""])
                continue
            own_forward = contestant.split()[0] + " forward"
            rows.append([contestant, f"{seconds[contestant] * 1e3:.2f}",
                         paired_speedup(samples, own_forward, contestant),
                         paired_speedup(samples, contestant, TL_CACHE)
                         if contestant.endswith("run_with_cache") else ""])
        print(f"\nShape {name}: {shape.n_layers} layer(s), d_model={shape.d_model}, {shape.n_heads} heads, "
              f"T={shape.T}, batch {shape.batch}\n")
        print(table(["call", "ms / forward", "cost vs own plain forward", "speed-up vs TransformerLens cache"], rows))
        print("\n" + target_lines(samples, [(WB_CACHE, TL_CACHE, 1.5)]),
              flush=True)


if __name__ == "__main__":
    main()
