"""Jobs the dashboard runs in the background: training one run, running a named experiment.

The page must stay responsive and survive a reload, so each job is its own process
(`python -m workbench train CONFIG.json --quiet`, `python -m workbench experiment run NAME`), and
its pid and command are kept in a small JSON file in the store root (<store>/.jobs/), where a
reload or another browser tab finds it. Progress is read from the run's status.json, which the
trainer refreshes about once a second. Cancel sends SIGINT, as Ctrl-C would: the trainer saves a
resumable checkpoint and marks the run "interrupted".
"""
from __future__ import annotations

import functools
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from .errors import ConfigError
from .store import FINISHED, REPO_ROOT, atomic_write_json, data_root

JOBS_FOLDER = ".jobs"  # a dot folder: the run listing skips it
_CHILDREN: dict[int, subprocess.Popen] = {}  # processes this server started, so exits are reaped


def jobs_root() -> Path:
    return data_root() / JOBS_FOLDER


@dataclass
class Job:
    kind: str  # "train" or "experiment"
    name: str  # the run id, or the experiment name
    pid: int
    started: float  # time.time() at launch
    command: list[str]
    fast: bool = False  # experiments: the smaller budget
    steps: int | None = None  # experiments run on another Budget: its steps and seeds
    seeds: list[int] | None = None
    backend: str = "local"  # experiments: where the runs train (local process pool or Ray)

    @property
    def budget(self):
        from .experiments import Budget

        budget = Budget(self.steps, tuple(self.seeds) if self.seeds is not None else None)
        return budget if budget.label else None

    @property
    def key(self) -> str:
        budget = self.budget
        return f"{self.kind}-{self.name}" + ("-fast" if self.fast else "") + (f"-{budget.slug}" if budget else "")

    @property
    def alive(self) -> bool:
        return process_alive(self.pid)

    def log_tail(self, lines: int = 15) -> str:
        path = jobs_root() / f"{self.key}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def process_alive(pid: int) -> bool:
    """Whether a job's process still runs (an exited, unreaped child counts as finished)."""
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{pid}")
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        command = (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return True  # no /proc (not Linux): trust the signal check
    return state != "Z" and b"workbench" in command  # a reused pid runs something else


# --- starting, listing, cancelling ----------------------------------------------------------------
def _launch(kind: str, name: str, command: list[str], fast: bool = False, budget=None, backend: str = "local") -> Job:
    job = Job(kind, name, 0, time.time(), command, fast, budget and budget.steps,
              list(budget.seeds) if budget and budget.seeds is not None else None, backend)
    previous = find_job(kind, name, fast, budget)
    if previous is not None and previous.alive:
        raise ConfigError(kind, name, "is already running; wait for it or cancel it")
    root = jobs_root()
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "WORKBENCH_DATA": str(data_root().resolve()), "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with open(root / f"{job.key}.log", "wb") as log:
        # Its own session: a Ctrl-C meant for the dashboard server does not reach the job.
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    _CHILDREN[process.pid] = process
    job.pid = process.pid
    atomic_write_json(root / f"{job.key}.json", asdict(job))
    return job


def start_training(config, label: str = "") -> Job:
    """Train `config` in a background process (an identical finished run returns at once)."""
    root = jobs_root()
    config_path = root / f"train-{config.run_id}.config.json"
    atomic_write_json(config_path, config.to_dict())
    command = [sys.executable, "-m", "workbench", "train", str(config_path), "--quiet"]
    return _launch("train", config.run_id, command + (["--label", label] if label else []))


def train_or_reuse(configs, labels: list[str]) -> list[tuple[str, str]]:
    """Start training each config in the background, except a run the store already holds finished:
    that one is reused, not trained again. (run id, what happened) for each: "started", "resumed" (an
    interrupted run continues from its checkpoint) or "reused <status>"."""
    outcomes = []
    for config, label in zip(configs, labels):
        status = read_status(config.run_id)
        if status.get("status") in FINISHED:
            outcomes.append((config.run_id, f"reused {status['status']}"))
            continue
        start_training(config, label)
        outcomes.append((config.run_id, "resumed" if status.get("status") == "interrupted" else "started"))
    return outcomes


def start_experiment(name: str, fast: bool = False, budget=None, backend: str = "local",
                     ray_address: str = "") -> Job:
    """Run a named experiment in a background process, on the recipe's budget or on `budget`, its
    runs trained by `backend` (local, or ray: on the cluster at ray_address or a local instance)."""
    from .experiments import get_experiment, run_command
    from .parallel import choose_backend

    recipe = get_experiment(name)  # an unknown name is refused here, not in the background
    if budget is not None:
        budget.apply(recipe.variants(fast))  # so is a seed the recipe lacks
    backend = choose_backend(backend)  # so is Ray when it is not installed
    command = [sys.executable, "-m", "workbench", *run_command(name, fast, budget, backend, ray_address)]
    return _launch("experiment", name, command, fast, budget, backend=backend)


def jobs(kind: str | None = None) -> list[Job]:
    """The jobs recorded in the store, newest first."""
    root = jobs_root()
    found = []
    for path in root.glob("*.json") if root.exists() else []:
        if path.name.endswith(".config.json"):
            continue
        try:
            found.append(Job(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue  # a half-written or foreign file is not a job
    return sorted((j for j in found if kind in (None, j.kind)), key=lambda j: -j.started)


def find_job(kind: str, name: str, fast: bool = False, budget=None) -> Job | None:
    return next((j for j in jobs(kind) if j.name == name and j.fast == fast and j.budget == budget), None)


def cancel(job: Job) -> bool:
    """Ask the job to stop as Ctrl-C would; False when it had already finished."""
    if not job.alive:
        return False
    try:  # the whole process group: an experiment's parallel runs stop (and save) with it
        os.killpg(job.pid, signal.SIGINT)
    except (ProcessLookupError, PermissionError):
        os.kill(job.pid, signal.SIGINT)
    return True


def forget(job: Job) -> None:
    """Remove a finished job's record (its run stays in the store)."""
    if job.alive:
        raise ConfigError(job.kind, job.name, "is still running; cancel it first")
    root = jobs_root()
    for suffix in (".json", ".log", ".config.json"):
        (root / f"{job.key}{suffix}").unlink(missing_ok=True)
    _CHILDREN.pop(job.pid, None)


# --- progress -------------------------------------------------------------------------------------
def read_status(run_id: str) -> dict:
    path = data_root() / run_id / "status.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # not started yet, or caught between writes
        return {}


def run_progress(run_id: str, alive: bool = True) -> dict:
    """step, steps, fraction, last_loss, elapsed_s and a state: starting, running, completed,
    diverged, interrupted, failed, or stopped (the process ended without saying why)."""
    status = read_status(run_id)
    state = status.get("status") or ("starting" if alive else "failed")
    if not alive and state == "running":
        state = "stopped"
    step, steps = int(status.get("step") or 0), int(status.get("steps") or 0)
    loss = status.get("last_loss")
    if loss is not None and not math.isfinite(loss) and state != "diverged":
        loss = None  # no step has finished yet: no loss to show (a diverged run's NaN is news)
    return {"state": state, "step": step, "steps": steps, "fraction": min(1.0, step / steps) if steps else 0.0,
            "last_loss": loss, "elapsed_s": status.get("elapsed_s"),
            "diverged_step": status.get("diverged_step"), "error": status.get("error")}


def job_outcome(job: Job) -> str:
    """running, or how a finished job ended (completed, diverged, interrupted, failed, ...)."""
    if job.alive:
        return "running"
    if job.kind == "train":
        return run_progress(job.name, alive=False)["state"]
    from .experiments import load_result

    return "completed" if load_result(job.name, job.fast, job.budget) is not None and _finished_all(job) else "failed"


def _finished_all(job: Job) -> bool:
    return all(read_status(run_id).get("status") in FINISHED
               for run_id in experiment_run_ids(job.name, job.fast, job.budget))


def live_loss(run_id: str, polled: list[tuple[int, float]]) -> pd.DataFrame:
    """The loss so far: the stored loss rows, then the (step, loss) points polled from status.json
    since (status.json can be a moment newer than metrics.parquet)."""
    from .store import Run

    metrics = Run(data_root() / run_id).metrics()
    stored = metrics[(metrics.probe == "loss") & (metrics.layer == -1)][["step", "value"]]
    last = int(stored.step.max()) if len(stored) else -1
    recent = pd.DataFrame([p for p in polled if p[0] > last and p[1] is not None], columns=["step", "value"])
    frame = pd.concat([stored, recent], ignore_index=True) if len(recent) else stored
    return frame.dropna().assign(series="training loss").sort_values("step")


@functools.lru_cache(maxsize=64)
def experiment_run_ids(name: str, fast: bool, budget=None) -> tuple[str, ...]:
    from .experiments import get_experiment

    variants = get_experiment(name).variants(fast)
    return tuple(variant.config.run_id for variant in (budget.apply(variants) if budget else variants))


def experiment_progress(name: str, fast: bool = False, budget=None, since: float | None = None) -> dict:
    """How far an experiment is: runs finished of all, and the run training now. An adaptive recipe
    (a bisection) knows only its first round in advance: `later` counts the runs of its later rounds
    started since `since` (the job's launch), and the run training now may be one of them."""
    from .experiments import get_experiment

    adaptive = get_experiment(name).next_round is not None
    run_ids = experiment_run_ids(name, fast, budget)
    statuses = {run_id: read_status(run_id) for run_id in run_ids}
    later = _runs_started_since(since, exclude=set(run_ids)) if adaptive and since is not None else []
    done = sum(statuses[run_id].get("status") in FINISHED for run_id in run_ids)
    statuses.update({run_id: read_status(run_id) for run_id in later})
    current = next((run_id for run_id, s in statuses.items() if s.get("status") == "running"), None)
    return {"done": done, "total": len(run_ids), "fraction": done / len(run_ids) if run_ids else 0.0,
            "adaptive": adaptive, "later": len(later),
            "current": current, "current_progress": run_progress(current) if current else None}


def _runs_started_since(since: float, exclude: set[str]) -> list[str]:
    """Run folders whose status file was created at or after `since` (the store root's dot folders skipped)."""
    found = []
    for folder in data_root().iterdir():
        status = folder / "status.json"
        if folder.name in exclude or folder.name.startswith(".") or not status.exists():
            continue
        if status.stat().st_ctime >= since:
            found.append(folder.name)
    return found
