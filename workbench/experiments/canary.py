"""A numerical fingerprint of the code that made a result: the exact metrics of the first steps of its
first run.

A run id hashes the config only, so a stored run (and the result analysed from it) would be reused
silently after a change to the arithmetic. The canary ties a result to the arithmetic instead: it
trains the first run's config (unchanged, learning-rate schedule included) for its first
CANARY_STEPS steps in a throw-away store and records every metric those steps log, plus two sums of
the weights they reach. `workbench experiment report --check` recomputes it; on the machine and
torch that made the result it must match bit for bit. Another CPU rounds the last bits its own way,
and training grows those differences step by step (between an AMD EPYC and an Intel Xeon: 1e-7 before
the first update, up to 75% in a metric at step 50), so elsewhere only the metrics logged before the
first update (data, initial weights, forward pass and probes) are compared, within MACHINE_RTOL, and
the check says so.
"""
from __future__ import annotations

import math
import platform
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file

from ..config import RunConfig

CANARY_STEPS = 50
MACHINE_RTOL = 1e-4  # only between different CPUs or torch versions, where rounding may differ


def machine() -> dict:
    """What a canary's last bits depend on."""
    return {"cpu": _cpu_model(), "torch": torch.__version__, "python": platform.python_version()}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def compute_canary(config: RunConfig, steps: int = CANARY_STEPS) -> dict:
    """Train `config` for its first `steps` steps (or all of them, if fewer) and return its canary."""
    from ..train import train

    steps = min(steps, config.train.steps)
    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="workbench-canary-") as root:
        try:
            run = train(config, progress=False, root=Path(root), stop_after=steps)
        finally:
            torch.set_num_threads(threads)  # train() sets the config's thread count
        metrics = run.metrics()
        weights_file = run.path / ("model.safetensors" if steps == config.train.steps else "checkpoint.safetensors")
        weights = [value.double() for key, value in load_file(str(weights_file)).items()
                   if not key.startswith(("optim.", "rng."))]
    metrics = metrics[metrics.step <= steps].sort_values(["step", "probe", "layer", "head", "length"], kind="stable")
    return {"run_id": config.run_id, "steps": steps,
            "metrics": [[int(r.step), r.probe, int(r.layer), int(r.head), int(r.length), _number(r.value)]
                        for r in metrics.itertuples()],
            "weights_abs_sum": _number(sum(float(w.abs().sum()) for w in weights)),
            "weights_square_sum": _number(sum(float((w * w).sum()) for w in weights)),
            "machine": machine()}


def _number(value: float):
    """JSON has no NaN: a diverged step is written as the string "nan"."""
    value = float(value)
    return value if math.isfinite(value) else repr(value)


def compare(recorded: dict, fresh: dict) -> tuple[bool, str]:
    """(matches, what differs). Bit for bit on the machine and torch that recorded it; elsewhere the
    metrics before the first update, within MACHINE_RTOL."""
    old, new = _values(recorded), _values(fresh)
    if list(old) != list(new):
        missing = sorted(set(old) ^ set(new))[:3]
        return False, f"different metrics logged (e.g. {missing})"
    if recorded.get("machine") == fresh["machine"]:
        worst_key, worst = _worst(old, new)
        if worst == 0:
            return True, "identical"
        return False, f"{_name(worst_key)} differs by {worst:.1e} (relative)"
    recorded_on = recorded.get("machine", {})
    where = (f"recorded on {recorded_on.get('cpu', 'another machine')} with torch {recorded_on.get('torch', '?')}, "
             "checked bit for bit only there")
    before = [key for key in old if _before_first_update(key)]
    if not before:
        return True, f"{where}; it logs nothing before the first update, so here nothing is compared"
    worst_key, worst = _worst({key: old[key] for key in before}, new)
    if worst <= MACHINE_RTOL:
        return True, (f"{where}; here its {len(before)} metrics before the first update agree "
                      f"(largest relative difference {worst:.1e}, allowing {MACHINE_RTOL:g})")
    return False, f"{_name(worst_key)} differs by {worst:.1e} (relative; {where}, allowing {MACHINE_RTOL:g} here)"


def _before_first_update(key) -> bool:
    """A metric logged at step 0: the only kind another CPU can compare (the weights' sums come after training)."""
    return key[0] == 0


def _worst(old: dict, new: dict) -> tuple:
    """The key whose values differ most (relative), and by how much."""
    worst_key, worst = None, 0.0
    for key, value in old.items():
        difference = _relative(value, new[key])
        if difference > worst:
            worst_key, worst = key, difference
    return worst_key, worst


def compare_measurement(recorded: dict, fresh: dict) -> tuple[bool, str]:
    """The same check for a measurement's canary: {"values": {name: number}}, bit for bit on the
    machine that recorded it."""
    same_machine = recorded.get("machine") == fresh["machine"]
    rtol = 0.0 if same_machine else MACHINE_RTOL
    old, new = recorded.get("values", {}), fresh.get("values", {})
    if sorted(old) != sorted(new):
        return False, f"different numbers recorded (e.g. {sorted(set(old) ^ set(new))[:3]})"
    worst = max(((_relative(old[key], new[key]), key) for key in old), default=(0.0, None))
    where = "" if same_machine else f" (another machine or torch than the recorded one: allowing {rtol:g})"
    if worst[0] <= rtol:
        return True, "identical" if worst[0] == 0 else f"largest relative difference {worst[0]:.1e}{where}"
    return False, f"{worst[1]} differs by {worst[0]:.1e} (relative){where}"


def _values(canary: dict) -> dict:
    values = {tuple(row[:5]): row[5] for row in canary["metrics"]}
    values[("weights", "abs_sum")] = canary["weights_abs_sum"]
    values[("weights", "square_sum")] = canary["weights_square_sum"]
    return values


def _relative(a, b) -> float:
    if isinstance(a, str) or isinstance(b, str):
        return 0.0 if a == b else math.inf
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def _name(key) -> str:
    if key[0] == "weights":
        return f"the weights' {key[1].replace('_', ' ')}"
    step, probe, layer, head, length = key
    where = ", ".join(f"{k} {v}" for k, v in (("layer", layer), ("head", head), ("length", length)) if v >= 0)
    return f"{probe} at step {step}" + (f" ({where})" if where else "")


def matches_stored_run(canary: dict, run, trained_on: dict | None = None) -> tuple[bool, str]:
    """Whether the stored run logged the canary's metrics, bit for bit, over the canary's steps: if not,
    it was trained by other arithmetic (an older version of the code). `trained_on`: the machine that
    trained the run, where known; on another one only the metrics before the first update are compared,
    within MACHINE_RTOL (see the module's docstring)."""
    elsewhere = trained_on is not None and trained_on != canary["machine"]
    stored = {(int(r.step), r.probe, int(r.layer), int(r.head), int(r.length)): _number(r.value)
              for r in run.metrics().itertuples() if r.step <= canary["steps"]}
    for row in canary["metrics"]:
        key, value = tuple(row[:5]), row[5]
        if key not in stored:
            return False, f"the stored run has no {_name(key)}"
        if elsewhere and not _before_first_update(key):
            continue
        if _relative(value, stored[key]) > (MACHINE_RTOL if elsewhere else 0):
            return False, f"{_name(key)}: stored {stored[key]!r}, recomputed {value!r}"
    if elsewhere:
        return True, f"trained on {trained_on.get('cpu')}: the metrics before the first update agree"
    return True, "identical"
