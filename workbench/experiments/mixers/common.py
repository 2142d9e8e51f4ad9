"""What the sequence-mixer experiments share: each mixer's overrides, a quiet run config, the
training budget, and the two numbers they compare models by (steps to a threshold, state size)."""
from __future__ import annotations

import math

import pandas as pd

from ...config import RunConfig
from ...models import model_for_task
from ...tasks import build_task


# Mixers need no positional encoding of their own except softmax attention (rotary keeps it
# length-agnostic); Based is the linear attention Zoology compares against.
MIXER_OVERRIDES = {
    "attention": ["model.mixer=attention", "model.pos=rope"],
    "mamba": ["model.mixer=mamba", "model.pos=nope"],
    "linear_attention": ["model.mixer=linear_attention", "model.feature_map=based", "model.pos=nope"],
    "h3": ["model.mixer=h3", "model.pos=nope"],
}
QUIET = ["train.checkpoint_every=0", "train.threads=1", "probes.entropy=false", "probes.sparsity=false"]


def config(*overrides: str) -> RunConfig:
    return RunConfig.load(None, [*QUIET, *overrides])


def budget(fast: bool, steps: int, evaluations: int, eval_samples: int = 256) -> list[str]:
    """Steps and evaluation cadence; the fast mode is a few steps on small batches, same code path."""
    if fast:
        return ["train.steps=4", "train.eval_every=2", "train.eval_samples=16", "train.batch_size=8",
                "train.warmup=2"]
    return [f"train.steps={steps}", f"train.eval_every={max(steps // evaluations, 1)}",
            f"train.eval_samples={eval_samples}"]


def by_number(items):
    """(key, value) pairs sorted by their keys read as numbers: a summary read back from JSON has its keys
    sorted as text ("16" before "2")."""
    return sorted(items, key=lambda kv: int(kv[0]))


def steps_to_reach(curve: pd.Series, threshold: float) -> float:
    """The first evaluated step at which the curve reaches threshold; inf if it never does."""
    reached = curve[curve >= threshold]
    return float(reached.index[0]) if len(reached) else math.inf


def state_size(config: RunConfig, length: int) -> int:
    """Numbers all mixers of the model carry after `length` tokens (per sequence)."""
    task = build_task(config.task.name, config.task.params)
    model = model_for_task(config.model, task)
    return int(sum(block.mixer.state_size(length) for block in model.blocks))


def finite(value: float) -> int | None:
    return None if math.isinf(value) or math.isnan(value) else int(value)
