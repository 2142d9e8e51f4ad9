"""Every named experiment by name. A leaf of the experiments package: results.py (a result draws
its experiment's figure) and base.py (which defines Experiment) both read it, neither the other."""
from __future__ import annotations

from ..errors import ConfigError

# "Experiment" is base.Experiment, named but not imported: base imports this module
EXPERIMENTS: dict[str, "Experiment"] = {}  # noqa: F821


def register_experiment(experiment: "Experiment") -> "Experiment":
    if experiment.name in EXPERIMENTS:
        raise KeyError(f"experiment {experiment.name!r} registered twice")
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def get_experiment(name: str) -> "Experiment":
    if name not in EXPERIMENTS:
        raise ConfigError("experiment", name, choices=sorted(EXPERIMENTS))
    return EXPERIMENTS[name]
