"""One progress bar over the training steps of many runs, read from the store their trainers write.

The trainers may run anywhere (this machine's process pool, Ray workers on other machines): each
refreshes its run's status.json about once a second, and the store is shared, so the bar needs no
channel of its own. Used by workbench.parallel and workbench.ray_backend.
"""
from __future__ import annotations

from tqdm.auto import tqdm

from .store import FINISHED, Run, run_path


class StepsBar:
    """One bar over the steps of all runs still to train, read from the status files their trainers
    refresh every second (wherever the trainers run: the store is shared)."""

    def __init__(self, jobs, todo, root, workers: int, where: str = "", progress: bool = True):
        self.jobs, self.todo, self.root = jobs, todo, root
        total = sum(jobs[i][0].train.steps for i in todo)
        self.bar = tqdm(total=total, desc=f"{len(todo)} runs, {workers} at a time{where}", unit="step",
                        disable=not progress)

    def refresh(self) -> None:
        if not self.bar.disable:
            self.bar.update(self.steps_done() - self.bar.n)

    def steps_done(self) -> int:
        steps = 0
        for i in self.todo:
            config = self.jobs[i][0]
            status = Run(run_path(config.run_id, self.root)).status()
            steps += config.train.steps if status.get("status") in FINISHED else int(status.get("step") or 0)
        return steps

    def close(self) -> None:
        self.bar.close()
