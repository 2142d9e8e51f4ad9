"""The shipped demo runs: small, real runs in data/demo/ so the dashboard shows content on its
first start, before anyone trains anything. `workbench demo build` remakes them (a few minutes)."""
from __future__ import annotations

import shutil

from .config import RunConfig
from .store import demo_root
from .train import train

COMMON = ["task.name=addition", "task.max_digits=10", "task.eval_lengths=5,10,15,20,25,30",
          "model.n_layers=1", "model.d_model=64", "model.n_heads=4", "train.batch_size=128",
          "train.lr=3e-3", "train.threads=1", "probes.every=250", "probes.snapshot_examples=1", "train.eval_samples=256"]

DEMO_RUNS = {
    "addition, position coupling": COMMON + ["model.pos=coupling", "train.steps=2000"],
    "addition, learned absolute positions": COMMON + ["model.pos=learned", "train.steps=2000"],
    "copy, rope": ["task.name=copy", "task.eval_lengths=5,10,15,20", "model.pos=rope", "model.n_layers=2",
                   "model.d_model=64", "model.n_heads=2", "train.steps=600", "train.lr=3e-3", "train.threads=1",
                   "probes.every=100", "train.eval_samples=256"],
}


def demo_configs() -> dict[str, RunConfig]:
    return {label: RunConfig.load(None, overrides) for label, overrides in DEMO_RUNS.items()}


def build_demo(progress: bool = True) -> list[str]:
    """Train the demo runs into data/demo/ (replacing what was there); return their ids."""
    root = demo_root()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    ids = []
    for label, config in demo_configs().items():
        run = train(config, progress=progress, label=f"demo: {label}", root=root)
        (run.path / "checkpoint.safetensors").unlink(missing_ok=True)
        ids.append(run.run_id)
    return ids
