"""Train a sweep's runs as Ray tasks, on a local Ray instance or on a cluster.

One run is one Ray task with as many CPUs as the run's torch threads (1 by default), so a cluster
of N cores trains N runs at once. Every task writes into the same run store (the driver's
WORKBENCH_DATA, which must be a path every node shares), and a run is the same config trained by
the same code, so its id and metrics are those of the same run trained locally, bit for bit on
the same machine and software.

Faults: a worker that dies mid-run (kill -9, a node that leaves) makes Ray run the task again,
up to TRIAL_RETRIES times; the retried trainer finds the run's last checkpoint in the store and
resumes from it, so nothing finished is lost and the metrics equal an undisturbed run's. Ctrl-C on
the driver cancels the tasks, which Ray delivers to each trainer as a KeyboardInterrupt: the
trainer stops at the end of its step and saves a resumable run, as Ctrl-C in a terminal would.

Connecting: `address` (or RAY_ADDRESS) names a running cluster; without one, a Ray instance is
started for this sweep with `workers` CPUs (default: this machine's cores) and stopped after it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Callable

from .config import RunConfig
from .errors import ConfigError, SweepFailed
from .steps_bar import StepsBar
from .store import Run, run_path

TRIAL_RETRIES = 3  # times Ray reruns a trial whose worker died; each rerun resumes the run
CANCEL_GRACE_S = 120  # after Ctrl-C: how long the trainers get to save their runs
POLL_S = 2.0  # the progress bar's refresh


def train_trial(config_dict: dict, label: str, root: str) -> str:
    """The body of one Ray task: train (or resume, or fetch) one run into the shared store."""
    import torch

    from .train import train

    config = RunConfig.from_dict(config_dict)
    torch.set_num_threads(max(1, config.train.threads))
    return train(config, progress=False, label=label, root=Path(root)).run_id


def connect(address: str | None, workers: int | None) -> bool:
    """Connect to the cluster at `address` (or RAY_ADDRESS), else start a local instance; True when
    this call started (or joined) Ray and so must shut it down."""
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no reports to the network
    address = address or os.environ.get("RAY_ADDRESS") or None
    quiet = {"logging_level": "WARNING", "log_to_driver": False, "configure_logging": True}
    if address:
        _check_reachable(address)
    try:
        if address:
            ray.init(address=address, **quiet)
        else:
            # The dashboard stays off: its HTTP server is not needed and would be one more open port
            ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError("--ray-address", address or "(local instance)", f"Ray could not start: {first_line}")
    return True


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail at once on a host:port where nothing listens: Ray itself retries for minutes."""
    import socket

    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return  # "auto", "ray://...": Ray's own forms, left to Ray
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as error:
        raise ConfigError("--ray-address", address,
                          f"no Ray cluster answers there ({error.strerror or error}); start one with "
                          "`ray start --head` or leave the address out for a local instance")


def train_on_ray(jobs: list[tuple[RunConfig, str]], todo: list[int], runs: list, root: Path,
                 workers: int | None = None, address: str | None = None, progress: bool = True,
                 on_done: Callable[[int, Run], None] | None = None) -> int:
    """Train jobs[i] for every i in todo as Ray tasks, filling runs[i]; returns the cluster's CPUs
    used at once (at most one per run)."""
    import ray

    started_here = connect(address, workers)
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        trial = ray.remote(train_trial)
        refs = {}
        for index in todo:
            config, label = jobs[index]
            options = {"num_cpus": max(1, config.train.threads), "max_retries": TRIAL_RETRIES,
                       "retry_exceptions": False, "name": f"workbench train {config.run_id[:12]}"}
            refs[trial.options(**options).remote(config.to_dict(), label, str(root))] = index
        used = max(1, min(cpus, len(todo)))
        where = f" on Ray ({address or os.environ.get('RAY_ADDRESS') or 'local instance'})"
        bar = StepsBar(jobs, todo, root, used, where=where, progress=progress)
        try:
            with _interrupt_requests() as interrupted:
                failures = _collect(refs, runs, root, bar, on_done, interrupted)
        except KeyboardInterrupt:
            _cancel(list(refs))
            raise
        finally:
            bar.close()
        if failures:
            raise SweepFailed(_failure_table(jobs, todo, runs, failures))
        return used
    finally:
        if started_here:
            ray.shutdown()


@contextlib.contextmanager
def _interrupt_requests():
    """Ctrl-C while the driver waits: the first sets a flag that the waiting loop checks between
    polls, a second stops at once. A KeyboardInterrupt raised inside Ray's own wait (C++ underneath)
    can be lost there; a flag cannot."""
    requested = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield requested  # signal handlers can only be set from the main thread
        return

    def request(signum, frame):
        if requested.is_set():
            raise KeyboardInterrupt
        requested.set()

    previous = signal.signal(signal.SIGINT, request)
    try:
        yield requested
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


def _collect(refs: dict, runs: list, root: Path, bar, on_done, interrupted: threading.Event) -> dict[int, str]:
    """Wait for every trial, filling runs as they finish; a trial that raised is kept as its reason
    so that the others still finish. A Ctrl-C (interrupted) raises KeyboardInterrupt here."""
    import ray

    failures: dict[int, str] = {}
    pending = list(refs)
    while pending:
        if interrupted.is_set():
            raise KeyboardInterrupt
        done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
        for ref in done:
            index = refs[ref]
            try:
                runs[index] = Run(run_path(ray.get(ref), root))
            except ray.exceptions.RayError as error:
                failures[index] = _reason(error)
                continue
            if on_done:
                on_done(index, runs[index])
        bar.refresh()
    return failures


def _cancel(refs: list) -> None:
    """Ctrl-C: every unfinished trial gets a KeyboardInterrupt and saves its run before it stops."""
    import ray

    for ref in refs:
        ray.cancel(ref)
    ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S)


def _reason(error: Exception) -> str:
    """The trial's own exception in one line, without Ray's wrapping traceback."""
    cause = getattr(error, "cause", None)
    if cause is not None:
        return f"{type(cause).__name__}: {cause}".splitlines()[0]
    return f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"


def _failure_table(jobs, todo, runs, failures: dict[int, str]) -> str:
    lines = [f"{len(failures)} of {len(todo)} trials failed:"]
    for index in todo:
        config, label = jobs[index]
        state = f"failed: {failures[index]}" if index in failures else "completed"
        lines.append(f"  {config.run_id[:12]}  {label or '-':30s}  {state}")
    return "\n".join(lines)
