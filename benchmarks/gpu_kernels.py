"""GPU benchmark of the kernels, runnable in one go on a machine with a CUDA device.

Attention with entropy, forward only, at several T: the Triton kernel (out + lse + entropy in
one pass) vs torch's scaled_dot_product_attention for the output plus a materialized softmax for
the entropy vs our materialized reference. Then the selective scan: Triton vs the reference.
Prints markdown tables with times, peak memory and ratios measured in this run.

    .venv/bin/python benchmarks/gpu_kernels.py [--dtype float16|bfloat16|float32]
    TRITON_INTERPRET=1 .venv/bin/python benchmarks/gpu_kernels.py --smoke   # tiny, any device
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
try:
    import workbench.kernels as K
except ImportError:
    import kernels as K


def timed(fn, device: str, repeats: int) -> tuple[float | None, float | None, object]:
    """(milliseconds per call, peak MiB above the start, result), or (None, None, None) out of memory."""
    try:
        fn()  # warm-up: compiles the kernel
        result = None
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start_bytes = torch.cuda.memory_allocated()
        start = time.perf_counter()
        for _ in range(repeats):
            result = fn()
        if device == "cuda":
            torch.cuda.synchronize()
        ms = (time.perf_counter() - start) * 1000 / repeats
        peak = (torch.cuda.max_memory_allocated() - start_bytes) / 2 ** 20 if device == "cuda" else float("nan")
        return ms, peak, result
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return None, None, None


def sdpa_then_entropy(q, k, v):
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)).float() / math.sqrt(q.shape[-1])
    scores.masked_fill_(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    log_p = scores.log_softmax(-1)
    entropy = -(log_p.exp() * log_p.nan_to_num(neginf=0.0)).sum(-1)
    return out, entropy


def fmt(x, unit=""):
    return "OOM" if x is None else f"{x:.2f}{unit}"


def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.1f}x"


def attention_table(lengths, batch, heads, head_dim, dtype, device, repeats):
    print(f"\n### Attention + entropy (forward, causal): B={batch}, H={heads}, Dh={head_dim}, {dtype}\n")
    print("| T | Triton (ms) | SDPA + entropy (ms) | reference (ms) | SDPA+H / Triton | reference / Triton "
          "| Triton peak (MiB) | SDPA+H peak (MiB) | reference peak (MiB) | max abs entropy error |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for T in lengths:
        q, k, v = (torch.randn(batch, heads, T, head_dim, device=device, dtype=dtype) for _ in range(3))
        with torch.no_grad():
            t_ms, t_mem, t_res = timed(lambda: K.attention_entropy(q, k, v, backend="triton"), device, repeats)
            s_ms, s_mem, _ = timed(lambda: sdpa_then_entropy(q, k, v), device, repeats)
            r_ms, r_mem, r_res = timed(lambda: K.attention_entropy(q.float(), k.float(), v.float(),
                                                                   backend="reference"), device, max(1, repeats // 5))
        error = "-" if r_res is None or t_res is None else f"{(t_res[2] - r_res[2]).abs().max().item():.1e}"
        print(f"| {T} | {fmt(t_ms)} | {fmt(s_ms)} | {fmt(r_ms)} | {ratio(s_ms, t_ms)} | {ratio(r_ms, t_ms)} "
              f"| {fmt(t_mem)} | {fmt(s_mem)} | {fmt(r_mem)} | {error} |")
        del q, k, v, t_res, r_res


def scan_table(lengths, batch, inner, state, device, repeats):
    print(f"\n### Selective scan (forward): B={batch}, D_inner={inner}, N={state}, float32\n")
    print("| T | Triton (ms) | reference (ms) | reference / Triton | max abs error |")
    print("|---|---|---|---|---|")
    g = torch.Generator().manual_seed(0)
    for T in lengths:
        u = torch.randn(batch, inner, T, generator=g).to(device)
        delta = torch.nn.functional.softplus(torch.randn(batch, inner, T, generator=g) - 1).to(device)
        A = (-torch.rand(inner, state, generator=g) * 4 - 0.1).to(device)
        B, C = (torch.randn(batch, state, T, generator=g).to(device) for _ in range(2))
        D = torch.randn(inner, generator=g).to(device)
        with torch.no_grad():
            t_ms, _, y_t = timed(lambda: K.selective_scan(u, delta, A, B, C, D, backend="triton"), device, repeats)
            r_ms, _, y_r = timed(lambda: K.selective_scan(u, delta, A, B, C, D, backend="reference"), device, 1)
        error = "-" if y_t is None or y_r is None else f"{(y_t - y_r).abs().max().item():.1e}"
        print(f"| {T} | {fmt(t_ms)} | {fmt(r_ms)} | {ratio(r_ms, t_ms)} | {error} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on any device (checks the script)")
    args = parser.parse_args()
    if args.smoke:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        attention_table([37], 1, 2, 16, torch.float32, device, repeats=1)
        scan_table([37], 1, 4, 4, device, repeats=1)
        return
    if not torch.cuda.is_available():
        print("gpu_kernels.py: no CUDA device here; run it on a machine with a GPU "
              "(or pass --smoke with TRITON_INTERPRET=1 to check the script on the CPU).")
        return
    print(f"Device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    attention_table([1024, 2048, 4096, 8192, 16384], 4, 8, 64, getattr(torch, args.dtype), "cuda", repeats=20)
    scan_table([256, 1024, 4096], 4, 1024, 16, "cuda", repeats=20)


if __name__ == "__main__":
    main()
