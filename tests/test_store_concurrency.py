"""Trainers that meet: two `workbench train` of one config into one store train it once, a trainer
killed with kill -9 leaves no stale lock, and resuming after kill -9 gives the uninterrupted run.

No sleep stands for an assertion about time: the tests poll for a condition, with a generous limit."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.analysis import load_model
from workbench.config import RunConfig
from workbench.run_lock import is_locked, run_lock
from workbench.store import Run, open_run
from workbench.train import train

REPO_ROOT = Path(__file__).resolve().parent.parent
TINY = ["task.max_digits=3", "model.n_layers=1", "model.d_model=16", "model.n_heads=2", "train.steps=40",
        "train.batch_size=16", "train.eval_samples=32", "probes.every=10", "probes.batch=4"]
LONGER = ["task.max_digits=3", "model.n_layers=1", "model.d_model=16", "model.n_heads=2", "train.steps=400",
          "train.batch_size=16", "train.eval_samples=32", "train.eval_every=100", "train.checkpoint_every=20",
          "probes.every=50", "probes.batch=4"]
PATIENCE_S = 240  # the most any poll waits (a busy CI machine); tests normally pass in seconds


def _env(data_dir: Path) -> dict:
    paths = [str(REPO_ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return {**os.environ, "WORKBENCH_DATA": str(data_dir), "PYTHONPATH": os.pathsep.join(paths)}


def _trainer(data_dir: Path, overrides: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as handle:
        return subprocess.Popen([sys.executable, "-m", "workbench", "train", *overrides, "--quiet"],
                                cwd=REPO_ROOT, env=_env(data_dir), stdout=handle, stderr=handle)


def _poll(condition, what: str):
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"gave up waiting for {what}")


def _no_stray_files(folder: Path) -> None:
    assert not [p.name for p in folder.rglob(".*")], "temporary files left behind"


def test_two_trainers_of_one_config_train_it_once(data_dir, tmp_path):
    config = RunConfig.load(None, TINY)
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    trainers = [_trainer(data_dir, TINY, log) for log in logs]
    for trainer in trainers:
        assert trainer.wait(timeout=PATIENCE_S) == 0
    outputs = [log.read_text() for log in logs]
    assert all(out.strip().splitlines()[-1] == config.run_id for out in outputs), outputs
    reused = ["reusing" in out for out in outputs]
    assert sorted(reused) == [False, True], outputs  # one trained, the other reused its result
    trainer_pid = trainers[reused.index(False)].pid
    assert [p.name for p in data_dir.iterdir()] == [config.run_id]
    run = open_run(config.run_id)  # checks every file
    assert run.status()["status"] == "completed" and run.status()["pid"] == trainer_pid
    assert run.metrics().equals(train(config, progress=False, root=tmp_path / "alone").metrics())  # trained once
    load_model(run)
    _no_stray_files(run.path)


def test_a_second_trainer_waits_for_the_first_then_reuses_its_result(data_dir, tmp_path):
    """Deterministic: the test itself is the first trainer, holding the lock until the second says it waits."""
    config = RunConfig.load(None, TINY)
    finished = train(config, progress=False, root=tmp_path / "elsewhere")  # the result the first trainer leaves
    folder = data_dir / config.run_id
    log = tmp_path / "second.log"
    with run_lock(folder):
        second = _trainer(data_dir, TINY, log)
        _poll(lambda: "waiting" in log.read_text(), "the second trainer to wait")
        assert second.poll() is None
        for path in finished.path.iterdir():
            (shutil.copytree if path.is_dir() else shutil.copy2)(path, folder / path.name)
    assert second.wait(timeout=PATIENCE_S) == 0
    output = log.read_text()
    assert "reusing" in output and output.strip().splitlines()[-1] == config.run_id
    assert Run(folder).metrics().equals(finished.metrics())  # nothing retrained, nothing appended


def test_kill_9_leaves_no_stale_lock(data_dir):
    folder = data_dir / "some-run"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from workbench.run_lock import run_lock\n"
                               "with run_lock(Path(sys.argv[1])):\n    time.sleep(600)", str(folder)],
                              env=_env(data_dir), cwd=REPO_ROOT)
    try:
        _poll(lambda: is_locked(folder), "the child to take the lock")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=PATIENCE_S)
    assert not is_locked(folder)
    with run_lock(folder, on_wait=lambda: pytest.fail("a dead process still holds the lock")):
        pass


def test_kill_9_during_training_then_resume_gives_the_uninterrupted_run(data_dir, tmp_path):
    config = RunConfig.load(None, LONGER)
    reference = train(config, progress=False, root=tmp_path / "reference").metrics()
    folder = data_dir / config.run_id
    trainer = _trainer(data_dir, LONGER, tmp_path / "killed.log")

    def checkpointed_midway():
        status = Run(folder).status() if (folder / "status.json").exists() else {}
        return (folder / "checkpoint.safetensors").exists() and status.get("step", 0) >= 60
    try:
        _poll(checkpointed_midway, "a checkpoint midway")
    finally:
        trainer.send_signal(signal.SIGKILL)
        trainer.wait(timeout=PATIENCE_S)
    status = Run(folder).status()
    assert status["status"] == "running" and status["step"] < config.train.steps  # killed mid-run
    resumed = train(config, progress=False)
    assert resumed.status()["status"] == "completed"
    assert resumed.metrics().equals(reference)
