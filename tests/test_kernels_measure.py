"""The kernel measurements the notebooks show: the online recurrence, backend agreement, memory."""
from __future__ import annotations

import pytest
import torch

from workbench.errors import ConfigError
from workbench.kernels.measure import (allocated_peak, available_backends, backend_agreement, entropy_memory,
                                       online_entropy_steps)


@pytest.mark.parametrize("scale", [1.0, 60.0])  # 60: logits large enough that exp(s) alone overflows float32
@pytest.mark.parametrize("block_size", [1, 3, 16])
def test_online_entropy_matches_the_exact_entropy_after_every_block(scale, block_size):
    scores = torch.randn(13, generator=torch.Generator().manual_seed(1)) * scale
    steps = online_entropy_steps(scores, block_size)
    assert len(steps) == -(-13 // block_size)
    assert steps.keys_seen.iloc[-1] == 13
    assert ((steps.entropy_online - steps.entropy_exact).abs() < 1e-9).all()
    assert (steps.running_max.diff().dropna() >= 0).all()


def test_online_entropy_refuses_a_matrix():
    with pytest.raises(ConfigError):
        online_entropy_steps(torch.zeros(2, 2), 2)


def test_backends_agree_with_the_reference():
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 37, 8, generator=generator) for _ in range(3))
    table = backend_agreement(q, k, v, backends=["reference", "chunked"], block_size=8)
    assert set(table.backend) == {"reference", "chunked"} and set(table.output) == {"out", "lse", "entropy"}
    assert (table.max_abs_difference < 1e-4).all()
    assert (table[table.backend == "reference"].max_abs_difference == 0).all()


def test_triton_is_offered_only_where_it_can_run(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert available_backends("cpu") == ["reference", "chunked"]


def test_allocated_peak_counts_what_is_alive_at_once():
    def two_temporaries():
        first = torch.ones(1000)  # 4000 bytes
        total = float(first.sum())
        del first
        second = torch.ones(500)  # 2000 bytes, allocated after the first is gone
        return total + float(second.sum())

    result, peak = allocated_peak(two_temporaries)
    assert result == 1500.0
    assert 4000 <= peak < 6000

    _, peak_both = allocated_peak(lambda: (torch.ones(1000), torch.ones(500)))
    assert peak_both >= 6000


def test_the_chunked_path_needs_far_less_memory_than_the_reference_as_t_grows():
    table = entropy_memory([256, 512], heads=1, head_dim=8, block_size=64)
    peak = table.set_index(["T", "backend"]).peak_bytes
    for length in (256, 512):
        assert peak[length, "reference"] >= 4 * length * length  # the T x T scores exist at once
    assert peak[512, "reference"] >= 3.5 * peak[256, "reference"]  # quadratic
    assert peak[512, "chunked"] <= 2.5 * peak[256, "chunked"]  # about linear
    assert peak[512, "chunked"] * 4 < peak[512, "reference"]


def test_memory_figure_has_a_line_per_backend_and_the_scale_line():
    from workbench.figures.kernels import memory_vs_length

    figure = memory_vs_length(entropy_memory([64, 128], heads=1, head_dim=4))
    assert [trace.name for trace in figure.data] == ["reference", "chunked", "one T x T map"]
    assert figure.layout.yaxis.type == "log"


def test_the_kernel_figures_tick_their_log_axes_the_same_way():
    import pandas as pd

    from workbench.figures.builders import entropy_by_length
    from workbench.figures.kernels import MiB, memory_vs_length

    table = pd.DataFrame({"backend": ["reference"] * 2 + ["chunked"] * 2, "T": [1024, 8192] * 2,
                          "peak_bytes": [40 * MiB, 2500 * MiB, 0.7 * MiB, 5.5 * MiB],
                          "scores_bytes": [4 * MiB, 256 * MiB] * 2})
    layout = memory_vs_length(table).layout
    assert list(layout.xaxis.tickvals) == [1024, 8192]  # the measured lengths, not 2, 3, ... 9
    assert list(layout.yaxis.tickvals) == [1.0, 10.0, 100.0, 1000.0]  # 3.6 decades: the powers of ten
    rows = [{"probe": "entropy", "head": -1, "layer": 0, "length": n, "value": 2.0} for n in (5, 10, 20, 40, 80)]
    assert list(entropy_by_length(rows).layout.xaxis.tickvals) == [5, 10, 20, 40, 80]


def test_entropy_by_length_draws_one_line_per_layer_from_layer_means():
    from workbench.figures.builders import entropy_by_length

    rows = [{"probe": "entropy", "layer": layer, "head": head, "length": length, "value": 0.1 * length, "step": 1}
            for layer in (0, 1) for head in (-1, 0) for length in (5, 10)]
    rows.append({"probe": "entropy_normalized", "layer": 0, "head": -1, "length": 5, "value": 0.5, "step": 1})
    figure = entropy_by_length(rows)
    assert [trace.name for trace in figure.data] == ["layer 0", "layer 1"]
    assert list(figure.data[0].y) == [0.5, 1.0]
