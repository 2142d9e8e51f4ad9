"""The chunked selective scan and the implicit attention map against the sequential reference."""
from __future__ import annotations

import pytest
import torch

from workbench.models.mixers.scan import (implicit_attention, implicit_attention_magnitude, selective_scan,
                                         selective_scan_reference)


def scan_inputs(batch=2, channels=3, state=4, T=37, dtype=torch.float64, delta_scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.rand(*shape, generator=g, dtype=dtype)  # noqa: E731
    randn = lambda *shape: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    u = randn(batch, channels, T)
    delta = delta_scale * (0.05 + rand(batch, channels, T))
    A = -(0.1 + 5 * rand(channels, state))
    B, C = randn(batch, state, T), randn(batch, state, T)
    D = randn(channels)
    return u, delta, A, B, C, D


@pytest.mark.parametrize("chunk", [1, 4, 16, 32, 64])
def test_chunked_scan_matches_sequential_forward(chunk):
    inputs = scan_inputs(T=37)  # 37 is a multiple of no chunk size but 1
    expected = selective_scan_reference(*inputs)
    torch.testing.assert_close(selective_scan(*inputs, chunk=chunk), expected, rtol=1e-10, atol=1e-10)


def test_chunked_scan_without_skip():
    u, delta, A, B, C, _ = scan_inputs(T=9)
    torch.testing.assert_close(selective_scan(u, delta, A, B, C, chunk=4),
                               selective_scan_reference(u, delta, A, B, C), rtol=1e-10, atol=1e-10)


def _gradients(scan, inputs, upstream):
    leaves = [x.clone().requires_grad_(True) for x in inputs]
    (scan(*leaves) * upstream).sum().backward()
    return [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("chunk", [5, 16])
def test_chunked_scan_matches_sequential_gradients(chunk):
    inputs = scan_inputs(T=23)
    upstream = torch.randn(2, 3, 23, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    expected = _gradients(selective_scan_reference, inputs, upstream)
    actual = _gradients(lambda *x: selective_scan(*x, chunk=chunk), inputs, upstream)
    for name, a, e in zip("u delta A B C D".split(), actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-9, atol=1e-9, msg=f"gradient of {name}")


def test_chunked_scan_gradcheck():
    inputs = tuple(x.requires_grad_(True) for x in scan_inputs(batch=1, channels=2, state=2, T=7))
    assert torch.autograd.gradcheck(lambda *x: selective_scan(*x, chunk=3), inputs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_chunks_whose_decay_overflows_are_split_not_clamped(dtype):
    # delta ~ 300 and |A| up to 5: a chunk of 16 decays by e^-20000, far beyond either float range
    inputs = scan_inputs(T=29, dtype=dtype, delta_scale=300.0)
    expected = selective_scan_reference(*inputs)
    actual = selective_scan(*inputs, chunk=16)
    assert torch.isfinite(actual).all()
    tolerance = 1e-10 if dtype == torch.float64 else 1e-3
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance)


def test_single_step_with_huge_decay_stays_finite():
    inputs = scan_inputs(T=5, delta_scale=1e4)  # one step alone exceeds exp's range
    actual = selective_scan(*inputs, chunk=8)
    assert torch.isfinite(actual).all()
    torch.testing.assert_close(actual, selective_scan_reference(*inputs), rtol=1e-10, atol=1e-10)


def test_chunk_must_be_positive():
    with pytest.raises(ValueError, match="chunk"):
        selective_scan(*scan_inputs(T=3), chunk=0)


def test_implicit_attention_reproduces_the_scan():
    u, delta, A, B, C, D = scan_inputs(T=19)
    alpha = implicit_attention(delta, A, B, C)
    assert alpha.shape == (2, 3, 19, 19)
    assert (alpha.triu(diagonal=1) == 0).all()  # causal: no key after its query
    y = torch.einsum("bdts,bds->bdt", alpha, u) + D[:, None] * u
    torch.testing.assert_close(y, selective_scan_reference(u, delta, A, B, C, D), rtol=1e-10, atol=1e-10)


def test_implicit_attention_diagonal_is_the_current_input_weight():
    u, delta, A, B, C, _ = scan_inputs(T=6)
    alpha = implicit_attention(delta, A, B, C)
    diagonal = torch.einsum("bnt,bnt->bt", C, B)[:, None, :] * delta  # no decay at lag 0
    torch.testing.assert_close(alpha.diagonal(dim1=-2, dim2=-1), diagonal)


def test_channel_mean_of_the_map_in_groups():
    _, delta, A, B, C, _ = scan_inputs(channels=5, T=8)
    expected = implicit_attention(delta, A, B, C).abs().mean(dim=1, keepdim=True)
    for group in (1, 2, 5, 16):
        torch.testing.assert_close(implicit_attention_magnitude(delta, A, B, C, group=group), expected)
