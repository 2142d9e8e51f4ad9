"""Tiny finished runs of the in-context tasks (and one addition run, which the ICL tools must refuse),
shared by the views tests and the In-context page tests."""
from __future__ import annotations

from pathlib import Path

from workbench.config import RunConfig
from workbench.train import train

TINY = ["model.d_model=16", "model.n_heads=2", "model.n_layers=2", "model.init=fan_in", "train.steps=20",
        "train.batch_size=16", "train.warmup=5", "probes.every=0", "train.eval_samples=32", "train.threads=1"]
REGRESSION = ["task.name=icl_linear_regression", "task.dim=2", "task.min_examples=5", "task.max_examples=5"]
RUNS = {
    "regression": REGRESSION + TINY,
    "looped": REGRESSION + TINY + ["model.looped=true"],
    "boolean": ["task.name=icl_boolean", "task.bits=4", "task.min_examples=6", "task.max_examples=6"] + TINY,
    "addition": ["task.name=addition", "task.max_digits=2", "model.d_model=16", "model.n_heads=2", "model.n_layers=1",
                 "train.steps=5", "train.batch_size=8", "probes.every=0", "train.eval_samples=8", "train.threads=1"],
}


def train_runs(root: Path) -> dict[str, str]:
    """{name: run id} of every run in RUNS, trained into the store at `root`."""
    return {name: train(RunConfig.load(None, overrides), progress=False, root=root).run_id
            for name, overrides in RUNS.items()}
