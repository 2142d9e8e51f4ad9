"""The kernels against their references: attention + entropy (reference, chunked, Triton) and the
selective scan (reference, Triton). Without a GPU the Triton kernels run in Triton's interpreter
(TRITON_INTERPRET=1, set below before anything imports triton), so shapes stay small; with a GPU
the same tests run natively, and the tests marked `gpu` add larger shapes."""
import math
import os
import sys
from pathlib import Path

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:
    import workbench.kernels as K
except ImportError:  # before the package mapping is installed: import the folder directly
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import kernels as K

from workbench.errors import ConfigError

DEVICE = "cuda" if HAS_CUDA else "cpu"
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"
needs_triton = pytest.mark.skipif(not K.triton_available(), reason="triton is not installed")
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
FORWARD_TOL = dict(atol=2e-5, rtol=1e-4)
GRAD_TOL = dict(atol=1e-4, rtol=1e-3)


def qkv(B, H, T, Dh, seed=0, device="cpu", spread=1.0):
    g = torch.Generator().manual_seed(seed)
    return [(spread * torch.randn(B, H, T, Dh, generator=g)).to(device).requires_grad_() for _ in range(3)]


def make_bias(kind, H, T, device="cpu", seed=1):
    g = torch.Generator().manual_seed(seed)
    if kind == "alibi":
        return torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)]).to(device).requires_grad_()
    if kind == "tensor":
        return torch.randn(1, H, T, T, generator=g).to(device).requires_grad_()
    if kind == "callable":  # a smooth function of the distance, like FIRE: same values per tile
        weights = torch.linspace(-1.0, 1.0, H, device=device)
        return lambda rows, cols: torch.tanh(0.1 * (rows[:, None] - cols[None, :]).float()) * weights[:, None, None]
    return None


def outputs_and_grads(backend, q, k, v, bias=None, seed=2, **options):
    outs = K.attention_entropy(q, k, v, bias=bias, backend=backend, **options)
    g = torch.Generator().manual_seed(seed)
    weights = [torch.randn(o.shape, generator=g).to(o.device) for o in outs]  # gradients through all three
    loss = sum((o.float() * w).sum() for o, w in zip(outs, weights))
    leaves = [x for x in (q, k, v, bias) if isinstance(x, torch.Tensor) and x.requires_grad]
    return outs, torch.autograd.grad(loss, leaves)


def assert_matches(backend, B, H, T, Dh, bias_kind=None, causal=True, device="cpu", **options):
    q, k, v = qkv(B, H, T, Dh, device=device)
    bias = make_bias(bias_kind, H, T, device)
    ref_outs, ref_grads = outputs_and_grads("reference", q, k, v, bias, causal=causal)
    outs, grads = outputs_and_grads(backend, q, k, v, bias, causal=causal, **options)
    for name, got, want in zip(("out", "lse", "entropy"), outs, ref_outs):
        torch.testing.assert_close(got, want, **FORWARD_TOL, msg=lambda m: f"{name}: {m}")
    for name, got, want in zip(("dq", "dk", "dv", "dbias"), grads, ref_grads):
        torch.testing.assert_close(got, want, **GRAD_TOL, msg=lambda m: f"{name}: {m}")


# --- the reference is the definition -------------------------------------------------------------

def test_reference_agrees_with_torch_attention_and_the_entropy_formula():
    q, k, v = qkv(2, 3, 29, 16)
    out, lse, entropy = K.attention_entropy(q, k, v, backend="reference")
    torch.testing.assert_close(out, torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                               **FORWARD_TOL)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(16)
    scores = scores.masked_fill(torch.ones(29, 29, dtype=torch.bool).triu(1), float("-inf"))
    p = scores.softmax(-1)
    by_hand = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
    torch.testing.assert_close(entropy, by_hand, **FORWARD_TOL)
    torch.testing.assert_close(lse, torch.logsumexp(scores, -1), **FORWARD_TOL)
    assert torch.all(entropy[..., 0].abs() < 1e-6), "the first query sees one key: entropy 0"
    bound = torch.log(torch.arange(1, 30, dtype=torch.float32))
    assert torch.all(entropy >= -1e-6) and torch.all(entropy <= bound + 1e-5)


def test_uniform_attention_has_entropy_log_of_visible_keys():
    q = torch.zeros(1, 1, 10, 16)
    k, v = torch.randn(1, 1, 10, 16), torch.randn(1, 1, 10, 16)
    for backend in ("reference", "chunked"):
        _, _, entropy = K.attention_entropy(q, k, v, backend=backend, block_size=4)
        torch.testing.assert_close(entropy[0, 0], torch.log(torch.arange(1.0, 11.0)), **FORWARD_TOL)


def test_reference_gradients_are_finite_under_the_mask():
    q, k, v = qkv(1, 2, 13, 16)
    _, grads = outputs_and_grads("reference", q, k, v)
    assert all(torch.isfinite(g).all() for g in grads)


