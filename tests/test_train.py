"""Training: stores a complete run, returns identical configs at once, records divergence,
and resumes after an interruption to exactly the run it would have been."""
import pandas as pd
import pytest
import torch

from workbench.config import RunConfig
from workbench.store import open_run
from workbench.train import train

TINY = ["task.max_digits=3", "model.n_layers=1", "model.d_model=16", "model.n_heads=2", "train.steps=24",
        "train.batch_size=16", "train.warmup=4", "train.eval_every=12", "train.checkpoint_every=8",
        "train.eval_samples=32", "probes.every=8", "probes.batch=4", "task.eval_lengths=2,5"]


def tiny(*extra) -> RunConfig:
    return RunConfig.load(None, TINY + list(extra))


def test_a_run_is_stored_complete(data_dir):
    run = train(tiny(), progress=False)
    assert run.status()["status"] == "completed"
    assert {"config.json", "status.json", "metrics.parquet", "model.safetensors"} <= {p.name for p in run.path.iterdir()}
    assert not (run.path / "checkpoint.safetensors").exists()
    metrics = run.metrics()
    assert {"loss", "entropy", "mlp_nonzero_fraction", "exact_match"} <= set(metrics.probe)
    assert set(metrics[metrics.probe == "exact_match"].length) >= {2, 5}
    assert run.snapshot_steps() == [0, 8, 16, 24]
    arrays, meta = run.snapshot(8)
    assert arrays["pattern.0"].shape[1] == 2 and len(meta["tokens"]) == 1


def test_identical_config_returns_the_stored_run(data_dir, monkeypatch):
    first = train(tiny(), progress=False)
    monkeypatch.setattr("workbench.train._Loop.run", lambda self: pytest.fail("retrained a finished run"))
    again = train(tiny(), progress=False)
    assert again.run_id == first.run_id


def test_same_seed_gives_the_same_metrics(data_dir, tmp_path):
    a = train(tiny(), progress=False).metrics()
    b = train(tiny(), progress=False, root=tmp_path / "other").metrics()
    assert a.equals(b)


def test_stop_after_keeps_the_schedule_and_resumes_to_the_uninterrupted_run(data_dir, tmp_path):
    """What the canaries rely on: the first steps of a run stopped early are the first steps of the full
    run (its learning-rate schedule is the full run's), and resuming gives the full run exactly."""
    reference = train(tiny(), progress=False, root=tmp_path / "reference").metrics()
    stopped = train(tiny(), progress=False, stop_after=10)
    assert stopped.status()["status"] == "interrupted" and stopped.status()["step"] == 10
    early = stopped.metrics()
    assert early.equals(reference[reference.step <= 10].reset_index(drop=True))
    resumed = train(tiny(), progress=False).metrics()
    assert resumed.equals(reference)


def test_nan_loss_is_recorded_as_diverged(data_dir, monkeypatch):
    import workbench.train as training

    real = training.training_loss
    calls = {"n": 0}

    def poisoned(*args, **kwargs):
        calls["n"] += 1
        value = real(*args, **kwargs)
        return value * float("nan") if calls["n"] == 10 else value

    monkeypatch.setattr(training, "training_loss", poisoned)
    run = train(tiny(), progress=False)
    status = run.status()
    assert status["status"] == "diverged" and status["diverged_step"] == 9
    assert open_run(run.run_id).metrics().step.max() <= 9


def test_interrupted_run_resumes_to_the_same_result(data_dir, tmp_path, monkeypatch):
    reference = train(tiny(), progress=False, root=tmp_path / "reference").metrics()

    import workbench.tasks.addition as addition

    real_sample = addition.Addition._sample
    calls = {"n": 0}

    def interrupt_once(self, n, generator, length, train):
        if train:
            calls["n"] += 1
            if calls["n"] == 13:
                raise KeyboardInterrupt
        return real_sample(self, n, generator, length, train)

    monkeypatch.setattr(addition.Addition, "_sample", interrupt_once)
    with pytest.raises(KeyboardInterrupt):
        train(tiny(), progress=False)
    run = open_run(tiny().run_id)
    assert run.status()["status"] == "interrupted"
    assert (run.path / "checkpoint.safetensors").exists()
    monkeypatch.setattr(addition.Addition, "_sample", real_sample)
    resumed = train(tiny(), progress=False)
    assert resumed.status()["status"] == "completed"
    torch.testing.assert_close(torch.tensor(resumed.metrics().value.values), torch.tensor(reference.value.values))


