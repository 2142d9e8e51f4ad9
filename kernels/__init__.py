"""Kernels, each beside its plain-PyTorch reference; imported as `workbench.kernels`.

- `attention_entropy(q, k, v, ...)` -> (out, lse, entropy): causal attention that measures the
  entropy of every attention row in the same pass, without a T x T map (Triton on CUDA, a chunked
  PyTorch path on the CPU, the materialized reference on request).
- `attention_entropy_from_qk(q, k, ...)` -> (lse, entropy): the same for probes without values.
- `selective_scan(u, delta, A, B, C, D)` -> y: the Mamba scan (Triton on CUDA, the stepwise scan on
  the CPU, the sequential reference on request).

Importing this package does not import Triton; the Triton modules load on first use, and on the
CPU only run with TRITON_INTERPRET=1 set before that (tests do so).
"""
from .attention import attention_entropy, attention_entropy_from_qk, triton_available  # noqa: F401
from .attention_reference import attention_entropy_reference  # noqa: F401
from .scan import selective_scan  # noqa: F401
from .scan_reference import selective_scan_reference  # noqa: F401

__all__ = ["attention_entropy", "attention_entropy_from_qk", "attention_entropy_reference",
           "selective_scan", "selective_scan_reference", "triton_available"]
