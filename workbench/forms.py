"""The Train form, described from the registries and the config dataclasses (no field is typed
twice): which fields there are, their widget, default and choices; and the form's values turned
into a RunConfig through the same validation, and so the same messages, as the command line.

Numbers and lists are entered as text, exactly as on the command line (`train.lr=3e-3`), so a bad
value gets the command line's message instead of a widget silently clamping it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import ACTIVATIONS, FEATURE_MAPS, INITS, NORMS, SECTIONS, SOFTMAXES, SSM_INITS, RunConfig
from .typed import describe

SECTION_TITLES = {"task": "Task", "model": "Model", "train": "Training", "probes": "Probes"}
HYBRID = "hybrid (a mixer per layer)"  # the mixer choice that shows model.layers instead


def mixer_settings() -> dict[str, tuple[str, ...]]:
    """Mixer name -> the model settings only it reads, as each mixer class declares them
    (models/mixers/*.py: `settings`), so a new mixer needs no edit here."""
    from .models import MIXERS

    return {name: MIXERS.get(name).settings for name in MIXERS.names()}


@dataclass
class Field:
    key: str  # the dotted override key, e.g. "model.n_heads" or "task.max_digits"
    kind: str  # "choice", "multichoice", "bool" or "text"
    default: Any
    help: str = ""
    choices: tuple = ()


def _choices() -> dict[str, tuple]:
    from .models import MIXERS, POSITIONS
    from .probes import PROBES

    return {"model.mixer": tuple(MIXERS.names()), "model.pos": tuple(POSITIONS.names()),
            "model.activation": ACTIVATIONS, "model.softmax": SOFTMAXES, "model.ssm_init": SSM_INITS,
            "model.init": INITS, "model.feature_map": FEATURE_MAPS, "model.norm": NORMS,
            "probes.extra": tuple(PROBES.names())}


def text_value(value: Any) -> str:
    """A default as the command line would spell it."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def _field(key: str, row: dict, choices: dict[str, tuple]) -> Field:
    default = row["default"]
    if key in choices:
        kind = "multichoice" if isinstance(default, list) else "choice"
        return Field(key, kind, default, row["help"], choices[key])
    if row.get("choices"):
        return Field(key, "choice", default, row["help"], tuple(row["choices"]))
    if row["type"] == "bool":
        return Field(key, "bool", bool(default), row["help"])
    return Field(key, "text", text_value(default), row["help"])


def task_fields(task_name: str) -> list[Field]:
    """The task's own parameters (from its Params dataclass) and the task options every task has."""
    from .tasks import TASKS

    rows = describe(TASKS.get(task_name).Params)
    fields = [_field(f"task.{row['name']}", row, {}) for row in rows]
    coupled = TASKS.get(task_name).coupled_first is not None  # eval_start moves coupled ids only
    common = [row for row in describe(SECTIONS["task"])
              if row["name"] not in ("name", "params") and (coupled or row["name"] != "eval_start")]
    return fields + [_field(f"task.{row['name']}", row, {}) for row in common]


def section_fields(section: str) -> list[Field]:
    """Every field of a model / train / probes section, with choices from the registries."""
    choices = _choices()
    return [_field(f"{section}.{row['name']}", row, choices) for row in describe(SECTIONS[section])]


def mixer_choices() -> list[str]:
    from .models import MIXERS

    return [*MIXERS.names(), HYBRID]


def model_fields(mixer: str) -> list[Field]:
    """The model settings that apply to `mixer` (every mixer-specific one for a hybrid); the mixer itself
    is chosen outside the form, and a hybrid names its layers instead of a mixer and a layer count."""
    settings = mixer_settings()
    specific = {name for names in settings.values() for name in names}
    applies = specific if mixer == HYBRID or mixer not in settings else set(settings[mixer])
    hidden = {"mixer", "n_layers" if mixer == HYBRID else "layers", "mixer_options"} | (specific - applies)
    shared = [field for field in section_fields("model") if field.key.split(".", 1)[1] not in hidden]
    return shared + own_option_fields(mixer)


def own_option_fields(mixer: str) -> list[Field]:
    """The settings a mixer declares itself (Mixer.Options), written model.NAME like the shared ones."""
    from .models import MIXERS

    names = MIXERS.names() if mixer == HYBRID else [mixer] if mixer in MIXERS else []
    fields, seen = [], set()
    for name in names:
        options = MIXERS.get(name).Options
        for row in describe(options) if options is not None else []:
            if row["name"] not in seen:
                seen.add(row["name"])
                fields.append(_field(f"model.{row['name']}", row, {}))
    return fields


def form_fields(task_name: str, mixer: str) -> dict[str, list[Field]]:
    """Section -> the fields the Train form shows for this task and mixer."""
    return {"task": task_fields(task_name), "model": model_fields(mixer),
            "train": section_fields("train"), "probes": section_fields("probes")}


def mixer_of(config: RunConfig) -> str:
    return HYBRID if config.model.layers else config.model.mixer


def form_values(config: RunConfig) -> dict[str, Any]:
    """Dotted key -> widget value of every field the form shows for this config: the form filled in."""
    values = config.to_dict()
    filled = {}
    for fields in form_fields(config.task.name, mixer_of(config)).values():
        for field in fields:
            section, name = field.key.split(".", 1)
            nested = {"task": values["task"]["params"], "model": values["model"]["mixer_options"]}[section] \
                if section in ("task", "model") else {}
            value = nested[name] if name in nested else values[section][name]
            filled[field.key] = (list(value) if field.kind == "multichoice" else value if field.kind in ("choice", "bool")
                                 else text_value(value))
    return filled


def config_from_form(task_name: str, values: dict[str, Any], mixer: str = "attention") -> RunConfig:
    """values: dotted key -> widget value. Raises ConfigError with the command line's message."""
    overrides: dict[str, dict] = {"task": {"name": task_name}}
    if mixer != HYBRID:
        overrides["model"] = {"mixer": mixer}
    for key, value in values.items():
        section, _, name = key.partition(".")
        if isinstance(value, (list, tuple)):
            value = list(value)
        elif isinstance(value, str):
            value = value.strip()
        overrides.setdefault(section, {})[name] = value
    return RunConfig.from_dict(overrides)


def overrides_text(config: RunConfig, task_name: str) -> str:
    """The command line that trains the same run, for the user to copy."""
    defaults = RunConfig.from_dict({"task": {"name": task_name}}).to_dict()
    parts = []
    for section, values in config.to_dict().items():
        for name, value in values.items():
            if name == "params":
                for key, param in value.items():
                    if defaults["task"]["params"].get(key) != param:
                        parts.append(f"task.{key}={text_value(param)}")
            elif defaults[section].get(name) != value or (section, name) == ("task", "name"):
                parts.append(f"{section}.{name}={text_value(value)}")
    return "workbench train " + " ".join(parts)
