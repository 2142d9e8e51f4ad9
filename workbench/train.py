"""The training loop: seeded, resumable, with a progress bar, periodic evaluation and probes.

`train(config)` returns the stored Run. An identical config that already finished is returned at
once; one that was interrupted (Ctrl-C, a crash, kill -9) resumes from its last checkpoint. A NaN or
infinite loss stops the run and records it as diverged. One process trains a run at a time (the
run's lock, run_lock.py): a second trainer of the same config waits, then returns the first one's
result. A damaged run (damage.py) is trained again from the start, replacing it. A model too big
for this machine's memory is refused before anything is allocated (memory.py).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from .version import __version__
from .batch_stream import BatchStream, training_loss
from .config import RunConfig
from .errors import ConfigError, DamagedRun
from .evaluate import eval_generator, exact_match, length_curve, length_rows
from .models import model_for_task
from .probes import ProbeContext, probe_names, run_probes
from .memory import check_fits_in_memory
from .run_files import LOCK, SNAPSHOT_WEIGHTS
from .run_lock import run_lock
from .store import FINISHED, Run, atomic_save, atomic_write_json, metrics_frame, run_path
from .tasks import task_for
from .tasks.labels import randomize_labels

PROBE_SEED = 2_000_003
STATUS_INTERVAL_S = 1.0  # how often status.json is refreshed for live progress


def loops_at(config: RunConfig, step: int) -> int:
    """The loops a looped model trains at this step: model.n_layers, or under model.loop_curriculum the
    window's size (at least 1) plus one loop every loop_curriculum steps, up to n_layers."""
    m = config.model
    if not m.loop_curriculum:
        return m.n_layers
    return min(m.n_layers, max(m.loop_loss_window, 1) + step // m.loop_curriculum)


def learning_rate(config: RunConfig, step: int) -> float:
    """Linear warmup, then cosine decay to min_lr_ratio * lr."""
    t = config.train
    if step < t.warmup:
        return t.lr * (step + 1) / t.warmup
    progress = (step - t.warmup) / max(1, t.steps - t.warmup)
    return t.lr * (t.min_lr_ratio + (1 - t.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


@dataclass
class TrainingState:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    data: torch.Generator
    step: int = 0
    loss_window: tuple[int, float] = (0, 0.0)  # steps and summed loss since the last logged loss
    metric_rows: int | None = None  # metrics rows recorded up to the checkpoint (None: an older checkpoint)


def build_state(config: RunConfig, task) -> TrainingState:
    model = model_for_task(config.model, task, seed=config.train.seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.train.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.train.lr, betas=(0.9, config.train.beta2), foreach=True)
    return TrainingState(model, optimizer, torch.Generator().manual_seed(config.train.seed))


# --- checkpoints (safetensors only: no pickles) ---------------------------------------------------
def save_checkpoint(run: Run, state: TrainingState, data_state: torch.Tensor) -> None:
    """data_state: the data generator's state that draws the next step's batch (the generator itself
    has already drawn it: batches are drawn a step ahead, see batch_stream.py)."""
    tensors = {f"model.{k}": v.detach().contiguous() for k, v in state.model.state_dict().items()}
    optim = state.optimizer.state_dict()
    for index, values in optim["state"].items():
        for key, value in values.items():
            tensors[f"optim.{index}.{key}"] = torch.as_tensor(value).contiguous()
    tensors["rng.data"] = data_state
    metadata = {"step": str(state.step), "param_groups": json.dumps(optim["param_groups"]),
                "loss_window": json.dumps(list(state.loss_window)), "metric_rows": str(state.metric_rows)}
    atomic_save(run.path / "checkpoint.safetensors", lambda tmp: save_file(tensors, tmp, metadata=metadata))


def load_checkpoint(run: Run, state: TrainingState) -> None:
    from safetensors import safe_open

    path = run.path / "checkpoint.safetensors"
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
    tensors = load_file(str(path))
    state.model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    optim_state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, index, name = key.split(".", 2)
            optim_state.setdefault(int(index), {})[name] = value
    state.optimizer.load_state_dict({"state": optim_state, "param_groups": json.loads(metadata["param_groups"])})
    state.data.set_state(tensors["rng.data"])
    state.step = int(metadata["step"])
    if "loss_window" in metadata:  # so the resumed run logs the same averaged losses
        window, window_loss = json.loads(metadata["loss_window"])
        state.loss_window = (int(window), float(window_loss))
    if metadata.get("metric_rows", "None") != "None":
        state.metric_rows = int(metadata["metric_rows"])


# --- the loop -------------------------------------------------------------------------------------
def train(config: RunConfig, progress: bool = True, label: str = "", root=None, stop_after: int | None = None,
          say: Callable[[str], None] | None = None) -> Run:
    """Train `config` (or return the stored identical run). Ctrl-C leaves a resumable run.

    root: the store folder (default: store.data_root()). stop_after: stop at the end of
    this step and leave the run resumable (status "interrupted"), with the config and its learning-rate
    schedule unchanged; the canaries of experiments/canary.py use it. say(line): told what happens
    besides training (waiting for another trainer, reusing its result, replacing a damaged run)."""
    say = say or (lambda line: None)
    run = Run(run_path(config.run_id, root))
    if run.finished():
        say(f"run {run.run_id} is in the store already; reusing it")
        return run
    check_fits_in_memory(config)
    with run_lock(run.path, on_wait=lambda: say(_waiting_line(run))):
        damage = run.damage(locked_by_us=True)
        if damage is not None:
            say(f"{damage.file} of run {run.run_id} is damaged ({damage.problem}); "
                "training the run again from the start")
            _clear(run)
        if run.status().get("status") in FINISHED:  # finished by the trainer we waited for
            say(f"run {run.run_id} was trained meanwhile by another process; reusing its result")
            return run
        return _train_locked(config, run, progress, label, stop_after)


def _waiting_line(run: Run) -> str:
    try:
        pid = run.status().get("pid")
    except DamagedRun:
        pid = None
    return (f"run {run.run_id} is being trained by another process" + (f" (pid {pid})" if pid else "")
            + "; waiting for it to finish")


def _clear(run: Run) -> None:
    """Empty a damaged run's folder, all but the lock we hold."""
    for path in run.path.iterdir():
        if path.name == LOCK:
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def _train_locked(config: RunConfig, run: Run, progress: bool, label: str, stop_after: int | None) -> Run:
    status = run.status()
    if config.train.threads:
        torch.set_num_threads(config.train.threads)
    task = task_for(config.task)
    if not task.trainable:
        raise ConfigError("task.name", config.task.name, f"{task.description}; it is not trained here "
                          "(`workbench import-model DIR` makes such runs)")
    state = build_state(config, task)
    rows: list[dict] = []
    if (run.path / "checkpoint.safetensors").exists():
        load_checkpoint(run, state)
        metrics = run.metrics()
        if state.metric_rows is not None:  # metrics are flushed between checkpoints: drop rows written after it
            rows = metrics.iloc[:state.metric_rows].to_dict("records")
        else:
            rows = metrics[metrics.step <= state.step].to_dict("records")
    else:
        run.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(run.path / "config.json", config.to_dict())
    started = time.time()
    elapsed_before = float(status.get("elapsed_s", 0.0)) if rows else 0.0
    loop = _Loop(config, task, state, run, rows, started, elapsed_before, progress, stop_after)
    try:  # "running" is written inside the try, so an interrupt that follows it is always saved
        run.write_status(status="running", run_id=run.run_id, step=state.step, steps=config.train.steps,
                         created=status.get("created") or time.strftime("%Y-%m-%dT%H:%M:%S"), pid=os.getpid(),
                         label=label or status.get("label", ""), versions=versions(), error=None,
                         n_parameters=sum(p.numel() for p in state.model.parameters()))
        with _stop_at_step_end(loop):
            return loop.run()
    except KeyboardInterrupt:
        loop.save(status="interrupted")
        raise
    except Exception as error:
        loop.save(status="failed", error=f"{type(error).__name__}: {error}")
        raise
    finally:
        loop.batches.close()


@contextlib.contextmanager
def _stop_at_step_end(loop: "_Loop"):
    """The first Ctrl-C (or the dashboard's Cancel, a SIGINT too) lets the current step finish and
    stops at its end, where the model, the optimizer and the data stream agree: the checkpoint then
    resumes to exactly the uninterrupted run. An interrupt mid-step would save a step half taken, or
    a batch drawn but not trained on. A second Ctrl-C stops at once."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def request_stop(signum, frame):
        if loop.stop_requested:
            raise KeyboardInterrupt
        loop.stop_requested = True

    previous = signal.signal(signal.SIGINT, request_stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


class _Loop:
    def __init__(self, config, task, state, run, rows, started, elapsed_before, progress, stop_after=None):
        self.config, self.task, self.state, self.run_ = config, task, state, run
        self.rows, self.started, self.elapsed_before = rows, started, elapsed_before
        self.progress = progress
        self.probe_batch = task.sample(config.probes.batch, torch.Generator().manual_seed(PROBE_SEED + config.train.seed),
                                       train=False)
        self.probes = probe_names(config.probes)
        self.last_status = 0.0
        self.flushed_rows = len(rows)  # metrics rows already in metrics.parquet
        self.last_loss = float("nan")
        self.stop_requested = False
        self.stop_after: int | None = stop_after
        self.batches = BatchStream(self.draw, state.data, config.train.length_buckets)

    def draw(self, generator: torch.Generator):
        batch = self.task.sample(self.config.train.batch_size, generator)
        if self.config.task.random_labels:
            batch = randomize_labels(batch, len(self.task.vocab), self.config.train.seed)
        return batch

    def elapsed(self) -> float:
        return self.elapsed_before + time.time() - self.started

    def flush_metrics(self) -> None:
        """Write the metrics rows recorded so far (atomically), so the dashboard's live view reads each
        evaluation and probe as it is produced, not only at checkpoints. Only when there are new rows:
        a loss row arrives every few steps, so this rewrites the file at most about once a second
        (from the status refresh) plus once per evaluation or probe step."""
        if len(self.rows) > self.flushed_rows:
            self.run_.write_metrics(metrics_frame(self.rows))
            self.flushed_rows = len(self.rows)

    def save(self, status: str, **extra) -> None:
        """Persist everything finished so far: metrics, checkpoint, status (in that order)."""
        self.run_.write_metrics(metrics_frame(self.rows))
        self.flushed_rows = self.state.metric_rows = len(self.rows)
        save_checkpoint(self.run_, self.state, self.batches.resume_state())
        self.run_.write_status(status=status, step=self.state.step, elapsed_s=round(self.elapsed(), 3),
                               last_loss=self.last_loss, **extra)

    def record(self, probe: str, value: float, step: int, **keys) -> None:
        self.rows.append({"step": step, "probe": probe, "layer": keys.get("layer", -1),
                          "head": keys.get("head", -1), "length": keys.get("length", -1), "value": float(value)})

    def run(self) -> Run:
        c, state = self.config, self.state
        model, optimizer = state.model, state.optimizer
        model.train()
        bar = tqdm(total=c.train.steps, initial=state.step, disable=not self.progress, desc=f"train {self.run_.run_id}",
                   file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
        window, window_loss = state.loss_window
        log_every = max(1, min(50, c.train.steps // 100))
        while state.step < c.train.steps:
            step = state.step
            if c.probes.every and step % c.probes.every == 0:
                self.probe(step)
            prepared = self.batches.next()
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(c, step)
            if c.model.loop_curriculum:
                model.loops = loops_at(c, step)
            loss = training_loss(model, prepared)
            if not torch.isfinite(loss):
                self.last_loss = loss.item()
                self.record("loss", float("nan"), step)
                self.save(status="diverged", diverged_step=step)
                bar.close()
                return self.run_
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), c.train.grad_clip if c.train.grad_clip > 0 else math.inf)
            optimizer.step()
            state.step += 1
            window_loss, window = window_loss + loss.item(), window + 1
            if window == log_every or state.step == c.train.steps:
                self.last_loss = window_loss / window
                self.record("loss", self.last_loss, state.step)
                self.record("grad_norm", float(grad_norm), state.step)
                self.record("lr", learning_rate(c, step), state.step)
                window, window_loss = 0, 0.0
                bar.set_postfix(loss=f"{self.last_loss:.4f}", refresh=False)
            state.loss_window = (window, window_loss)
            bar.update(1)
            if c.train.eval_every and state.step % c.train.eval_every == 0 and state.step < c.train.steps:
                self.evaluate(state.step)
            if c.train.checkpoint_every and state.step % c.train.checkpoint_every == 0 and state.step < c.train.steps:
                self.save(status="running")
            elif time.time() - self.last_status > STATUS_INTERVAL_S:
                self.last_status = time.time()
                self.flush_metrics()
                self.run_.write_status(step=state.step, elapsed_s=round(self.elapsed(), 3), last_loss=self.last_loss)
            if self.stop_requested:
                bar.close()
                raise KeyboardInterrupt
            if self.stop_after is not None and self.stop_after <= state.step < c.train.steps:
                bar.close()
                self.save(status="interrupted")
                return self.run_
        bar.close()
        if c.model.loop_curriculum:
            model.loops = c.model.n_layers  # a finished looped model is read at its full loops
        return self.finish()

    def probe(self, step: int) -> None:
        snapshot_every = self.config.probes.snapshot_every or self.config.probes.every
        snapshot = self.config.probes.snapshots and step % snapshot_every == 0
        examples = self.config.probes.snapshot_examples if snapshot else 0
        result = run_probes(self.state.model, self.probe_batch, self.probes, examples,
                            context=ProbeContext(self.task, self.config), arrays=snapshot)
        self.rows += [{**r, "step": step} for r in result.rows]
        if result.arrays:
            self.save_snapshot(step, result.arrays)
        if self.config.probes.weights and step % snapshot_every == 0:
            save_snapshot_weights(self.run_, step, self.state.model)
        self.flush_metrics()

    def save_snapshot(self, step: int, arrays: dict) -> None:
        save_snapshot(self.run_, step, arrays, self.probe_batch.tokens, self.task.vocab)

    def evaluate(self, step: int) -> None:
        accuracy, loss = exact_match(self.state.model, self.task, self.config.train.eval_samples,
                                     eval_generator(self.config.train.seed))
        self.record("exact_match", accuracy, step)
        self.record("eval_loss", loss, step)
        self.flush_metrics()

    def finish(self) -> Run:
        c, step = self.config, self.state.step
        if c.probes.every:
            self.probe(step)
        self.evaluate(step)
        if c.task.eval_lengths:
            curve = length_curve(self.state.model, self.task, list(c.task.eval_lengths), c.train.eval_samples, c.train.seed)
            self.rows += length_rows(curve, step)
        weights = {k: v.detach().contiguous() for k, v in self.state.model.state_dict().items()}
        atomic_save(self.run_.path / "model.safetensors", lambda tmp: save_file(weights, tmp))
        self.save(status="completed")
        (self.run_.path / "checkpoint.safetensors").unlink(missing_ok=True)
        return self.run_


def save_snapshot(run: Run, step: int, arrays: dict, tokens: torch.Tensor, vocab) -> None:
    """snapshots/step_N.safetensors: the probes' arrays with the probe batch's first tokens (PAD left
    out of the decoded ones); each array's first dimension is the example."""
    n = next(iter(arrays.values())).shape[0]
    decoded = [[vocab.symbols[int(t)] for t in tokens[i] if int(t) != 0] for i in range(n)]
    arrays = {**arrays, "tokens": tokens[:n].contiguous()}
    metadata = {"tokens": json.dumps(decoded), "step": json.dumps(step)}
    path = run.path / "snapshots" / f"step_{step:07d}.safetensors"
    atomic_save(path, lambda tmp: save_file(arrays, tmp, metadata=metadata))


def save_snapshot_weights(run: Run, step: int, model) -> None:
    """snapshots/weights/step_N.safetensors: the model's weights at step N, as model.safetensors holds them."""
    weights = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    atomic_save(run.path / SNAPSHOT_WEIGHTS / f"step_{step:07d}.safetensors", lambda tmp: save_file(weights, tmp))


def versions() -> dict:
    return {"workbench": __version__, "torch": torch.__version__, "python": platform.python_version()}
