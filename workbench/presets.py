"""Starting points for the Train page: the README's first run, and the runs behind three phenomena.

A preset is a list of RunConfigs. The first fills the form; the others are trained beside it as the
same form with their differences applied (MQAR's Mamba run is the form with `model.mixer=mamba
model.pos=nope`), so an edited form still trains a fair pair. The phenomena's presets are seed 0 of
a named experiment's recipe, taken from the recipe itself: a preset run is the experiment's run
(the same id), trained once and reused by both.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .config import RunConfig

# README.md, "A first run": 1-10 digit addition, one layer, position coupling (about 80 s on a quiet core).
FIRST_RUN = ["task.name=addition", "model.pos=coupling", "model.n_layers=1", "model.d_model=64", "model.n_heads=4",
             "train.steps=2000", "train.lr=3e-3", "task.eval_lengths=5,10,15"]


@dataclass(frozen=True)
class Preset:
    title: str
    short: str  # the runs' label unless the user gives one
    description: str
    configs: Callable[[], list[RunConfig]]


def recipe_configs(experiment: str, **labels) -> list[RunConfig]:
    """The configs of a named experiment's recipe (full budget) whose labels match, in recipe order;
    a label given as a tuple matches any of its values."""
    from .experiments import get_experiment

    def matches(variant) -> bool:
        return all(variant.labels.get(key) in (value if isinstance(value, tuple) else (value,))
                   for key, value in labels.items())

    return [variant.config for variant in get_experiment(experiment).variants(False) if matches(variant)]


PRESETS = {preset.title: preset for preset in [
    Preset("A first run: addition with position coupling", "first run",
           "The README's first run: a 1-layer Transformer learns 1-10 digit addition with coupled position ids "
           "and is tested at 5, 10 and 15 digits (15 is beyond its training lengths).",
           lambda: [RunConfig.load(None, FIRST_RUN)]),
    Preset("Copy with a state-space model (Mamba)", "copy with Mamba",
           "A 2-layer Mamba with a small state (d_state=8) copies strings of up to 24 symbols: seed 0 of the "
           "copy-vs-length experiment, whose attention twin copies far longer strings.",
           lambda: recipe_configs("copy-vs-length", mixer="mamba", init="fan_in", seed=0)),
    Preset("MQAR: attention vs Mamba (2 runs)", "MQAR",
           "Multi-query associative recall at width 64: attention against Mamba on the same data and budget "
           "(seed 0 of mqar-vs-width; a few minutes each). The second run is this form with model.mixer=mamba "
           "and model.pos=nope.",
           lambda: recipe_configs("mqar-vs-width", mixer=("attention", "mamba"), width=64, seed=0)),
    Preset("Entropy collapse: plain vs sigmaReparam (2 runs)", "entropy collapse",
           "A high learning rate with no warmup collapses attention entropy in a plain Transformer; with "
           "sigmaReparam it does not (seed 0 of entropy-collapse). The second run is this form with "
           "model.sigma_reparam=true; compare them on the Dynamics page.",
           lambda: recipe_configs("entropy-collapse", seed=0)),
]}


def differences(base: RunConfig, other: RunConfig) -> dict[str, object]:
    """Dotted key -> value for every setting where `other` differs from `base` (task parameters as task.KEY)."""
    mine, theirs = base.to_dict(), other.to_dict()
    changed = {}
    for section, values in theirs.items():
        for name, value in values.items():
            if name == "params":
                changed.update({f"task.{key}": param for key, param in value.items()
                                if mine["task"]["params"].get(key) != param})
            elif mine[section].get(name) != value:
                changed[f"{section}.{name}"] = value
    return changed


def preset_runs(preset: Preset, form_config: RunConfig) -> list[RunConfig]:
    """The runs to train for a preset whose first config was edited into `form_config`."""
    first, *others = preset.configs()
    return [form_config] + [form_config.replace(**differences(first, other)) for other in others]


def run_labels(configs: list[RunConfig], label: str) -> list[str]:
    """A label for each run: `label`, and where runs differ, what this one is (`label: model.mixer=mamba`),
    so legends tell the runs of a pair apart."""
    if len(configs) < 2:
        return [label] * len(configs)
    keys = list(dict.fromkeys(key for other in configs[1:] for key in differences(configs[0], other)))
    own = [" ".join(f"{key.split('.', 1)[1]}={_value(config, key)}" for key in keys) for config in configs]
    return [f"{label}: {text}" if label else text for text in own]


def _value(config: RunConfig, key: str):
    section, name = key.split(".", 1)
    values = config.to_dict()[section]
    value = values["params"][name] if section == "task" and name not in values else values[name]
    return ",".join(map(str, value)) if isinstance(value, list) else str(value).lower() if isinstance(value, bool) \
        else value
