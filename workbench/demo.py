"""The shipped demo runs: small, real runs in data/demo/ so the dashboard shows content on its
first start, before anyone trains anything. `workbench demo build` remakes them (a few minutes);
a run already in the user's store with the same config is copied instead of retrained."""
from __future__ import annotations

import shutil

from .config import RunConfig
from .experiments import get_experiment
from .run_files import LOCK
from .store import Run, demo_root, run_path
from .train import train

COPY_WITH_ROPE = ["task.name=copy", "task.eval_lengths=5,10,15,20", "model.pos=rope", "model.n_layers=2",
                  "model.d_model=64", "model.n_heads=2", "train.steps=600", "train.lr=3e-3",
                  "probes.every=100", "train.eval_samples=256"]


def demo_configs() -> dict[str, RunConfig]:
    """Seed 0 of the addition study (coupled ids as a table and as a relative bias, learned
    positions), and a 2-layer copy model."""
    variants = get_experiment("lengthgen-addition").variants(False)
    configs = {f"addition, {v.labels['pos']} positions": v.config for v in variants
               if v.labels["seed"] == 0 and v.labels["pos"] in ("coupling", "coupling_relative", "learned")}
    configs["copy, rope"] = RunConfig.load(None, COPY_WITH_ROPE)
    return configs


def build_demo(progress: bool = True) -> list[str]:
    """Train (or copy from the store) the demo runs into data/demo/, replacing what was there."""
    root = demo_root()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    ids = []
    for label, config in demo_configs().items():
        stored = Run(run_path(config.run_id))
        if stored.finished():
            shutil.copytree(stored.path, root / config.run_id)
            run = Run(root / config.run_id)
        else:
            run = train(config, progress=progress, root=root)
        run.write_status(label=f"demo: {label}")
        (run.path / "checkpoint.safetensors").unlink(missing_ok=True)
        (run.path / LOCK).unlink(missing_ok=True)  # nobody trains a shipped run
        ids.append(run.run_id)
    return ids
