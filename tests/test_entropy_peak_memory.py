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


def test_the_measurement_ships_without_runs_and_its_canary_checks_its_arithmetic(monkeypatch, tmp_path):
    """streaming-entropy-memory trains nothing: its shipped result has provenance, no runs, and a canary
    of the numbers its computation gives; --check recomputes them and names one that moved."""
    from workbench.experiments import EXPERIMENTS, run_experiment
    from workbench.experiments import streaming_memory
    from workbench.experiments.report import check_result
    from workbench.experiments.results import shipped_path

    monkeypatch.setenv("WORKBENCH_RESULTS", str(tmp_path))

    def fake_measure(backend, length, heads, head_dim, seed):  # the recipe's cases without the minutes
        peak = chunked_bound(length, heads, head_dim) // 3 if backend == "chunked" else 2 * reference_floor(length, heads)
        return {"peak_bytes": peak, "seconds": 0.0, "mean_entropy": 5.0 + 1e-7 * seed}

    monkeypatch.setattr(streaming_memory, "measure_peak", fake_measure)
    result = run_experiment("streaming-entropy-memory", progress=False)
    assert shipped_path("streaming-entropy-memory").exists() and result.run_ids == []
    assert result.outcomes["linear-memory"].verdict == "reproduced"
    assert result.provenance["seeds"] == [0, 1, 2] and result.canary["kind"] == "measurement"
    experiment = EXPERIMENTS["streaming-entropy-memory"]
    assert check_result(experiment, result).ok
    name = next(iter(result.canary["values"]))
    result.canary["values"][name] += 1e-3
    check = check_result(experiment, result)
    assert not check.ok and any(name in line for line in check.lines)