# --- the chunked path ----------------------------------------------------------------------------

@pytest.mark.parametrize("B,H,T,Dh,block", [(1, 1, 1, 16, 16), (2, 3, 37, 32, 16), (1, 2, 100, 16, 32),
                                            (1, 4, 300, 64, 64)])
@pytest.mark.parametrize("bias_kind", [None, "alibi", "tensor", "callable"])
def test_chunked_matches_reference(B, H, T, Dh, block, bias_kind):
    assert_matches("chunked", B, H, T, Dh, bias_kind, block_size=block)


@pytest.mark.parametrize("bias_kind", [None, "alibi", "tensor"])
def test_chunked_matches_reference_without_causal_mask(bias_kind):
    assert_matches("chunked", 2, 2, 45, 16, bias_kind, causal=False, block_size=16)


def test_chunked_matches_reference_with_per_query_scale_and_large_logits():
    q, k, v = qkv(1, 2, 70, 32, spread=6.0)  # logits in the hundreds: near one-hot rows
    scale = torch.log(torch.arange(70.0) + 2.0) / math.log(2.0) / math.sqrt(32)
    _, _, ref = K.attention_entropy(q, k, v, scale=scale, backend="reference")
    _, _, got = K.attention_entropy(q, k, v, scale=scale, backend="chunked", block_size=16)
    assert torch.isfinite(got).all() and torch.all(got > -1e-5)
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-3)


def test_chunked_path_only_ever_sees_tiles():
    seen = []

    def bias(rows, cols):
        seen.append((len(rows), len(cols)))
        return torch.zeros(1, 1, len(rows), len(cols))

    q, k, v = qkv(1, 1, 200, 16)
    K.attention_entropy(q, k, v, bias=bias, backend="chunked", block_size=32)
    assert seen and max(max(shape) for shape in seen) <= 32


def test_cpu_tensors_take_the_chunked_path(monkeypatch):
    calls = []
    chunked = K.attention.attention_entropy_chunked
    monkeypatch.setattr(K.attention, "attention_entropy_chunked",
                        lambda *args, **kwargs: calls.append(1) or chunked(*args, **kwargs))
    q, k, v = qkv(1, 1, 8, 16)
    K.attention_entropy(q, k, v)
    assert calls == [1]


def test_entropy_from_qk_matches_full_call():
    q, k, v = qkv(1, 2, 21, 16)
    lse, entropy = K.attention_entropy_from_qk(q, k, backend="chunked", block_size=8)
    _, lse_ref, entropy_ref = K.attention_entropy(q, k, v, backend="reference")
    torch.testing.assert_close(entropy, entropy_ref, **FORWARD_TOL)
    torch.testing.assert_close(lse, lse_ref, **FORWARD_TOL)


def test_bad_arguments_name_the_field():
    q, k, v = qkv(1, 2, 5, 16)
    with pytest.raises(ConfigError, match="backend.*choose one of: auto, reference, chunked, triton"):
        K.attention_entropy(q, k, v, backend="flash")
    with pytest.raises(ConfigError, match="bias.*ALiBi slopes need shape"):
        K.attention_entropy(q, k, v, bias=torch.ones(3))
    with pytest.raises(ConfigError, match="bias.*callable"):
        K.attention_entropy(q, k, v, bias=lambda r, c: 0.0, backend="triton")
    with pytest.raises(ConfigError, match="v: invalid value"):
        K.attention_entropy(q, k, v[..., :8])


# --- the Triton attention kernel (interpreter on the CPU, native on a GPU) ----------------------

@needs_triton
@pytest.mark.parametrize("B,H,T,Dh,bias_kind,causal", [
    (1, 1, 37, 16, None, True),
    (2, 3, 37, 32, "alibi", True),
    (1, 4, 37, 64, "tensor", True),
    (1, 2, 1, 16, None, True),
    (2, 2, 23, 16, None, False),
    (1, 3, 50, 32, "alibi", False),
    (1, 2, 40, 24, "tensor", False),  # a head dim that is not a power of two
])
def test_triton_attention_matches_reference(B, H, T, Dh, bias_kind, causal):
    assert_matches("triton", B, H, T, Dh, bias_kind, causal, device=DEVICE)


@needs_triton
def test_triton_attention_with_per_query_scale():
    q, k, v = qkv(1, 2, 33, 16, device=DEVICE, spread=3.0)
    scale = torch.linspace(0.1, 1.0, 33, device=DEVICE)
    ref = K.attention_entropy(q, k, v, scale=scale, backend="reference")
    got = K.attention_entropy(q, k, v, scale=scale, backend="triton")
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-3)


