"""Runs trained side by side (workbench.parallel) are exactly the runs trained alone."""
from __future__ import annotations

import sys
import types

import pandas as pd
import pytest

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.parallel import default_workers, train_many
from workbench.store import run_path

TINY = ["task.name=copy", "task.max_length=4", "model.n_layers=1", "model.d_model=16", "train.steps=6",
        "train.batch_size=8", "train.eval_every=3", "train.eval_samples=8", "train.checkpoint_every=0",
        "probes.every=3", "probes.batch=4"]


def _configs(seeds):
    return [RunConfig.load(None, [*TINY, f"train.seed={seed}"]) for seed in seeds]


def test_parallel_runs_match_runs_trained_one_by_one(data_dir, tmp_path, monkeypatch):
    configs = _configs([0, 1, 2])
    done = []
    together = train_many([(c, f"seed {c.train.seed}") for c in configs], workers=2, progress=False,
                          on_done=lambda index, run: done.append(index))
    assert [run.run_id for run in together] == [c.run_id for c in configs]  # order kept
    assert sorted(done) == [0, 1, 2]
    assert all(run.status()["status"] == "completed" for run in together)
    assert together[0].status()["label"] == "seed 0"

    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path / "alone"))
    alone = train_many([(c, "") for c in configs], workers=1, progress=False)
    for a, b in zip(together, alone):
        assert b.path != a.path
        pd.testing.assert_frame_equal(a.metrics(), b.metrics())


def test_finished_runs_are_fetched_not_retrained(data_dir):
    config = _configs([5])[0]
    first = train_many([(config, "")], workers=1, progress=False)[0]
    stamp = (run_path(config.run_id) / "status.json").stat().st_mtime_ns
    again = train_many([(config, ""), (config, "")], workers=2, progress=False)
    assert [run.run_id for run in again] == [first.run_id] * 2
    assert (run_path(config.run_id) / "status.json").stat().st_mtime_ns == stamp


def test_workers_setting(monkeypatch):
    monkeypatch.setenv("WORKBENCH_WORKERS", "3")
    assert default_workers(10) == 3
    assert default_workers(2) == 2  # never more than the runs left
    monkeypatch.setenv("WORKBENCH_WORKERS", "two")
    with pytest.raises(ConfigError, match="WORKBENCH_WORKERS.*two"):
        default_workers(4)


def test_children_do_not_rerun_a_dashboard_page_that_is_main(data_dir, tmp_path, monkeypatch):
    # Streamlit (and its AppTest) run a page as __main__; a spawned child would run it again
    page = tmp_path / "page.py"
    page.write_text("raise SystemExit('the page ran inside a worker')\n")
    fake_main = types.ModuleType("__main__")
    fake_main.__file__ = str(page)
    fake_main.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", fake_main)
    runs = train_many([(c, "") for c in _configs([7, 8])], workers=2, progress=False)
    assert runs.workers == 2
    assert all(run.status()["status"] == "completed" for run in runs)
    assert sys.modules["__main__"] is fake_main  # put back afterwards
