"""The stepwise scan (Mamba's CPU training path, hand-written backward) against the reference."""
from __future__ import annotations

import pytest
import torch

from workbench.models.mixers.mamba import causal_conv
from workbench.kernels import selective_scan, selective_scan_reference
from workbench.kernels.scan_stepwise import selective_scan_stepwise

from test_implicit_attention import scan_inputs


@pytest.mark.parametrize("T", [1, 2, 23])
def test_stepwise_scan_matches_the_reference(T):
    inputs = scan_inputs(T=T)
    torch.testing.assert_close(selective_scan_stepwise(*inputs), selective_scan_reference(*inputs),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("with_skip", [True, False])
def test_stepwise_scan_gradients_match_the_reference(with_skip):
    inputs = list(scan_inputs(T=17))
    if not with_skip:
        inputs[-1] = None
    upstream = torch.randn(2, 3, 17, dtype=torch.float64, generator=torch.Generator().manual_seed(3))

    def gradients(scan):
        leaves = [None if x is None else x.clone().requires_grad_(True) for x in inputs]
        (scan(*leaves) * upstream).sum().backward()
        return [None if leaf is None else leaf.grad for leaf in leaves]

    for name, actual, expected in zip("u delta A B C D".split(), gradients(selective_scan_stepwise),
                                      gradients(selective_scan_reference)):
        if expected is not None:
            torch.testing.assert_close(actual, expected, rtol=1e-9, atol=1e-9, msg=f"gradient of {name}")


def test_stepwise_scan_gradcheck():
    inputs = tuple(x.requires_grad_(True) for x in scan_inputs(batch=1, channels=2, state=2, T=5))
    assert torch.autograd.gradcheck(selective_scan_stepwise, inputs)


def test_stepwise_scan_keeps_float32():
    inputs = scan_inputs(T=9, dtype=torch.float32)
    y = selective_scan_stepwise(*inputs)
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, selective_scan_reference(*inputs), rtol=1e-4, atol=1e-4)


def test_causal_conv_equals_the_padded_depthwise_convolution():
    conv = torch.nn.Conv1d(6, 6, 4, groups=6, padding=3).double()
    x = torch.randn(3, 6, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(causal_conv(x, conv), conv(x)[..., :9])


def test_the_kernels_entry_point_takes_the_stepwise_scan_on_the_cpu():
    inputs = scan_inputs(T=9)
    torch.testing.assert_close(selective_scan(*inputs, backend="auto"), selective_scan_stepwise(*inputs), rtol=0, atol=0)
    torch.testing.assert_close(selective_scan(*inputs, backend="reference"), selective_scan_reference(*inputs))
