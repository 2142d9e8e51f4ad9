"""A sweep: one base config and the Cartesian product of a few varied keys, trained as many runs.

    workbench sweep train.steps=400 --vary model.pos=rope,nope --vary train.seed=0,1,2

trains six runs (locally side by side, or on Ray with --backend ray); each is an ordinary run in
the store, fetched instead of retrained when it is already there.
"""
from __future__ import annotations

import itertools
from pathlib import Path

from .config import RunConfig
from .errors import ConfigError


def split_values(text: str) -> list[str]:
    """'rope,nope' -> ['rope', 'nope']; commas inside brackets stay, so '[5,10],[10,20]' is two values."""
    values, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            values.append(current.strip())
            current = ""
        else:
            current += char
    values.append(current.strip())
    return values


def parse_vary(items: list[str]) -> list[tuple[str, list[str]]]:
    """['model.pos=rope,nope', ...] -> [('model.pos', ['rope', 'nope']), ...]"""
    varied = []
    for item in items:
        key, sep, text = item.partition("=")
        values = split_values(text) if sep else []
        if not sep or "." not in key or not all(values):
            raise ConfigError("--vary", item, "expected section.key=value1,value2, e.g. train.seed=0,1,2")
        if key.strip() in [k for k, _ in varied]:
            raise ConfigError("--vary", item, "each key may be varied once")
        varied.append((key.strip(), values))
    return varied


def sweep_jobs(path: str | Path | None, overrides: list[str], vary: list[str],
               label: str = "") -> list[tuple[RunConfig, str]]:
    """Every (config, label) of the sweep, in the order of the product (the last key varies fastest)."""
    varied = parse_vary(vary)
    jobs = []
    for combination in itertools.product(*[values for _, values in varied]):
        settings = [f"{key}={value}" for (key, _), value in zip(varied, combination)]
        config = RunConfig.load(path, [*overrides, *settings])
        jobs.append((config, ", ".join(filter(None, [label, *settings]))))
    return jobs