def test_an_interrupt_right_after_the_run_says_running_is_recorded(data_dir, monkeypatch):
    # The dashboard's Cancel fires as soon as status.json says "running"; the trainer must already
    # be ready to save by then, or the run stays "running" with no process behind it.
    from workbench.store import Run

    real_write = Run.write_status

    def interrupt_after_running(self, **changes):
        status = real_write(self, **changes)
        if changes.get("status") == "running" and changes.get("step") == 0:
            raise KeyboardInterrupt
        return status

    monkeypatch.setattr(Run, "write_status", interrupt_after_running)
    with pytest.raises(KeyboardInterrupt):
        train(tiny(), progress=False)
    run = open_run(tiny().run_id)
    assert run.status()["status"] == "interrupted"
    assert (run.path / "checkpoint.safetensors").exists()


def test_ctrl_c_mid_step_stops_at_the_step_end_and_resumes_to_the_same_result(data_dir, tmp_path, monkeypatch):
    """A SIGINT arriving between the forward and the backward pass (the batch drawn, the step not
    taken) must not cost that batch: the run stops at the end of the step and resumes exactly."""
    import os
    import signal

    import workbench.train as training

    # SIG_IGN when make test itself runs in the background (nohup, `&` in a script): the trainer must
    # hand back whatever handler it found, not assume Python's default
    handler_before = signal.getsignal(signal.SIGINT)
    # 300 steps log the loss averaged over windows of 3 steps; the interrupt falls inside a window
    config = tiny("train.steps=300", "train.eval_every=100", "train.checkpoint_every=100", "probes.every=100")
    reference = train(config, progress=False, root=tmp_path / "reference").metrics()
    real_loss = training.training_loss
    calls = {"n": 0}

    def signal_mid_step(*args, **kwargs):
        if torch.is_grad_enabled():
            calls["n"] += 1
            if calls["n"] == 13:
                os.kill(os.getpid(), signal.SIGINT)
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(training, "training_loss", signal_mid_step)
    with pytest.raises(KeyboardInterrupt):
        train(config, progress=False)
    run = open_run(config.run_id)
    assert run.status()["status"] == "interrupted" and run.status()["step"] == 13
    monkeypatch.setattr(training, "training_loss", real_loss)
    resumed = train(config, progress=False)
    assert resumed.status()["status"] == "completed"
    torch.testing.assert_close(torch.tensor(resumed.metrics().value.values), torch.tensor(reference.value.values))
    assert signal.getsignal(signal.SIGINT) is handler_before  # the trainer's handler is gone


def test_each_evaluation_reaches_the_store_while_the_run_trains(data_dir, monkeypatch):
    """The live view reads metrics.parquet: an evaluation's exact match is there before the next
    checkpoint (checkpoints here only every 100 steps, so only the per-evaluation writes can carry it)."""
    from workbench.store import Run

    written = []
    original = Run.write_metrics
    monkeypatch.setattr(Run, "write_metrics", lambda self, frame: (written.append(frame.copy()), original(self, frame))[1])
    train(tiny("train.checkpoint_every=100"), progress=False)
    at_12 = [f for f in written if ((f.probe == "exact_match") & (f.step == 12)).any()]
    assert at_12 and at_12[0].step.max() <= 16  # written at step 12's evaluation (the probe at 16 at most), not at the end


def test_rows_flushed_after_the_checkpoint_are_not_kept_twice_on_resume(data_dir, tmp_path):
    """A run killed between checkpoints leaves metrics.parquet with rows newer than its checkpoint;
    resuming keeps the rows up to the checkpoint only, so the run ends as if never stopped."""
    reference = train(tiny(), progress=False, root=tmp_path / "reference").metrics()
    stopped = train(tiny(), progress=False, stop_after=8)
    stale = stopped.metrics()
    stopped.write_metrics(pd.concat([stale, stale.tail(3).assign(step=9)], ignore_index=True))
    assert train(tiny(), progress=False).metrics().equals(reference)
