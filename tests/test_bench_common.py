"""The benchmarks' timing helpers: who runs when, and how their timings are keyed."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from common import alternating, beside, interleaved_samples, round_ratios  # noqa: E402


def test_alternating_runs_both_sides_in_turns_of_one_chunk():
    calls = []
    timings = alternating("fast", lambda: calls.append("fast"), lambda: calls.append("plain"), calls=7, chunk=3)
    assert calls == ["fast"] * 3 + ["plain"] * 3 + ["fast"] * 3 + ["plain"] * 3 + ["fast", "plain"]
    assert set(timings) == {"fast", beside("fast")} and all(t >= 0 for t in timings.values())


def test_interleaved_samples_keeps_every_timing_of_a_dict_per_round():
    samples = interleaved_samples({"a": lambda: {"a": 2.0, beside("a"): 4.0}, "b": lambda: 1.0, "gone": lambda: None},
                                  rounds=3, warmup=1)
    assert samples == {"a": [2.0] * 3, "b": [1.0] * 3, beside("a"): [4.0] * 3}
    assert round_ratios(samples, "a", beside("a")) == [2.0] * 3
