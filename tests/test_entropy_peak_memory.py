"""The chunked attention-entropy path stays within its algorithmic memory bound, and the
materialized reference pays at least its T^2 floor (peak RSS in fresh subprocesses)."""
import sys

import pytest

from workbench.probes.peak_memory import chunked_bound, measure_peak, reference_floor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is Linux-only")

T, H, DH = 4096, 2, 32


def test_the_bound_separates_the_two_paths():
    # the test below only means something if the reference's floor is far above the bound
    assert reference_floor(T, H) > 2 * chunked_bound(T, H, DH)


def test_chunked_within_bound_and_reference_above_floor():
    chunked = measure_peak("chunked", T, H, DH)
    reference = measure_peak("reference", T, H, DH)
    assert chunked["peak_bytes"] <= chunked_bound(T, H, DH)
    assert reference["peak_bytes"] >= reference_floor(T, H)
    assert abs(chunked["mean_entropy"] - reference["mean_entropy"]) < 1e-4
