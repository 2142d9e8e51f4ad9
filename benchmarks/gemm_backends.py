"""The linear layers of the benchmark shapes on two CPU GEMM back ends: MKL (what `F.linear` calls on
this build) and oneDNN (`torch.ops.mkldnn._linear_pointwise`, the kernel inductor's CPU freezing uses),
with its weight packed once beforehand as inference can.

Why it is here: the hooked forward (benchmarks/hooked_forward.py) spends most of its time in these
matrix multiplies, and its target over TransformerLens is out of reach with MKL's speed on them. The
table says how much a switch of back end would buy, and how far the numbers move (a different
summation order: every forward, probe and canary would change in its last bits, so adopting it means
re-running every shipped experiment).

    .venv/bin/python benchmarks/gemm_backends.py [--threads 1] [--rounds 5]
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from common import (interleaved_samples, medians, paired_speedup, seconds_per_call, set_threads,
                    table, timing_parser)
from throughput import SHAPES, Shape


def linear_shapes(shape: Shape) -> list[tuple[str, int, int, int]]:
    """(name, tokens, in, out) of one block's linear layers: qkv, attention out, MLP in, MLP out."""
    tokens, d = shape.batch * shape.T, shape.d_model
    return [("qkv", tokens, d, 3 * d), ("attention out", tokens, d, d), ("mlp in", tokens, d, shape.d_mlp),
            ("mlp out", tokens, shape.d_mlp, d)]


def contestants(tokens: int, fan_in: int, fan_out: int, calls: int) -> tuple[dict, float]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, fan_in, generator=generator)
    weight = torch.randn(fan_out, fan_in, generator=generator) / fan_in ** 0.5
    bias = torch.randn(fan_out, generator=generator)
    packed = torch.ops.mkldnn._reorder_linear_weight(weight, tokens)

    def onednn():
        return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")

    difference = float((onednn() - F.linear(x, weight, bias)).abs().max() / F.linear(x, weight, bias).abs().max())
    return {"MKL": lambda: seconds_per_call(lambda: F.linear(x, weight, bias), calls),
            "oneDNN": lambda: seconds_per_call(onednn, calls)}, difference


def main() -> None:
    parser = timing_parser(__doc__, 5, "calls", 20, "multiplies per timing")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print(f"## GEMM back ends\n\nOne block's linear layers of each benchmark shape (forward, no grad), {threads} "
          f"thread(s), median of {args.rounds} interleaved rounds of {args.calls} calls; speed-up: median of the "
          "per-round ratios (range over rounds); difference: max |oneDNN - MKL| / max |MKL|.\n")
    rows = []
    with torch.no_grad():
        for shape in SHAPES.values():
            for name, tokens, fan_in, fan_out in linear_shapes(shape):
                found, difference = contestants(tokens, fan_in, fan_out, args.calls)
                samples = interleaved_samples(found, args.rounds)
                seconds = medians(samples)
                flops = 2 * tokens * fan_in * fan_out
                rows.append([f"{shape.name}: {name} ({tokens} x {fan_in} -> {fan_out})",
                             f"{flops / seconds['MKL'] / 1e9:.0f}", f"{flops / seconds['oneDNN'] / 1e9:.0f}",
                             paired_speedup(samples, "oneDNN", "MKL"), f"{difference:.1e}"])
    print(table(["layer", "MKL GFLOP/s", "oneDNN GFLOP/s", "oneDNN speed-up", "difference"], rows), flush=True)


if __name__ == "__main__":
    main()
