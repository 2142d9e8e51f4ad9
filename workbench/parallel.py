"""Train many runs at once, one process per core.

A small model trains fastest on one thread (a second thread mostly waits), so on a 2-core laptop
two runs side by side finish a sweep in about half the wall time of one after another. Each run
trains in its own spawned process with its own config (threads, seed), so its data and metrics
are exactly those of a run trained alone; the run store is written atomically per run, so two
processes never touch the same files.

Workers: `WORKBENCH_WORKERS` if set, otherwise the number of cores (never more than the runs
still to train). Runs already finished in the store are fetched, not retrained.

Backends: `local` (this process pool, the default) or `ray` (workbench.ray_backend: one Ray task
per run, on a local Ray instance or a cluster), chosen by an argument, `WORKBENCH_BACKEND`, or the
command line's `--backend`. Both write the same runs into the same store.
"""
from __future__ import annotations

import importlib.util
import multiprocessing
import os
import sys
import types
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Callable

from .config import RunConfig
from .errors import ConfigError
from .steps_bar import StepsBar
from .store import Run, data_root, run_path

PROGRESS_POLL_S = 2.0
BACKENDS = ("local", "ray")
RAY_EXTRA = "pip install -e '.[ray]'"


def choose_backend(name: str | None = None) -> str:
    """The backend asked for (argument, else WORKBENCH_BACKEND, else local), checked to be usable."""
    field = "--backend" if name else "WORKBENCH_BACKEND"
    name = (name or os.environ.get("WORKBENCH_BACKEND", "").strip() or "local").lower()
    if name not in BACKENDS:
        raise ConfigError(field, name, choices=BACKENDS)
    if name == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(field, name, f"Ray is not installed; install the extra: {RAY_EXTRA}")
    return name


def default_workers(jobs: int) -> int:
    setting = os.environ.get("WORKBENCH_WORKERS", "").strip()
    if setting:
        if not setting.isdigit() or int(setting) < 1:
            raise ConfigError("WORKBENCH_WORKERS", setting, "expected a whole number >= 1")
        workers = int(setting)
    else:
        workers = os.cpu_count() or 1
    return max(1, min(workers, jobs))


class TrainedRuns(list):
    """The runs, in the order of the jobs, and how many trained side by side (1 when none trained)."""

    def __init__(self, runs, workers: int):
        super().__init__(runs)
        self.workers = workers


@contextmanager
def _children_skip_main_script():
    """A spawned child re-runs the parent's __main__ script when that script cannot be imported by
    name. Under Streamlit (and its AppTest) __main__ is a dashboard page, which must not run again
    inside a worker, so the children start from an empty __main__; they need nothing from it,
    since a job is a config and the work is done by this module's function."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _train_in_child(config_dict: dict, label: str, root: str) -> str:
    from .train import train

    return train(RunConfig.from_dict(config_dict), progress=False, label=label, root=Path(root)).run_id


def train_many(jobs: list[tuple[RunConfig, str]], workers: int | None = None, progress: bool = True,
               on_done: Callable[[int, Run], None] | None = None, backend: str | None = None,
               ray_address: str | None = None) -> TrainedRuns:
    """Train every (config, label) and return the runs in the order given.

    on_done(index, run) is called as each run finishes (fetched runs first). backend: "local" or
    "ray" (default: WORKBENCH_BACKEND, else local); ray_address: a running Ray cluster (default:
    RAY_ADDRESS, else a local Ray instance of `workers` CPUs)."""
    from .train import train

    backend = choose_backend(backend)
    root = data_root()
    runs: list[Run | None] = [None] * len(jobs)
    todo = []
    for index, (config, _) in enumerate(jobs):
        run = Run(run_path(config.run_id, root))
        if run.finished():
            runs[index] = run
            if on_done:
                on_done(index, run)
        else:
            todo.append(index)
    if backend == "ray" and todo:
        from .ray_backend import train_on_ray

        used = train_on_ray(jobs, todo, runs, root, workers=workers, address=ray_address, progress=progress,
                            on_done=on_done)
        return TrainedRuns(runs, workers=used)
    workers = default_workers(len(todo)) if workers is None else max(1, min(workers, len(todo) or 1))
    if workers == 1:
        for index in todo:
            runs[index] = train(jobs[index][0], progress=progress, label=jobs[index][1], root=root)
            if on_done:
                on_done(index, runs[index])
        return TrainedRuns(runs, workers=1)
    bar = StepsBar(jobs, todo, root, workers, progress=progress)
    # spawn, not fork: a forked child would inherit the parent's torch thread pools and locks
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        with _children_skip_main_script():  # the pool starts its processes on these submits
            futures = {pool.submit(_train_in_child, jobs[i][0].to_dict(), jobs[i][1], str(root)): i for i in todo}
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=PROGRESS_POLL_S, return_when=FIRST_COMPLETED)
                for future in done:
                    index = futures[future]
                    runs[index] = Run(run_path(future.result(), root))
                    if on_done:
                        on_done(index, runs[index])
                bar.refresh()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # children save their runs as they stop
            raise
        finally:
            bar.close()
    return TrainedRuns(runs, workers=workers)
