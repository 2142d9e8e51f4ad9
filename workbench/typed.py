"""Build typed dataclasses from plain dicts (YAML, JSON, key=value strings) with clear errors."""
from __future__ import annotations

import copy
import dataclasses
import types
import typing
from typing import Any

from .errors import ConfigError


def _coerce(value: Any, annotation: Any, field: str) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if type(None) in args:
                return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], field)
    if origin in (list, tuple):
        items = value
        if isinstance(value, str):
            items = [v for v in value.split(",") if v.strip() != ""]
        if not isinstance(items, (list, tuple)):
            raise ConfigError(field, value, "expected a comma-separated list")
        converted = [_coerce(v, args[0] if args else str, field) for v in items]
        return tuple(converted) if origin is tuple else converted
    if annotation is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise ConfigError(field, value, "expected true or false")
    if annotation is int:
        if isinstance(value, bool):
            raise ConfigError(field, value, "expected an integer")
        try:
            number = float(value) if isinstance(value, str) and ("e" in value.lower() or "." in value) else value
            if isinstance(number, float) and not number.is_integer():
                raise ValueError
            return int(number)
        except (TypeError, ValueError):
            raise ConfigError(field, value, "expected an integer") from None
    if annotation is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(field, value, "expected a number") from None
    if annotation is str:
        if not isinstance(value, (str, int, float)):
            raise ConfigError(field, value, "expected a string")
        return str(value)
    return value


def build(cls: type, values: dict[str, Any], prefix: str):
    """Make `cls(**values)` with each value converted to its field's type; unknown keys are errors."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{prefix}.{key}", value, f"unknown setting; choose one of: {', '.join(sorted(known))}")
        kwargs[key] = _coerce(value, hints[key], f"{prefix}.{key}")
    return cls(**kwargs)


def setting(default: Any, help: str):
    """A dataclass field with its help text, which forms, `task show` and docs read through describe()."""
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


def describe(cls: type) -> list[dict[str, Any]]:
    """Name, type, default and help of every field: for `task show`, forms and docs."""
    hints = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        rows.append({"name": f.name, "type": _type_name(hints[f.name]), "default": default,
                     "help": f.metadata.get("help", ""), "choices": f.metadata.get("choices")})
    return rows


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def to_dict(obj) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(obj).items()}