@needs_triton
def test_triton_attention_reads_strided_inputs_as_a_model_hands_them_over():
    g = torch.Generator().manual_seed(3)
    packed = torch.randn(2, 29, 3, 2, 16, generator=g).to(DEVICE)  # (B, T, qkv, H, Dh) as from one projection
    q, k, v = packed.permute(2, 0, 3, 1, 4)
    assert not q.is_contiguous()
    ref = K.attention_entropy(q.contiguous(), k.contiguous(), v.contiguous(), backend="reference")
    for backend in ("chunked", "triton"):
        for got, want in zip(K.attention_entropy(q, k, v, backend=backend), ref):
            torch.testing.assert_close(got, want, **FORWARD_TOL)


# --- the selective scan --------------------------------------------------------------------------

def scan_inputs(batch, inner, state, length, device="cpu", seed=0, with_skip=True):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(batch, inner, length, generator=g)
    delta = torch.nn.functional.softplus(torch.randn(batch, inner, length, generator=g) - 1.0)
    A = -torch.rand(inner, state, generator=g) * 4.0 - 0.1
    B, C = torch.randn(batch, state, length, generator=g), torch.randn(batch, state, length, generator=g)
    D = torch.randn(inner, generator=g) if with_skip else None
    return [x.to(device).requires_grad_() if x is not None else None for x in (u, delta, A, B, C, D)]


def test_scan_reference_is_the_unrolled_sum():
    u, delta, A, B, C, D = scan_inputs(2, 3, 4, 9)
    y = K.selective_scan(u, delta, A, B, C, D, backend="reference")
    expected = torch.zeros_like(y)
    for t in range(9):
        for s in range(t + 1):
            decay = torch.exp((delta[:, :, s + 1:t + 1, None] * A[None, :, None, :]).sum(2))  # (B, D, N)
            drive = delta[:, :, s, None] * B[:, None, :, s] * u[:, :, s, None]
            expected[:, :, t] += (C[:, None, :, t] * decay * drive).sum(-1)
        expected[:, :, t] += D * u[:, :, t]
    torch.testing.assert_close(y, expected, **FORWARD_TOL)


def test_scan_shapes_are_checked():
    u, delta, A, B, C, D = scan_inputs(1, 3, 4, 5)
    with pytest.raises(ConfigError, match="B: invalid value"):
        K.selective_scan(u, delta, A, B[:, :2], C, D)
    with pytest.raises(ConfigError, match="backend"):
        K.selective_scan(u, delta, A, B, C, D, backend="chunked")


@needs_triton
@pytest.mark.parametrize("batch,inner,state,length,with_skip", [
    (1, 4, 4, 37, True), (2, 20, 16, 23, True), (2, 3, 3, 1, False), (1, 17, 5, 40, False)])
def test_triton_scan_matches_reference(batch, inner, state, length, with_skip):
    inputs = scan_inputs(batch, inner, state, length, DEVICE, with_skip=with_skip)
    leaves = [x for x in inputs if x is not None]
    weights = torch.randn(batch, inner, length).to(DEVICE)
    ref = K.selective_scan(*inputs, backend="reference")
    got = K.selective_scan(*inputs, backend="triton")
    torch.testing.assert_close(got, ref, **FORWARD_TOL)
    ref_grads = torch.autograd.grad((ref * weights).sum(), leaves)
    got_grads = torch.autograd.grad((got * weights).sum(), leaves)
    for a, b in zip(got_grads, ref_grads):
        torch.testing.assert_close(a, b, **GRAD_TOL)


# --- native GPU runs at sizes the interpreter cannot afford -------------------------------------

def native_gpu(test):
    """Mark a test as a native GPU run: skipped, with the reason shown, wherever it cannot be one."""
    for mark in (pytest.mark.gpu, needs_cuda, needs_triton,
                 pytest.mark.skipif(INTERPRETED, reason="TRITON_INTERPRET=1 is set: no native Triton run")):
        test = mark(test)
    return test


@native_gpu
@pytest.mark.parametrize("T,Dh,bias_kind", [(1000, 64, None), (777, 32, "alibi"), (513, 128, "tensor")])
def test_native_triton_attention_matches_reference(T, Dh, bias_kind):
    assert_matches("triton", 2, 4, T, Dh, bias_kind, device="cuda")


@native_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_native_triton_attention_half_precision(dtype):
    q, k, v = [x.detach().to(dtype) for x in qkv(1, 4, 1024, 64, device="cuda")]
    ref = K.attention_entropy(q.float(), k.float(), v.float(), backend="reference")
    got = K.attention_entropy(q, k, v, backend="triton")
    for a, b in zip(got, ref):
        torch.testing.assert_close(a.float(), b, atol=2e-2, rtol=2e-2)


@native_gpu
def test_native_triton_scan_matches_reference():
    inputs = scan_inputs(2, 64, 16, 1000, "cuda")
    torch.testing.assert_close(K.selective_scan(*inputs, backend="triton"),
                               K.selective_scan(*inputs, backend="reference"), atol=1e-4, rtol=1e-4)
