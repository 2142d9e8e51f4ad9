"""Measurements of the attention-entropy kernels for notebooks and reports (not used in training).

- `online_entropy_steps(scores, block_size)`: the online-softmax recurrence on one row of logits,
  block by block, next to the exact entropy of the keys seen so far (a worked example).
- `backend_agreement(q, k, v, ...)`: how far each backend's out, lse and entropy are from the
  materialized reference.
- `allocated_peak(fn, *args)`: the most tensor memory alive at once while `fn` runs. It counts
  every tensor the call creates (through a TorchDispatchMode), so it is exact and the same on every
  run, unlike resident memory; allocator caching and Python objects are not included.
- `entropy_memory(lengths, ...)`: allocated_peak of each backend at growing T.
"""
from __future__ import annotations

import math
import weakref

import pandas as pd
import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from workbench.errors import check

from .attention import attention_entropy, triton_available


def online_entropy_steps(scores: Tensor, block_size: int) -> pd.DataFrame:
    """Walk one row of logits in blocks with the running max m, normalizer l = sum exp(s - m) and
    t = sum exp(s - m) (s - m); after each block the entropy so far is log l - t / l.

    Rows: block, keys_seen, running_max, normalizer, shifted_sum, entropy_online, and
    entropy_exact, the entropy of softmax over the keys seen so far computed directly."""
    check(scores.dim() == 1 and scores.numel() >= 1, "scores", tuple(scores.shape), "a non-empty 1-D row of logits")
    check(block_size >= 1, "block_size", block_size, "expected >= 1")
    scores = scores.double()
    m, l, t = -math.inf, 0.0, 0.0
    rows = []
    for block, start in enumerate(range(0, scores.numel(), block_size)):
        tile = scores[start:start + block_size]
        m_new = max(m, float(tile.max()))
        alpha = math.exp(m - m_new)  # rescales what was summed against the old max
        shifted = tile - m_new
        p = shifted.exp()
        t = alpha * (t + (m - m_new) * l if l else 0.0) + float((p * shifted).sum())
        l = alpha * l + float(p.sum())
        m = m_new
        seen = scores[:start + tile.numel()]
        log_p = seen.log_softmax(dim=0)
        rows.append({"block": block, "keys_seen": seen.numel(), "running_max": m, "normalizer": l,
                     "shifted_sum": t, "entropy_online": math.log(l) - t / l,
                     "entropy_exact": float(-(log_p.exp() * log_p).sum())})
    return pd.DataFrame(rows)


def available_backends(device: str | torch.device = "cpu") -> list[str]:
    """The explicit backends that run here: Triton needs CUDA, or TRITON_INTERPRET=1 on the CPU."""
    from .attention import _interpreting

    backends = ["reference", "chunked"]
    if triton_available() and (torch.device(device).type == "cuda" or _interpreting()):
        backends.append("triton")
    return backends


def backend_agreement(q: Tensor, k: Tensor, v: Tensor, backends: list[str] | None = None,
                      **options) -> pd.DataFrame:
    """Largest absolute difference from the reference, per backend and output (out, lse, entropy).

    options go to attention_entropy (bias, scale, causal, block_size)."""
    backends = backends or available_backends(q.device)
    with torch.no_grad():
        reference = attention_entropy(q, k, v, backend="reference", **options)
        rows = []
        for backend in backends:
            result = attention_entropy(q, k, v, backend=backend, **options)
            for name, got, want in zip(("out", "lse", "entropy"), result, reference):
                rows.append({"backend": backend, "output": name,
                             "max_abs_difference": float((got.float() - want.float()).abs().max())})
    return pd.DataFrame(rows)


class _LiveTensorBytes(TorchDispatchMode):
    """Adds up the storages the dispatched ops create, and subtracts them when they are freed."""

    def __init__(self):
        super().__init__()
        self.live, self.peak = 0, 0
        self.storages: set[int] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for value in tree_flatten(result)[0]:
            if isinstance(value, Tensor) and value.device.type != "meta":
                self._track(value)
        return result

    def _track(self, tensor: Tensor) -> None:
        storage = tensor.untyped_storage()
        key = storage.data_ptr()
        if key in self.storages or storage.nbytes() == 0:
            return  # a view or an in-place result: memory already counted (or none)
        self.storages.add(key)
        self.live += storage.nbytes()
        self.peak = max(self.peak, self.live)
        weakref.finalize(tensor, self._free, key, storage.nbytes())

    def _free(self, key: int, nbytes: int) -> None:
        if key in self.storages:
            self.storages.discard(key)
            self.live -= nbytes


def allocated_peak(fn, *args, **kwargs) -> tuple[object, int]:
    """(fn's result, the peak bytes of tensors it created that were alive at the same time)."""
    tracker = _LiveTensorBytes()
    with torch.no_grad(), tracker:
        result = fn(*args, **kwargs)
    return result, tracker.peak


def entropy_memory(lengths: list[int], heads: int = 2, head_dim: int = 32, backends=("reference", "chunked"),
                   block_size: int = 256, seed: int = 0) -> pd.DataFrame:
    """Peak tensor memory of one no-grad attention_entropy call (B=1, float32, causal) per T and
    backend, with the T x T scores of one head for scale: rows (T, backend, peak_bytes, scores_bytes)."""
    rows = []
    generator = torch.Generator().manual_seed(seed)
    for length in lengths:
        q, k, v = (torch.randn(1, heads, length, head_dim, generator=generator) for _ in range(3))
        for backend in backends:
            _, peak = allocated_peak(attention_entropy, q, k, v, backend=backend, block_size=block_size)
            rows.append({"T": length, "backend": backend, "peak_bytes": peak, "scores_bytes": 4 * length * length})
    return pd.DataFrame(rows)
