"""The implicit attention map of the selective scan against the sequential reference scan."""
from __future__ import annotations

import pytest
import torch

from workbench.kernels import selective_scan_reference
from workbench.models.mixers.implicit_attention import implicit_attention, implicit_attention_magnitude


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
